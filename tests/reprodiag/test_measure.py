"""Measuring a child process: its own peak memory, CPU and exit status."""

from __future__ import annotations

import sys

from reprodiag.measure import run_measured

_ALLOC = "x = bytearray({mb} * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\nimport time; time.sleep(0.3)\n"


def test_peak_is_the_childs_own_not_what_it_shared_with_the_parent() -> None:
    ballast = bytearray(400 * 2**20)  # touched: resident in this process, shared with a forked child
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    small = run_measured([sys.executable, "-c", _ALLOC.format(mb=20)])
    big = run_measured([sys.executable, "-c", _ALLOC.format(mb=220)])
    assert small.rc == 0 and big.rc == 0
    assert small.peak_rss_mb < 200, small.peak_rss_mb
    assert big.peak_rss_mb - small.peak_rss_mb > 150
    assert big.cpu_s > 0 and big.wall_s >= 0.3
    del ballast


def test_exit_status_and_output_are_kept() -> None:
    m = run_measured([sys.executable, "-c", "import sys; print('hello'); sys.exit(3)"])
    assert m.rc == 3 and "hello" in m.output
