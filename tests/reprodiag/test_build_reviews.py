"""``build`` with people's reviews: nothing reviewed builds as before; edited fields replace the reader's
(a type of ``other`` or "not resolved" takes the item out of eval); a review of a record read again since is
stale and not applied; ``--reviewed-only`` keeps accepted or edited items only; a rescued gold (a reader's
question accepted by a person) becomes the item's gold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from reprodiag.build import run_build
from reprodiag.review.decisions import decide, put_decisions
from reprodiag.review.items import ReviewItem, load_items
from reprodiag.store import Store
from tests.reprodiag.review.corpus import make_review_workspace


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_review_workspace(tmp_path_factory.mktemp("build-reviews"))


def _build(store: Store, out: Path, **kw: Any) -> tuple[dict[str, dict[str, Any]], dict[str, int], str]:
    rep = run_build(store, out, per_type_min=1, per_type_max=40, seed=0, push_to_hub=None, **kw)
    items = {r["source_thread"]: r for r in pl.read_parquet(out / "eval" / "test.parquet").to_dicts()}
    return items, rep.counts, (out / "README.md").read_text()


def _review(store: Store, it: ReviewItem, who: str = "ana", *, digest: str | None = None, **kw: Any) -> None:
    put_decisions(store, [decide(item_id=it.item_id, queue=it.queue, reviewer=who, before=it.before,
                                 record_digest=digest or it.digest, source="page", **kw)])


def test_reviews_change_what_build_takes(ws: Path, tmp_path: Path) -> None:
    with Store(ws) as s:
        base_items, base_counts, base_card = _build(s, tmp_path / "base")
        assert "Checked by people" not in base_card and "eval reviewed" not in base_counts
        items = {it.item_id: it for it in load_items(s)}
        a, b, c, d = (items[k] for k in sorted(base_items)[:4])
        _review(s, a, after={**a.before, "error_type": "other"}, reason="a typo in the paper, not a setting")
        _review(s, b, after={**b.before, "is_resolved": False})
        swapped = {"paper_value": c.before["obtained_value"], "obtained_value": c.before["paper_value"]}
        _review(s, c, after={**c.before, **swapped, "root_cause": "The learning rate was halved."})
        _review(s, d, digest="read-before", reject=True, reason="stale")  # a review of an older reading
        got, counts, card = _build(s, tmp_path / "after")
    assert a.item_id not in got and b.item_id not in got
    assert counts["left out (eval: a reviewer's fields leave it out (type other, no cause, or not resolved))"] == 2
    assert got[c.item_id]["gold_root_cause"] == "The learning rate was halved."
    assert (f"obtained {swapped['obtained_value']:g}, paper reports {swapped['paper_value']:g}"
            in got[c.item_id]["symptom"])
    assert d.item_id in got  # the stale reject is not applied
    assert "1 decision(s) were made on a record that has been read again since" in card
    assert counts["eval reviewed"] == 1


def test_reviewed_only_and_a_rescued_gold(tmp_path: Path) -> None:
    ws = make_review_workspace(tmp_path)
    with Store(ws) as s:
        # make one eligible record's root cause a question: build leaves it out unless a person accepts it
        rec = next(r for r in s.iter_scored() if r.thread_id == "lab00/paper-00#1")
        s.put_scored([rec.model_copy(update={"root_cause": "Did you scale the learning rate to your 2 GPUs?"})])
        items = {it.item_id: it for it in load_items(s)}
        it = items["lab00/paper-00#1"]
        assert it.note and "not a declarative cause" in it.note
        got, counts, _ = _build(s, tmp_path / "before", reviewed_only=True)
        assert got == {} and counts["left out (eval: not reviewed (build --reviewed-only))"] >= 1
        _review(s, it, after={**it.before, "root_cause": "The learning rate was not scaled to 2 GPUs."})
        got, counts, card = _build(s, tmp_path / "after", reviewed_only=True)
    assert list(got) == ["lab00/paper-00#1"]
    assert got["lab00/paper-00#1"]["gold_root_cause"] == "The learning rate was not scaled to 2 GPUs."
    assert "**Every eval item (1) was checked by a person**" in card
