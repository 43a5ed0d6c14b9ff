"""Label Studio round trips through the real CLI: export tasks, take each task's prediction as the annotation
(what Label Studio stores when a person submits the pre-annotation unchanged), import the JSON export, and
the next build's card says every eval item was checked; an edit made in Label Studio reaches the eval set;
a malformed or foreign file is one line, exit 2, and nothing stored. Also the JSONL exchange, and the shipped
labeling config against the tasks (every control a result names exists, with that type)."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from reprodiag.build import run_build
from reprodiag.review.decisions import current_decisions
from reprodiag.review.fields import TYPES
from reprodiag.review.label_studio import CONFIG, CONTROLS
from reprodiag.store import Store
from tests.reprodiag.review.corpus import make_review_workspace


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> tuple[Path, list[dict[str, Any]]]:
    """A workspace and the Label Studio tasks `review export` wrote for it (never imported into it)."""
    root = tmp_path_factory.mktemp("ls")
    ws = make_review_workspace(root)
    tasks = root / "tasks.json"
    proc = cli("review", "export", "--format", "label-studio", "-o", str(tasks), workspace=ws)
    assert proc.returncode == 0, proc.stderr
    return ws, json.loads(tasks.read_text())


def as_label_studio_export(tasks: list[dict[str, Any]], annotator: int = 7) -> list[dict[str, Any]]:
    """What Label Studio's JSON export holds after a person submitted each task's prediction unchanged."""
    out = []
    for i, t in enumerate(copy.deepcopy(tasks), start=1):
        ann = {"id": 1000 + i, "completed_by": annotator, "result": copy.deepcopy(t["predictions"][0]["result"]),
               "was_cancelled": False, "ground_truth": False, "created_at": "2026-12-06T10:00:00.000000Z",
               "updated_at": "2026-12-06T10:01:00.000000Z", "lead_time": 41.5, "task": i, "project": 3}
        out.append({"id": i, "data": t["data"], "annotations": [ann], "predictions": t["predictions"], "meta": {},
                    "created_at": "2026-12-06T09:00:00.000000Z", "updated_at": "2026-12-06T10:01:00.000000Z",
                    "inner_id": i, "total_annotations": 1, "cancelled_annotations": 0, "total_predictions": 1,
                    "project": 3, "updated_by": annotator})
    return out


def _copy_ws(ws: Path, dest: Path) -> Path:
    """A fresh copy of the exported workspace (each test imports into its own)."""
    import shutil

    with Store(ws):  # checkpoint nothing pending; the copy opens on its own
        pass
    shutil.copytree(ws, dest / "ws")
    return dest / "ws"


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def test_the_config_has_every_control_the_tasks_fill(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _ws, tasks = exported
    root = ET.parse(CONFIG).getroot()
    objects = {el.get("name"): el for el in root.iter() if el.tag == "Text"}
    controls = {el.get("name"): el for el in root.iter() if el.get("toName")}
    assert set(controls) == set(CONTROLS)
    for name, el in controls.items():
        assert el.tag.lower() == CONTROLS[name] and el.get("toName") in objects
    assert [c.get("value") for c in controls["error_type"].iter("Choice")] == list(TYPES)
    variables = {v[1:] for el in root.iter() for v in [el.get("value") or ""] if v.startswith("$")}
    assert tasks and all(variables <= set(t["data"]) for t in tasks)
    for t in tasks:
        for region in t["predictions"][0]["result"]:
            assert region["to_name"] == "thread" and region["type"] == CONTROLS[region["from_name"]]
            assert set(region["value"]) == {{"choices": "choices", "textarea": "text", "number": "number"}[
                region["type"]]}
    text = tasks[0]["data"]["thread"]
    assert "[opening post] asker_0" in text and "[post c2] maintainer_0 (owner)" in text and "alice-asker" not in text


def test_round_trip_marks_every_exported_item_reviewed(exported: tuple[Path, list[dict[str, Any]]], cli: Any,
                                                       tmp_path: Path) -> None:
    ws = _copy_ws(exported[0], tmp_path)
    tasks = exported[1]
    export = _write(tmp_path / "project-3-at-2026-12-06.json", as_label_studio_export(tasks))
    proc = cli("-q", "review", "import", str(export), workspace=ws)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["counts"]["decisions stored"] == rep["counts"]["accepted"] == len(tasks)
    proc = cli("-q", "review", "import", str(export), workspace=ws)  # again: nothing new is stored
    assert proc.returncode == 0 and json.loads(proc.stdout)["counts"]["already stored"] == len(tasks)
    with Store(ws) as s:
        cur = current_decisions(s)
        assert s.query("SELECT count(*) FROM reviews")[0][0] == len(tasks)
    assert {d.item_id for d in cur} == {t["data"]["reprodiag"]["item_id"] for t in tasks}
    assert {(d.decision, d.reviewer, d.source) for d in cur} == {("accept", "label-studio", "label-studio")}

    out = tmp_path / "datasets"
    proc = cli("-q", "build", "-o", str(out), "--per-type-min", "1", workspace=ws)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    n = rep["counts"]["eval items"]
    assert n > 0 and rep["counts"]["eval reviewed"] == n
    card = (out / "README.md").read_text()
    assert f"**Every eval item ({n}) was checked by a person**" in card
    assert (f"{len(tasks)} items reviewed by 1 person ({len(tasks)} decisions: {len(tasks)} accepted, 0 edited, "
            "0 rejected)") in card
    assert re.search(r"\| error_type \| \d+ \| 1\.000 \[1\.000, 1\.000\] \| 1\.000 \[1\.000, 1\.000\] \|", card)


def test_an_edit_made_in_label_studio_reaches_the_eval_set(exported: tuple[Path, list[dict[str, Any]]], cli: Any,
                                                           tmp_path: Path) -> None:
    ws = _copy_ws(exported[0], tmp_path)
    with Store(ws) as s:  # which items a build puts in the eval set
        run_build(s, tmp_path / "before", per_type_min=1, per_type_max=40, seed=0, push_to_hub=None)
    first = pl.read_parquet(tmp_path / "before" / "eval" / "test.parquet").to_dicts()[0]["source_thread"]
    doc = as_label_studio_export(exported[1])
    task = next(t for t in doc if t["data"]["reprodiag"]["item_id"] == first)
    second = copy.deepcopy(task["annotations"][0])  # a second annotator edits the root cause and a direction
    second.update(id=99, completed_by={"id": 8, "email": "rev-b@lab.example"})
    new_cause = "Evaluation used a single centre crop while the paper averaged ten crops per image."
    for region in second["result"]:
        if region["from_name"] == "root_cause":
            region["value"]["text"] = [new_cause]
        if region["from_name"] == "acceptable_directions":
            region["value"]["text"] = [*region["value"]["text"], "ten-crop testing"]
    second["result"].append({"id": "r", "from_name": "reason", "to_name": "thread", "type": "textarea",
                             "value": {"text": ["the cause in the reader's words was too vague"]}})
    task["annotations"].append(second)
    proc = cli("-q", "review", "import", str(_write(tmp_path / "export.json", doc)), "--reviewer", "lab",
               workspace=ws)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["edited"] == 1
    with Store(ws) as s:
        cur = {(d.item_id, d.reviewer): d for d in current_decisions(s)}
        assert cur[(first, "lab:rev-b@lab.example")].decision == "edit"
        assert cur[(first, "lab:7")].decision == "accept"
        run_build(s, tmp_path / "after", per_type_min=1, per_type_max=40, seed=0, push_to_hub=None)
    item = next(r for r in pl.read_parquet(tmp_path / "after" / "eval" / "test.parquet").to_dicts()
                if r["source_thread"] == first)
    assert item["gold_root_cause"] == new_cause and "ten-crop testing" in item["acceptable_directions"]
    card = (tmp_path / "after" / "README.md").read_text()
    assert "Reviewer vs reviewer (1 item decided by two or more people" in card
    assert "| decision | 1 | 0.000 | 0.000 |" in card and "| error_type | 1 | 1.000 | n/a |" in card


def _bad_files(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    good = as_label_studio_export(tasks)
    unknown_control = copy.deepcopy(good)
    unknown_control[0]["annotations"][0]["result"].append(
        {"id": "s", "from_name": "sentiment", "to_name": "thread", "type": "choices", "value": {"choices": ["ok"]}})
    bad_type = copy.deepcopy(good)
    for region in bad_type[1]["annotations"][0]["result"]:
        if region["from_name"] == "error_type":
            region["value"]["choices"] = ["magic"]
    bad_number = copy.deepcopy(good)
    bad_number[2]["annotations"][0]["result"].append(
        {"id": "p", "from_name": "paper_value", "to_name": "thread", "type": "number", "value": {"number": "high"}})
    other_ws = copy.deepcopy(good)
    other_ws[3]["data"]["reprodiag"]["item_id"] = "someone/else#4"
    return {
        "not JSON": '[{"id": 1, "data": ',
        "empty": "",
        "an object, not tasks": {"tasks": good},
        "a foreign Label Studio export": [{"id": 1, "data": {"text": "I love this"}, "annotations": [
            {"id": 1, "completed_by": 1, "result": [{"from_name": "sentiment", "to_name": "text", "type": "choices",
                                                     "value": {"choices": ["Positive"]}}]}]}],
        "a control the config lacks": unknown_control,
        "an unknown error type": bad_type,
        "a value that is no number": bad_number,
        "an item of another workspace": other_ws,
    }


@pytest.mark.parametrize("case", ["not JSON", "empty", "an object, not tasks", "a foreign Label Studio export",
                                  "a control the config lacks", "an unknown error type", "a value that is no number",
                                  "an item of another workspace"])
def test_a_malformed_or_foreign_file_stores_nothing(case: str, exported: tuple[Path, list[dict[str, Any]]],
                                                    cli: Any, tmp_path: Path) -> None:
    ws, tasks = exported
    path = _write(tmp_path / "export.json", _bad_files(tasks)[case])
    proc = cli("review", "import", str(path), workspace=ws)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    with Store(ws) as s:
        assert s.query("SELECT count(*) FROM reviews")[0][0] == 0


def test_skipped_and_cancelled_annotations_are_counted(exported: tuple[Path, list[dict[str, Any]]], cli: Any,
                                                       tmp_path: Path) -> None:
    ws = _copy_ws(exported[0], tmp_path)
    doc = as_label_studio_export(exported[1])
    doc[0]["annotations"][0]["was_cancelled"] = True
    doc[1]["annotations"] = []
    for region in doc[2]["annotations"][0]["result"]:
        if region["from_name"] == "verdict":
            region["value"]["choices"] = ["reject"]
    proc = cli("-q", "review", "import", str(_write(tmp_path / "e.json", doc)), workspace=ws)
    assert proc.returncode == 0, proc.stderr
    c = json.loads(proc.stdout)["counts"]
    assert (c["cancelled"], c["not annotated"], c["rejected"]) == (1, 2, 1)
    assert c["decisions stored"] == len(doc) - 2


def test_jsonl_export_and_import(exported: tuple[Path, list[dict[str, Any]]], cli: Any, tmp_path: Path) -> None:
    ws = _copy_ws(exported[0], tmp_path)
    items = tmp_path / "items.jsonl"
    proc = cli("review", "export", "--format", "jsonl", "-o", str(items), "--sample-sft", "2", workspace=ws)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in items.read_text().splitlines()]
    assert [r["queue"] for r in rows].count("sft") == 2 and all(r["decision"] is None for r in rows)
    rows[0].update(decision="reject", reason="cause never confirmed", reviewer="ana")
    rows[1].update(decision="edit", after={**rows[1]["before"], "error_type": "other"})
    sft = next(r for r in rows if r["queue"] == "sft")
    sft.update(decision="reject", reason="the answer hallucinates a fix")
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli("-q", "review", "import", str(items), "--reviewer", "ben", workspace=ws)
    assert proc.returncode == 0, proc.stderr
    c = json.loads(proc.stdout)["counts"]
    assert (c["rejected"], c["edited"], c["not decided"]) == (2, 1, len(rows) - 3)
    with Store(ws) as s:
        who = {d.item_id: d.reviewer for d in current_decisions(s)}
        assert who[rows[0]["item_id"]] == "ana" and who[rows[1]["item_id"]] == "ben"
        rep = run_build(s, tmp_path / "out", per_type_min=1, per_type_max=40, seed=0, push_to_hub=None)
    sft_threads = {r["thread_id"] for r in pl.read_parquet(tmp_path / "out" / "sft" / "train.parquet").to_dicts()}
    assert sft["item_id"] not in sft_threads
    assert rep.counts.get("left out (training: rejected by a reviewer)", 0) <= 1
