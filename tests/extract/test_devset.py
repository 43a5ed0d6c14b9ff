"""Checks on the labeled extractor dev set ``extract/data/devset.jsonl``.

The set is data, not code: these tests guard its shape (every line a valid
Thread plus a label), its composition (the counts the benchmark relies on)
and the groundedness of its numeric labels (each labeled value is written in
the thread text, so an extractor can find it).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reprodiag.schema import ERROR_TYPES, Thread, parse_thread

DEVSET = Path(__file__).resolve().parents[2] / "extract" / "data" / "devset.jsonl"

LABEL_KEYS = {
    "is_reproduction",
    "error_type",
    "metric",
    "paper_value",
    "obtained_value",
    "resolution_type",
    "root_cause",
}
RESOLUTIONS = {"resolved", "unresolved_valuable", "unresolved"}
#: Minimum positives per root-cause type (targets: 22/18/16/11/8, with slack).
MIN_PER_TYPE = {
    "hyperparameter": 20,
    "data": 16,
    "evaluation_protocol": 14,
    "framework_version": 10,
    "seed_hardware": 7,
}
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
#: Words that make a negative "hard": it looks like a reproduction thread on the surface.
_TRAP = re.compile(
    r"reproduc|paper|table \d|figure \d|equation|accuracy|\bmAP\b|\bAP\b|BLEU|top-1|Dice|Traceback|error|"
    r"out of memory|\bGPU|CUDA|复现|论文|报错|显存|公式",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    out = []
    with DEVSET.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            assert line.strip(), f"line {n} is blank"
            out.append(json.loads(line))
    return out


@pytest.fixture(scope="module")
def threads(rows: list[dict[str, Any]]) -> list[Thread]:
    return [parse_thread(r["thread"]) for r in rows]


def _text(t: Thread) -> str:
    return "\n".join([t.title, t.body, *(c.body for c in t.all_comments())])


def _positives(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["label"]["is_reproduction"]]


def test_every_line_is_a_valid_thread_with_unique_id(rows: list[dict[str, Any]],
                                                     threads: list[Thread]) -> None:
    assert all(set(r) == {"thread", "label", "split"} for r in rows)
    ids = [t.id for t in threads]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]


def test_comment_ids_unique_and_answers_consistent(threads: list[Thread]) -> None:
    for t in threads:
        cids = [c.id for c in t.all_comments()]
        assert len(cids) == len(set(cids)), t.id
        answers = [c.id for c in t.all_comments() if c.is_answer]
        if t.kind == "discussion":
            assert t.answer_id == (answers[0] if answers else None), t.id
        else:
            assert not answers and t.answer_id is None and t.category is None, t.id


def test_dates_and_states_are_coherent(threads: list[Thread]) -> None:
    lo, hi = datetime(2018, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)
    for t in threads:
        assert lo <= t.created_at <= t.updated_at < hi, t.id
        assert (t.state == "closed") == (t.closed_at is not None), t.id
        if t.state == "open":
            assert t.state_reason is None, t.id
        for c in t.all_comments():
            assert t.created_at <= c.created_at <= t.updated_at, (t.id, c.id)
        assert t.url.startswith(f"https://github.com/{t.repo}/"), t.id


def test_label_schema(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        lab, tid = r["label"], r["thread"]["url"]
        assert set(lab) == LABEL_KEYS, tid
        assert isinstance(lab["is_reproduction"], bool), tid
        assert lab["resolution_type"] in RESOLUTIONS, tid
        for key in ("paper_value", "obtained_value"):
            assert lab[key] is None or isinstance(lab[key], int | float), tid
        if lab["is_reproduction"]:
            assert lab["error_type"] in ERROR_TYPES, tid
            assert isinstance(lab["metric"], str) and lab["metric"].strip(), tid
            assert isinstance(lab["root_cause"], str) and lab["root_cause"].strip(), tid
            assert lab["paper_value"] is not None, tid
            assert lab["paper_value"] != lab["obtained_value"], tid
        else:
            assert lab["error_type"] == "other", tid
            assert lab["metric"] is None and lab["root_cause"] is None, tid
            assert lab["paper_value"] is None and lab["obtained_value"] is None, tid
            assert lab["resolution_type"] == "unresolved", tid


def test_labeled_values_appear_literally_in_thread(rows: list[dict[str, Any]],
                                                   threads: list[Thread]) -> None:
    for r, t in zip(rows, threads, strict=True):
        numbers = {float(tok) for tok in _NUMBER.findall(_text(t))}
        for key in ("paper_value", "obtained_value"):
            value = r["label"][key]
            if value is not None:
                assert any(abs(n - value) < 1e-9 for n in numbers), f"{t.id}: {key}={value} not in text"


def test_composition(rows: list[dict[str, Any]], threads: list[Thread]) -> None:
    pos = _positives(rows)
    neg = [r for r in rows if not r["label"]["is_reproduction"]]
    assert len(rows) >= 130
    assert len(pos) >= 75 and len(neg) >= 50
    per_type = Counter(r["label"]["error_type"] for r in pos)
    for etype, minimum in MIN_PER_TYPE.items():
        assert per_type[etype] >= minimum, (etype, per_type[etype])
    assert len({t.repo for t in threads}) >= 30
    kinds = Counter(t.kind for t in threads)
    assert kinds["discussion"] >= 4 and kinds["pull_request"] >= 3 and kinds["issue"] > len(rows) / 2


def test_hard_negatives_look_like_reproduction_threads(rows: list[dict[str, Any]],
                                                      threads: list[Thread]) -> None:
    hard = [t for r, t in zip(rows, threads, strict=True)
            if not r["label"]["is_reproduction"] and _TRAP.search(_text(t))]
    assert len(hard) >= 40


def test_chinese_threads_on_both_sides(rows: list[dict[str, Any]], threads: list[Thread]) -> None:
    zh = [(r, t) for r, t in zip(rows, threads, strict=True) if len(_CJK.findall(_text(t))) >= 20]
    assert len(zh) >= 8
    assert {r["label"]["is_reproduction"] for r, _ in zh} == {True, False}


def test_lower_is_better_metrics_and_bots_present(rows: list[dict[str, Any]],
                                                  threads: list[Thread]) -> None:
    lower = [r for r in _positives(rows)
             if r["label"]["obtained_value"] is not None
             and r["label"]["obtained_value"] > r["label"]["paper_value"]]
    assert len(lower) >= 8
    authors = {c.author for t in threads for c in t.all_comments()}
    assert {"github-actions[bot]", "stale[bot]"} <= authors


def test_resolution_mix(rows: list[dict[str, Any]]) -> None:
    res = Counter(r["label"]["resolution_type"] for r in _positives(rows))
    share = res["resolved"] / sum(res.values())
    assert 0.55 <= share <= 0.75, res
    assert res["unresolved_valuable"] >= 10


def test_split_is_stratified(rows: list[dict[str, Any]]) -> None:
    splits = Counter(r["split"] for r in rows)
    assert set(splits) == {"dev", "holdout"}
    assert 0.25 <= splits["holdout"] / len(rows) <= 0.42, splits
    strata = Counter(
        (r["label"]["error_type"] if r["label"]["is_reproduction"] else "negative", r["split"]) for r in rows
    )
    for stratum in (*ERROR_TYPES, "negative"):
        assert strata[(stratum, "dev")] > strata[(stratum, "holdout")] >= 2, stratum
