"""Record factories for the scoring tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import polars as pl
import pytest

from reprodiag.schema import Hypothesis, Participant, Record, Symptom, ThreadStats
from scoring.config import ScoreConfig
from scoring.pipeline import score_batch
from scoring.vectorized import versions_as_dicts, versions_frame


def build_record(n: int = 0, *, repo: str | None = None, year: int = 2023, state: str = "closed",
                 comments: int = 4, reactions: int = 0, referenced: bool = False, has_answer: bool = False,
                 labels: list[str] | None = None, bot_only: bool = False, participants: list[tuple[str, str]] | None = None,
                 paper: float | None = 81.8, obtained: float | None = 79.1, hypotheses: list[str] | None = None,
                 **fields: Any) -> Record:
    """A kept-by-default record (score 3+2+1+1 = 7) with overridable fields."""
    repo = repo or f"lab{n % 7}/model{n % 7}"
    base: dict[str, Any] = {
        "thread_id": f"{repo}#{n}",
        "repo": repo,
        "error_type": "hyperparameter",
        "problem_statement": f"Training the released config gives top-1 {obtained} but the paper reports {paper} "
                            f"on ImageNet (thread {n}, run {n * 7919 % 1000}, batch {n % 13}).",
        "root_cause": "The paper used a learning rate of 0.4 with 8 GPUs; the config assumes 4 GPUs.",
        "resolution": "Scale the learning rate linearly with the GPU count.",
        "is_resolved": True,
        "resolution_type": "resolved",
        "diagnostic_depth": 3,
        "has_code_snippet": True,
        "symptom": Symptom(metric="top-1", paper_value=paper, obtained_value=obtained),
        "hypothesis_chain": [Hypothesis(text=t) for t in (hypotheses or ["warmup too short"])],
        "stats": ThreadStats(
            state=state, comments=comments, reactions=reactions, referenced=referenced, has_answer=has_answer,
            labels=labels or [], bot_only=bot_only, created_at=datetime(year, 3, 1, tzinfo=UTC),
            participants=[Participant(login=login, role=role) for login, role in
                          (participants or [("alice-w", "asker"), ("bobmaint", "maintainer")])],
        ),
    }
    base.update(fields)
    return Record(**base)


@pytest.fixture
def make_record() -> Callable[..., Record]:
    return build_record


def score_one(record: Record, config: ScoreConfig | None = None) -> Record:
    """``record`` through ``score`` alone (the one scoring path; no near-duplicate pass)."""
    cfg = (config or ScoreConfig()).model_copy(update={"dedup": False})
    return score_batch([record], cfg).records[0]


def versions_of(text: str) -> dict[str, str]:
    """Framework versions the scoring path detects in one text."""
    return versions_as_dicts(versions_frame(pl.Series([text], dtype=pl.String)), 1)[0]
