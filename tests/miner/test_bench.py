from __future__ import annotations

from miner.bench import run_bench


def test_bench_small_reports_figures_and_no_missing_comments() -> None:
    rep = run_bench(threads=120, latency_ms=0, repeats=1)
    assert rep.counts["missing_comments"] == 0 and rep.counts["missing_threads"] == 0
    assert rep.counts["graphql_points"] > 0 and rep.counts["rest_requests"] > rep.counts["graphql_points"]
    assert any("threads per GraphQL point" in n for n in rep.notes)
