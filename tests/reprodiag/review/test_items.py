"""What is reviewed: the eval candidates build would use (LLM-read unless asked), a seeded SFT sample apart
from them, and each thread redacted with its evidence quotes located (or listed apart)."""

from __future__ import annotations

from pathlib import Path

from reprodiag.build import eval_item_id
from reprodiag.review.items import evidence_text, load_items, segments, thread_text, thread_view
from reprodiag.schema import Evidence, ExtractorInfo
from reprodiag.store import Store
from tests.reprodiag.review.corpus import make_review_workspace


def test_candidates_and_the_sft_sample(tmp_path: Path) -> None:
    ws = make_review_workspace(tmp_path)
    with Store(ws) as s:
        offline = next(r for r in s.iter_scored() if r.thread_id == "lab01/paper-01#1")
        s.put_scored([offline.model_copy(update={"extractor": ExtractorInfo(backend="rules")})])
        items = load_items(s)
        ids = [it.item_id for it in items]
        assert ids == sorted(ids) and {it.queue for it in items} == {"eval"}
        assert "lab01/paper-01#1" not in ids
        assert "lab01/paper-01#1" in [it.item_id for it in load_items(s, include_offline=True)]
        assert "lab01/paper-01#3" not in ids  # unresolved, no root cause ((i + j) % 4 == 3 in make_records)
        sample = [it for it in load_items(s, sample_sft=3, seed=1) if it.queue == "sft"]
        assert len(sample) == 3 and not set(ids) & {it.item_id for it in sample}
        assert all(it.sft_answer for it in sample)
        assert [it.item_id for it in sample] == [it.item_id for it in load_items(s, sample_sft=3, seed=1)
                                                 if it.queue == "sft"]
        first = items[0]
        assert first.eval_id == eval_item_id(first.item_id) and first.before["is_resolved"] is True
        thread = s.get_thread(first.item_id)
    ev = [*first.evidence, Evidence(field="tried", comment_id="c9", quote="a sentence nobody wrote")]
    view = thread_view(thread, ev)
    assert [p.post_id for p in view.posts] == ["opening", "c1", "c2", "c3"]
    marked = {label for p in view.posts for _t, label in p.segments if label}
    assert marked == {"symptom.paper_value", "root_cause"}
    assert [e.field for e in view.unplaced] == ["tried"]
    text = thread_text(view)
    assert "[post c2] maintainer_0 (owner)" in text and "maint-bob" not in text and "alice-asker" not in text
    assert 'tried (not found in the thread): "a sentence nobody wrote"' in evidence_text(view)


def test_overlapping_quotes_merge() -> None:
    segs = segments("abcdefghij", [(2, 5, "root_cause"), (4, 7, "resolution"), (8, 9, "root_cause")])
    assert segs == (("ab", None), ("cdefg", "root_cause, resolution"), ("h", None), ("i", "root_cause"),
                    ("j", None))
    assert segments("", []) == (("", None),)
