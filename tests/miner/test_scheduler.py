"""Pipelined dispatch: several tokens carry more queries at once, at a bounded point cost."""

from __future__ import annotations

from dataclasses import replace

import pytest

from miner.fake_github import FakeGitHubThread
from miner.synthetic import Corpus, synthetic_corpus
from reprodiag.store import Store
from tests.miner.conftest import FAST, SECRETS, TOKENS
from tests.miner.test_sync import assert_same_corpus, mine


@pytest.fixture(scope="module")
def wide() -> Corpus:
    """6 repositories, 900 threads: enough follow-ups for a dozen full queries."""
    return synthetic_corpus(900, 6, seed=11, big_threads=3, discussion_share=0.1)


def _mine(tmp_path, corpus: Corpus, name: str, *, per_token: int, tokens: int) -> tuple[Store, dict]:  # noqa: ANN001
    store = Store(tmp_path / name)
    with FakeGitHubThread(corpus.threads, corpus.repos_meta, tokens=TOKENS, latency_ms=60) as srv:
        report = mine(store, srv.url, list(corpus.repos_meta), settings=replace(FAST, concurrency=per_token),
                      tokens=SECRETS[:tokens])
        stats = srv.state.stats_doc()
    assert report.counts["failed"] == 0
    return store, stats


def test_tokens_multiply_the_queries_in_flight_at_a_bounded_point_cost(tmp_path, wide: Corpus) -> None:  # noqa: ANN001
    seq, seq_stats = _mine(tmp_path, wide, "seq", per_token=1, tokens=1)
    par, par_stats = _mine(tmp_path, wide, "par", per_token=3, tokens=2)
    assert_same_corpus(seq, wide.threads)
    assert_same_corpus(par, wide.threads)
    assert seq_stats["max_inflight"] == 1
    # 2 tokens x 3 per token: more than one token alone may carry, never more than 3 on one token
    assert 3 < par_stats["max_inflight"] <= 6
    assert max(par_stats["max_inflight_per_token"].values()) <= 3
    # pipelining sends a few queries that are not full (cold start, tail); each costs at most one point more
    assert par_stats["total_points"] <= seq_stats["total_points"] * 1.2 + 2, (par_stats, seq_stats)
    seq.close()
    par.close()
