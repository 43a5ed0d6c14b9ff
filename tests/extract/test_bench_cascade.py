"""bench cascade: the cost arithmetic by hand, and the bench's figures on a small crawl-like corpus."""

from __future__ import annotations

import pytest

from extract.bench_cascade import cost_per_1000, run_bench_cascade


def test_cost_per_1000_threads_by_hand() -> None:
    # gpt-5-mini: $0.25 in / $2.00 out per million tokens; cached input at 10%
    c = cost_per_1000(0.5, prefix=2000, thread_tokens=300, output_tokens=400, model="gpt-5-mini")
    assert c is not None
    assert c["plain"] == pytest.approx(500 * (2300 * 0.25 + 400 * 2.0) / 1e6)
    assert c["cached"] == pytest.approx(500 * ((200 + 300) * 0.25 + 400 * 2.0) / 1e6)
    assert c["batch"] == pytest.approx(c["plain"] / 2) and c["cached_batch"] == pytest.approx(c["cached"] / 2)
    assert cost_per_1000(0.5, 1, 1, 1, "a-model-without-a-price") is None


def test_bench_cascade_reports_reach_savings_and_cost() -> None:
    rep = run_bench_cascade(threads=600, cv=False)
    notes = "\n".join(rep.notes)
    assert "test (200 threads, 136 reproductions): 0.993 of the reproductions reach the LLM" in notes
    assert "bench pipeline corpus (600 threads" in notes
    assert rep.counts["pipeline_threads"] == 600 and 0 < rep.counts["pipeline_sent"] < 600
    assert "gpt-5-mini: $" in notes and "with prompt caching" in notes and "Batch API" in notes
    assert "recorded answers" in notes
