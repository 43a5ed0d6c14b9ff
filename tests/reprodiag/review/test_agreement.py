"""The card's review figures: Cohen's kappa, and the reader-vs-reviewer and reviewer-vs-reviewer pairs."""

from __future__ import annotations

import pytest

from reprodiag.review.agreement import kappa, review_facts
from reprodiag.review.decisions import combine, decide

BEFORE = {"error_type": "data", "root_cause": "Wrong split.", "acceptable_directions": ["split"],
          "paper_value": 1.0, "obtained_value": 2.0, "is_resolved": True}


def test_kappa_matches_the_textbook_example() -> None:
    # 50 items: both yes 20, both no 15, a yes/b no 5, a no/b yes 10 -> po 0.7, pe 0.5, kappa 0.4
    rows = [("y", "y")] * 20 + [("n", "n")] * 15 + [("y", "n")] * 5 + [("n", "y")] * 10
    assert kappa(rows) == pytest.approx(0.4)
    assert kappa([("y", "y")] * 3) is None  # one value on both sides: undefined
    assert kappa([]) is None


def _d(item: str, who: str, **kw: object):  # noqa: ANN202
    return decide(item_id=item, queue="eval", reviewer=who, before=BEFORE, record_digest="x", source="page", **kw)


def test_review_facts_pair_the_reader_with_each_reviewer_and_reviewers_with_each_other() -> None:
    cur = [_d("a", "ana", after=None), _d("a", "ben", after={**BEFORE, "error_type": "evaluation_protocol"}),
           _d("b", "ana", after={**BEFORE, "root_cause": "The test split was used."}),
           _d("c", "ana", reject=True, reason="no cause")]
    combined, stale = combine(cur, {"a": "x", "b": "x", "c": "x"})
    f = review_facts(combined, stale, eval_items=[("a", "data"), ("b", "data"), ("z", "hyperparameter")])
    assert f.eval_items == {"hyperparameter": 1, "data": 2} and f.eval_reviewed == {"hyperparameter": 0, "data": 2}
    assert (f.items_reviewed, f.reviewers, dict(f.decisions)) == (3, 2, {"accept": 1, "edit": 2, "reject": 1})
    rows = {r.field: r for r in f.reader_vs_reviewer}
    assert rows["error_type"].pairs == 3 and rows["error_type"].agreement.value == pytest.approx(2 / 3)
    assert rows["root_cause"].agreement.value == pytest.approx(2 / 3) and rows["root_cause"].kappa is None
    assert rows["error_type"].agreement.lo is not None  # an interval once there are two pairs or more
    between = {r.field: r for r in f.reviewer_vs_reviewer}
    assert f.reviewer_pairs == 1 and between["decision"].pairs == 1 and between["error_type"].agreement.value == 0
    assert "2 of 3 eval items" in f.summary_line()
