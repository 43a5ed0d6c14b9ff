"""``reprodiag bench sandbox`` reports a median per usable backend (figures are printed, never asserted)."""

from __future__ import annotations

from sandbox.backends.bwrap import bwrap_status
from sandbox.bench import run_bench


def test_bench_reports_each_usable_backend() -> None:
    r = run_bench(repeats=2)
    assert r.stage == "bench-sandbox"
    assert {"plain_median_us", "local_median_us", "local_overhead_us"} <= set(r.counts)
    assert ("bwrap_median_us" in r.counts) == bwrap_status()[0]
    assert any("median" in n and "ms" in n for n in r.notes)
