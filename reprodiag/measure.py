"""Run a command as a child process and measure it: wall time, CPU time and peak memory of that child.

Benchmarks time the commands users run (``reprodiag score …``), each in a fresh process, so a stage's
peak RSS is its own and not the benchmark driver's. ``os.wait4`` gives the child's own resource usage.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    """``wall_s``: seconds from start to exit; ``cpu_s``: user + system CPU seconds of the child;
    ``peak_rss_mb``: its maximum resident set size (MiB); ``rc``: exit status; ``output``: the
    last 4,000 characters of stdout and stderr together."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    rc: int
    output: str


def reprodiag_argv(*args: str) -> list[str]:
    """argv that runs this installation's ``reprodiag`` CLI with ``args``."""
    return [sys.executable, "-m", "reprodiag", *args]


def run_measured(argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> Measured:
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"reprodiag-measure-{os.getpid()}-{time.monotonic_ns()}.log"
    with out_path.open("w+b") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")[-4000:]
    out_path.unlink(missing_ok=True)
    rss_kb = usage.ru_maxrss if sys.platform != "darwin" else usage.ru_maxrss / 1024
    return Measured(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, peak_rss_mb=rss_kb / 1024,
                    rc=proc.returncode, output=text)
