"""Recorded answers as an instrument: a small recorded set scored by ``bench extract --answers``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extract.answer import SCHEMA_HASH
from extract.bench import run_recorded_bench
from extract.llm import custom_id
from extract.prompts import PROMPT_VERSION, build_messages
from extract.realcorpus import REAL_DIR, load_file
from extract.recorded import MANIFEST, Manifest, results_lines
from reprodiag.errors import UserError


def _answer(gold: dict, error_type: str) -> dict:
    return {"is_reproduction": gold["is_reproduction"], "error_type": error_type, "problem_statement": "p",
            "metric": None, "paper_value": None, "obtained_value": None, "hypotheses": [], "root_cause": None,
            "resolution": None, "verification": None, "open_questions": [], "is_resolved": False,
            "diagnostic_depth": 0, "environment": None, "paper": None, "tried": None, "evidence": [],
            "injection_suspected": False}


def _recorded(tmp_path: Path, prompt_version: str = PROMPT_VERSION) -> tuple[Path, list]:
    rows = load_file(REAL_DIR / "test.jsonl")
    pos = [r for r in rows if r.gold["is_reproduction"] and r.gold["error_type"] != "data"][:2]
    neg = [r for r in rows if not r.gold["is_reproduction"]][:2]
    chosen = pos + neg
    answers = {custom_id(pos[0].thread.id): _answer(pos[0].gold, pos[0].gold["error_type"]),
               custom_id(pos[1].thread.id): _answer(pos[1].gold, "data"),  # wrong type
               custom_id(neg[0].thread.id): _answer(neg[0].gold, "other"),
               custom_id(neg[1].thread.id): {**_answer(neg[1].gold, "other"), "is_reproduction": True}}  # FP
    reqs = []
    for r in chosen:
        system, user = build_messages(r.thread)
        reqs.append({"custom_id": custom_id(r.thread.id), "body": {"messages": [
            {"role": "system", "content": system}, {"role": "user", "content": user}]}})
    folder = tmp_path / "rec"
    folder.mkdir()
    lines = results_lines(reqs, answers, model="m", created=0)
    (folder / "test.results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    m = Manifest("m", "2026-12-03", prompt_version, SCHEMA_HASH, "test", {"test": 4})
    (folder / MANIFEST).write_text(json.dumps(m.to_json()))
    return folder, chosen


def test_recorded_set_figures_are_the_hand_computed_ones(tmp_path: Path) -> None:
    folder, _ = _recorded(tmp_path)
    rep = run_recorded_bench(folder, sets=("test",))
    text = " ".join(rep.notes)
    assert rep.counts["test_answered"] == 4 and rep.counts["test_unusable"] == 0
    # 2 reproductions, both said reproduction: recall 1; 1 of 2 negatives said reproduction: FPR 0.5
    assert "recall 1.000" in text and "false_positive_rate 0.500" in text
    assert "error_type 0.500" in text  # one of the two reproductions has the gold type


def test_stale_answers_are_named_not_scored(tmp_path: Path) -> None:
    folder, _ = _recorded(tmp_path, prompt_version="extract-v0")
    with pytest.raises(UserError, match="stale"):
        run_recorded_bench(folder, sets=("test",))
    rep = run_recorded_bench(folder, sets=("test",), allow_stale=True)
    assert "STALE" in rep.notes[0]


def test_cascade_gate_is_chosen_for_recall() -> None:
    from extract.cascade import choose_gate, gate_figures

    scores = [0.9, 0.5, 0.2, 0.1, 0.05, 0.01]
    pos = [True, True, True, True, False, False]
    g = choose_gate(scores, pos, target=0.75)
    assert g == pytest.approx(0.2)
    assert gate_figures(scores, pos, g)["recall"] == 0.75
