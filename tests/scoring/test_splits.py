"""Repository-level splits: no leakage, deterministic per seed, stratified."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from reprodiag.errors import UserError
from reprodiag.schema import ERROR_TYPES, Record
from scoring.splits import assign_splits


def _records(make_record: Callable[..., Record], n: int = 600) -> list[Record]:
    rng = random.Random(5)
    out = []
    for i in range(n):
        repo_n = rng.randrange(60)
        out.append(make_record(i, repo=f"org{repo_n}/r{repo_n}", error_type=ERROR_TYPES[repo_n % 5],
                               year=2016 + i % 9))
    return out


def test_no_repository_in_two_splits_and_ratios_roughly_met(make_record: Callable[..., Record]) -> None:
    recs = assign_splits(_records(make_record), seed=1)
    per_repo: dict[str, set[str | None]] = defaultdict(set)
    for r in recs:
        per_repo[r.repo].add(r.split)
    assert all(len(s) == 1 for s in per_repo.values())
    c = Counter(r.split for r in recs)
    assert set(c) == {"train", "validation", "test"}
    assert 0.65 < c["train"] / len(recs) < 0.92
    # stratified: every error type reaches train and at least one held-out split
    for t in ERROR_TYPES:
        splits = {r.split for r in recs if r.error_type == t}
        assert "train" in splits and splits & {"validation", "test"}


def test_deterministic_per_seed_and_independent_of_order(make_record: Callable[..., Record]) -> None:
    recs = _records(make_record)
    a = {r.thread_id: r.split for r in assign_splits(recs, seed=7)}
    b = {r.thread_id: r.split for r in assign_splits(list(reversed(recs)), seed=7)}
    c = {r.thread_id: r.split for r in assign_splits(recs, seed=8)}
    assert a == b
    assert a != c


def test_holdout_repos_go_to_test(make_record: Callable[..., Record]) -> None:
    recs = _records(make_record)
    held = {recs[0].repo, recs[1].repo}
    out = assign_splits(recs, seed=0, holdout_repos=held)
    assert all(r.split == "test" for r in out if r.repo in held)


def test_time_split(make_record: Callable[..., Record]) -> None:
    recs = _records(make_record, 50)
    out = assign_splits(recs, seed=0, split_date=datetime(2021, 1, 1, tzinfo=UTC))
    for r in out:
        assert r.split == ("train" if r.stats.created_at < datetime(2021, 1, 1, tzinfo=UTC) else "test")


def test_bad_ratios_are_a_user_error(make_record: Callable[..., Record]) -> None:
    with pytest.raises(UserError):
        assign_splits(_records(make_record, 5), seed=0, ratios=(0.5, 0.5, 0.5))
