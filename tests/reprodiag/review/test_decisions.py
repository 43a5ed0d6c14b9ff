"""The reviews table: a migration that older workspaces take on open, append-only decisions, reviewers kept
apart, and how decisions combine (a reject wins in its queue, the latest edit's fields, stale ones ignored)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reprodiag.review.decisions import combine, current_decisions, decide, history, put_decisions
from reprodiag.review.fields import changed, clean_fields, still_eligible
from reprodiag.store import MIGRATIONS, Store

BEFORE = {"error_type": "data", "root_cause": "The images were normalized with the wrong constants.",
          "acceptable_directions": ["normalization constants"], "paper_value": 81.8, "obtained_value": 79.8,
          "is_resolved": True}


def _d(item: str, reviewer: str, *, after: dict | None = None, reject: bool = False, queue: str = "eval",
       digest: str = "d1", when: float | None = None):  # noqa: ANN202
    return decide(item_id=item, queue=queue, reviewer=reviewer, before=BEFORE, after=after, record_digest=digest,
                  source="page", reason="not established" if reject else None, reject=reject, decided=when)


def test_a_version_2_workspace_gains_the_reviews_table_on_open(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    con = sqlite3.connect(ws / "reprodiag.sqlite")
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for i, sql in enumerate(MIGRATIONS[:2], start=1):
        con.executescript(sql)
        con.execute("INSERT INTO schema_version(version) VALUES (?)", (i,))
    con.commit()
    con.close()
    with Store(ws) as s:
        assert s.schema_version == len(MIGRATIONS) == 3
        assert put_decisions(s, [_d("o/r#1", "ana")]) == 1
        assert [d.decision for d in current_decisions(s)] == ["accept"]


def test_decisions_are_appended_and_each_reviewers_latest_counts(store: Store) -> None:
    put_decisions(store, [_d("o/r#1", "ana", when=1.0)])
    put_decisions(store, [_d("o/r#1", "ana", reject=True, when=2.0)])
    put_decisions(store, [_d("o/r#1", "ben", after={**BEFORE, "error_type": "evaluation_protocol"}, when=3.0)])
    assert [d.decision for d in history(store, "o/r#1")] == ["accept", "reject", "edit"]
    cur = {d.reviewer: d for d in current_decisions(store)}
    assert cur["ana"].decision == "reject" and cur["ana"].after is None and cur["ana"].reason == "not established"
    assert cur["ben"].decision == "edit" and cur["ben"].after["error_type"] == "evaluation_protocol"
    assert [d.reviewer for d in current_decisions(store, "ben")] == ["ben"]
    exported = list(store.iter_export("reviews"))
    assert [r["decision"] for r in exported] == ["accept", "reject", "edit"]
    assert exported[2]["before"] == BEFORE and exported[2]["after"]["error_type"] == "evaluation_protocol"


def test_an_edit_without_a_change_is_an_accept() -> None:
    assert _d("o/r#1", "ana", after=dict(BEFORE)).decision == "accept"
    assert _d("o/r#1", "ana", after={**BEFORE, "root_cause": "  the images were NORMALIZED with the wrong "
                                    "constants. "}).decision == "accept"
    assert _d("o/r#1", "ana", after={**BEFORE, "paper_value": 81.9}).decision == "edit"


def test_combining_reviewers() -> None:
    edit = {**BEFORE, "root_cause": "The mean/std constants were those of CIFAR, not ImageNet."}
    cur = [_d("a#1", "ana", when=1.0), _d("a#1", "ben", after=edit, when=2.0),  # the edit's fields win
           _d("b#1", "ana", when=1.0), _d("b#1", "ben", reject=True, when=2.0),  # a reject wins in its queue
           _d("c#1", "ana", queue="sft", reject=True),
           _d("d#1", "ana", digest="old")]  # the record was read again since: stale
    got, stale = combine(cur, {"a#1": "d1", "b#1": "d1", "c#1": "d1", "d#1": "d1"})
    assert got["a#1"].after == clean_fields(edit) and got["a#1"].kept and got["a#1"].reviewers == ("ana", "ben")
    assert got["b#1"].rejected_in == {"eval"} and not got["b#1"].kept
    assert got["c#1"].rejected_in == {"sft"} and got["c#1"].after is None
    assert "d#1" not in got and [d.item_id for d in stale] == ["d#1"]


def test_fields_are_validated() -> None:
    with pytest.raises(ValueError, match="error_type"):
        clean_fields({**BEFORE, "error_type": "magic"})
    with pytest.raises(ValueError, match="paper_value"):
        clean_fields({**BEFORE, "paper_value": "eighty"})
    with pytest.raises(ValueError, match="unknown field"):
        clean_fields({**BEFORE, "extra": 1})
    with pytest.raises(ValueError, match="finite"):
        clean_fields({**BEFORE, "obtained_value": float("nan")})
    got = clean_fields({**BEFORE, "acceptable_directions": "a\n\n b \nA", "paper_value": "1,234.5"})
    assert got["acceptable_directions"] == ["a", "b"] and got["paper_value"] == 1234.5
    with pytest.raises(ValueError, match="reviewer"):
        _d("o/r#1", "")


def test_what_a_reviewer_changes_decides_eligibility() -> None:
    assert changed(BEFORE, {**BEFORE, "is_resolved": False}) == ["is_resolved"]
    assert still_eligible(BEFORE, BEFORE, True)
    assert not still_eligible(BEFORE, {**BEFORE, "is_resolved": False}, True)  # not established after all
    assert not still_eligible(BEFORE, {**BEFORE, "error_type": "other"}, True)
    assert not still_eligible(BEFORE, {**BEFORE, "root_cause": ""}, True)
    unresolved = {**BEFORE, "is_resolved": False}
    assert still_eligible(unresolved, unresolved, True)  # eligible through a confirmed hypothesis, left as is
