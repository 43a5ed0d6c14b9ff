from __future__ import annotations

import json

from miner.bench import run_bench


def test_bench_small_reports_figures_and_no_missing_comments() -> None:
    rep = run_bench(threads=120, latency_ms=0, repeats=1)
    assert rep.counts["missing_comments"] == 0 and rep.counts["missing_threads"] == 0
    assert rep.counts["graphql_points"] > 0 and rep.counts["rest_requests"] > rep.counts["graphql_points"]
    assert any("threads per GraphQL point" in n for n in rep.notes)


def test_bench_resume_kills_resumes_and_checks_the_threads(cli) -> None:  # noqa: ANN001
    proc = cli("-q", "bench", "resume", "--threads", "400", "--repeats", "1", "--latency-ms", "100")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("{")))
    c = doc["counts"]
    assert c["repeats"] == 1 and c["mismatched"] == 0 and c["kills_too_late"] == 0
    assert c["fresh_points_median"] > 0 and c["resumed_points_max"] > 0 and c["timeouts_first_points_max"] > 0
    assert any("resumed / fresh points" in n for n in doc["notes"])
