"""mine --shard I/N: disjoint, covering, stable parts of the repository list."""

from __future__ import annotations

import pytest

from miner.sharding import Shard
from reprodiag.errors import UserError

REPOS = [f"owner{i % 37}/repo-{i}" for i in range(3000)]
#: sha256 of the lower-cased names, mod 4, 1-based (computed once; must never change)
EXPECTED_PARTS = [3, 3, 2, 2]


def test_parts_are_disjoint_cover_everything_and_are_balanced() -> None:
    parts = [Shard(i, 4) for i in range(1, 5)]
    seen: dict[str, int] = {}
    for p in parts:
        for r in REPOS:
            if p.holds(r):
                assert r not in seen, r
                seen[r] = p.index
    assert set(seen) == set(REPOS)
    sizes = [sum(1 for v in seen.values() if v == i) for i in range(1, 5)]
    assert all(600 < n < 900 for n in sizes), sizes


def test_a_repository_keeps_its_part_whatever_the_case_or_the_list() -> None:
    p = Shard(2, 3)
    assert [p.holds(r) for r in REPOS[:50]] == [p.holds(r.upper()) for r in REPOS[:50]]
    assert Shard(1, 1).holds("any/repo")
    # fixed values: the part must not change between Python versions, machines or runs (no salted hash())
    got = [next(i for i in range(1, 5) if Shard(i, 4).holds(r))
           for r in ("facebookresearch/detr", "openai/CLIP", "a/b", "google-research/bert")]
    assert got == EXPECTED_PARTS


@pytest.mark.parametrize("text", ["", "2", "0/4", "5/4", "1/0", "a/b", "1/2/3", "-1/2", "1 of 2"])
def test_bad_shards_are_one_line_user_errors(text: str) -> None:
    with pytest.raises(UserError) as exc:
        Shard.parse(text)
    assert "\n" not in str(exc.value) and "--shard" in str(exc.value)


def test_good_shards_parse() -> None:
    assert Shard.parse("2/4") == Shard(2, 4)
    assert Shard.parse(" 1 / 1 ") == Shard(1, 1)
    assert str(Shard.parse("3/8")) == "3/8"
