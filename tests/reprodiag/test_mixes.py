"""The named SFT mixes: which rows each keeps, the target share of unresolved-valuable rows, a seeded choice."""

from __future__ import annotations

from collections import Counter

import pytest

from reprodiag.mixes import (
    CONFIGS,
    SFT_MIXES,
    TARGET_RESOLVED_SHARE,
    mix_named,
    select_mix,
    sft_mixes,
    unresolved_cap,
)
from scoring.config import ScoreConfig


def _rows(resolved: int, valuable: int, unresolved: int = 0) -> list[dict]:
    kinds = ["resolved"] * resolved + ["unresolved_valuable"] * valuable + ["unresolved"] * unresolved
    return [{"thread_id": f"o/r#{i}", "resolution_type": k} for i, k in enumerate(kinds)]


def test_the_configurations_and_their_groups() -> None:
    assert CONFIGS == ("sft", "sft_resolved", "sft_full", "dpo", "eval")
    assert [m.name for m in SFT_MIXES] == ["sft_resolved", "sft_full"]
    assert mix_named("sft_full").resolution == ("resolved", "unresolved_valuable")
    assert "resolved and unresolved-valuable" in mix_named("sft_full").group
    with pytest.raises(KeyError):
        mix_named("sft_everything")
    assert TARGET_RESOLVED_SHARE == ScoreConfig().target_resolved_share  # one target, stated twice


def test_resolved_mix_keeps_resolved_rows_only_in_order() -> None:
    rows = _rows(3, 2, 2)
    kept, capped = select_mix(rows, mix_named("sft_resolved"), seed=0)
    assert kept == rows[:3] and capped == 0
    everything, _ = select_mix(rows, mix_named("sft"), seed=0)
    assert everything == rows


@pytest.mark.parametrize("resolved,valuable,expect", [(7, 3, 3), (7, 2, 2), (7, 9, 3), (0, 4, 0), (1, 1, 0),
                                                      (2, 1, 1), (33, 0, 0)])
def test_full_mix_holds_at_most_the_target_share(resolved: int, valuable: int, expect: int) -> None:
    rows = _rows(resolved, valuable, unresolved=2)
    kept, capped = select_mix(rows, mix_named("sft_full"), seed=0)
    c = Counter(r["resolution_type"] for r in kept)
    assert c["resolved"] == resolved and c["unresolved_valuable"] == expect and c["unresolved"] == 0
    assert capped == valuable - expect
    assert unresolved_cap(resolved) >= expect
    assert [r for r in rows if r in kept] == kept  # input order kept


def test_the_choice_is_seeded() -> None:
    rows = _rows(7, 9)
    a, _ = select_mix(rows, mix_named("sft_full"), seed=0)
    b, _ = select_mix(list(reversed(rows)), mix_named("sft_full"), seed=0)
    assert {r["thread_id"] for r in a} == {r["thread_id"] for r in b}
    others = {frozenset(r["thread_id"] for r in select_mix(rows, mix_named("sft_full"), seed=s)[0])
              for s in range(8)}
    assert len(others) > 1  # another seed, another choice


def test_sft_mixes_keep_every_split() -> None:
    out = sft_mixes({"train": _rows(7, 4, 1), "validation": _rows(0, 2)}, seed=0)
    assert set(out) == {"sft_resolved", "sft_full"}
    full_rows, full = out["sft_full"]
    assert set(full_rows) == {"train", "validation"} and full.rows == {"train": 10, "validation": 0}
    assert full.capped == 1 + 2 and full.resolution == Counter(resolved=7, unresolved_valuable=3)
    res_rows, res = out["sft_resolved"]
    assert res.total == 7 and res_rows["validation"] == []
