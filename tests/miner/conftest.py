"""Fixtures for the miner tests: a small synthetic corpus and fast retry settings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from miner.graphql_client import ClientSettings
from miner.synthetic import Corpus, synthetic_corpus
from reprodiag.config import Secret
from reprodiag.schema import Comment, Thread

FAST = ClientSettings(concurrency=4, floor=0, max_attempts=8, backoff_s=0.01, backoff_max_s=0.05,
                      secondary_min_wait_s=0.05, timeout_s=20)
TOKENS = ["tok-alpha-123", "tok-beta-456"]
SECRETS = [Secret(t, f"token #{i}") for i, t in enumerate(TOKENS, start=1)]


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    """3 repositories, 160 threads, with 2 threads over 150 comments and discussions with replies."""
    return synthetic_corpus(160, 3, seed=3, big_threads=2, discussion_share=0.15)


def odd_threads() -> list[Thread]:
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Thread(repo="odd/bodies", number=1, kind="issue", url="https://github.com/odd/bodies/issues/1", state="open", created_at=t0, updated_at=t0, body=None,
               title=None, comments=[Comment(id="IC_null", body=None, created_at=t0)]),
        Thread(repo="odd/bodies", number=2, kind="issue", url="https://github.com/odd/bodies/issues/2", state="closed", created_at=t0, updated_at=t0,
               body="x" * 200_000, title="huge", comments=[Comment(id="IC_huge", body="y" * 200_000, created_at=t0)]),
        Thread(repo="odd/bodies", number=3, kind="issue", url="https://github.com/odd/bodies/issues/3", state="open", created_at=t0, updated_at=t0,
               title="复现 指标对不上 \u202e rtl \U0001f600 \u0000 nul", body="zero\u200bwidth \ud7ff e\u0301 \t\r\n",
               comments=[Comment(id="IC_uni", body="🙂 ‮ \\u0000 \"quotes\" `code` 复现", created_at=t0)]),
    ]
