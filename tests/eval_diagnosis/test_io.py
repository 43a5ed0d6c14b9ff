"""Loading eval sets, answers and labels: every malformed input names the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_diagnosis.io import load_answers, load_eval_set, load_labels, read_resumable_jsonl
from reprodiag.errors import UserError

ITEM = {"id": "a", "error_type": "data", "gold_root_cause": "wrong split", "symptom": "mAP 30 vs 35"}


def _write(p: Path, lines: list[str]) -> Path:
    p.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return p


def test_build_dir_and_its_eval_subdir(built: Path) -> None:
    a = load_eval_set(built)
    b = load_eval_set(built / "eval")
    c = load_eval_set(built / "eval" / "test.parquet")
    assert a == b == c and len(a) > 5


def test_jsonl_eval_set_errors_name_file_and_line(tmp_path: Path) -> None:
    ok = _write(tmp_path / "ok.jsonl", [json.dumps(ITEM), "", json.dumps({**ITEM, "id": "b"})])
    assert [i.id for i in load_eval_set(ok)] == ["a", "b"]
    bad = _write(tmp_path / "bad.jsonl", [json.dumps(ITEM), '{"id": "b", "error_type": '])
    with pytest.raises(UserError, match=r"bad\.jsonl:2: bad JSON"):
        load_eval_set(bad)
    missing = _write(tmp_path / "m.jsonl", [json.dumps({"id": "x", "error_type": "data"})])
    with pytest.raises(UserError, match=r"m\.jsonl:1: .*gold_root_cause"):
        load_eval_set(missing)
    wrong = _write(tmp_path / "w.jsonl", [json.dumps({**ITEM, "error_type": "cosmic_rays"})])
    with pytest.raises(UserError, match=r"w\.jsonl:1: .*error_type"):
        load_eval_set(wrong)
    dup = _write(tmp_path / "d.jsonl", [json.dumps(ITEM), json.dumps(ITEM)])
    with pytest.raises(UserError, match="duplicate item id"):
        load_eval_set(dup)
    arr = _write(tmp_path / "arr.jsonl", ["[1, 2]"])
    with pytest.raises(UserError, match="expected a JSON object"):
        load_eval_set(arr)
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(UserError, match="bin.jsonl"):
        load_eval_set(tmp_path / "bin.jsonl")
    with pytest.raises(UserError, match="no such file"):
        load_eval_set(tmp_path / "nope.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no .parquet or .jsonl"):
        load_eval_set(tmp_path / "empty")
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(UserError, match="not a readable Parquet"):
        load_eval_set(tmp_path / "x.parquet")


def test_answers(tmp_path: Path) -> None:
    p = _write(tmp_path / "ans.jsonl", [
        json.dumps({"id": "a", "model": "m", "answer": "1. x"}),
        json.dumps({"id": "a", "model": "m", "answer": "1. y"}),
        json.dumps({"id": "b", "model": "m", "answer": None}),
        json.dumps({"id": "c", "model": "m", "answer": "1. 学习率 🙂\u200b"}),
    ])
    rows = {(r.id, r.model): r.answer for r in load_answers(p)}
    assert rows[("a", "m")] == "1. y" and rows[("b", "m")] == ""
    bad = _write(tmp_path / "bad.jsonl", [json.dumps({"id": "a", "answer": "x"})])
    with pytest.raises(UserError, match=r"bad\.jsonl:1: missing field 'model'"):
        load_answers(bad)
    bad2 = _write(tmp_path / "bad2.jsonl", [json.dumps({"id": "a", "model": "m", "answer": 3})])
    with pytest.raises(UserError, match=r"bad2\.jsonl:1: field 'answer'"):
        load_answers(bad2)


def test_labels_need_fields(tmp_path: Path) -> None:
    p = _write(tmp_path / "l.jsonl", [json.dumps({"item": ITEM, "answer": "x"})])
    with pytest.raises(UserError, match=r"l\.jsonl:1: missing field 'hit'"):
        load_labels(p)


def test_torn_last_line_is_cut(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text('{"id": "a"}\n{"id": "b", "mod', encoding="utf-8")
    assert read_resumable_jsonl(p) == [{"id": "a"}]
    assert p.read_text(encoding="utf-8") == '{"id": "a"}\n'


def test_skip_invalid_records_bad_lines_and_goes_on(tmp_path: Path, cli) -> None:  # noqa: ANN001
    """``eval`` / ``grade --skip-invalid``: bad lines land in OUT/invalid-lines.jsonl with file:line and reason;
    without the flag the first one stops with one error line (exit 2)."""
    src = _write(tmp_path / "items.jsonl", [json.dumps(ITEM), "{broken", json.dumps({"id": "x"}),
                                            json.dumps({**ITEM, "id": "b"}), json.dumps(ITEM)])
    bad = cli("eval", "--eval-set", str(src), "--model", "baseline:prior", "-o", str(tmp_path / "o1"),
              workspace=tmp_path / "w")
    assert bad.returncode == 2 and "items.jsonl:2" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    ok = cli("-q", "eval", "--eval-set", str(src), "--model", "baseline:prior", "-o", str(tmp_path / "o2"),
             "--skip-invalid", workspace=tmp_path / "w")
    assert ok.returncode == 0, ok.stderr
    rep = json.loads(ok.stdout)
    assert rep["counts"]["items"] == 2 and rep["counts"]["skipped invalid lines"] == 3
    rows = [json.loads(x) for x in (tmp_path / "o2" / "invalid-lines.jsonl").read_text().splitlines()]
    assert [r["where"].rsplit(":", 1)[1] for r in rows] == ["2", "3", "5"]
    assert "JSON" in rows[0]["reason"] and "duplicate" in rows[2]["reason"]
    answers = _write(tmp_path / "a.jsonl", [json.dumps({"id": "a", "model": "m", "answer": "1. wrong split"}),
                                            json.dumps({"id": "b"})])
    g = cli("-q", "grade", "--eval-set", str(src), "--answers", str(answers), "-o", str(tmp_path / "g"),
            "--skip-invalid", workspace=tmp_path / "w")
    assert g.returncode == 0, g.stderr
    assert json.loads(g.stdout)["counts"]["skipped invalid lines"] == 4  # 3 item lines + 1 answer line
