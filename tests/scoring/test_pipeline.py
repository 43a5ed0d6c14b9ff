"""run_score / score_batch: workspace and file modes, rejects, idempotent reruns, CLI errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from reprodiag.errors import UserError
from reprodiag.schema import Record, parse_record
from reprodiag.store import Store
from scoring.config import ScoreConfig
from scoring.pipeline import run_score, score_batch

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _batch(make_record: Callable[..., Record]) -> list[Record]:
    recs = [make_record(i, problem_statement=f"Record {i}: top-1 is {70 + i / 10} vs paper 81.8, "
                                             f"config variant {i * 31 % 97}, seed {i}, run {i * 7 % 13}.")
            for i in range(30)]
    recs.append(make_record(100, is_reproduction=False))
    recs.append(make_record(101, comments=0))
    recs.append(make_record(102, problem_statement=f"token {GH} at /home/alice/x; @alice-w please"))
    recs.append(make_record(103, has_code_snippet=False, is_resolved=False, resolution_type="unresolved_valuable",
                            diagnostic_depth=5))
    return recs


def test_score_batch_counts_and_mix(make_record: Callable[..., Record]) -> None:
    res = score_batch(_batch(make_record), ScoreConfig())
    c = res.report.counts
    assert c["records"] == 34 and c["kept"] + c["dropped"] == 34
    assert c["dropped_not_reproduction"] == 1 and c["dropped_no_replies"] == 1
    assert c["kept_unresolved"] == 1 and c["kept_resolved"] == c["kept"] - 1
    assert c["split_train"] + c["split_validation"] + c["split_test"] == c["kept"]
    assert any("70%/30%" in n for n in res.report.notes)
    assert all(r.split is None for r in res.records if not r.quality.keep)
    assert c["redacted_github_token"] == 1
    assert GH not in json.dumps([r.model_dump(mode="json") for r in res.records])


def test_workspace_mode_is_idempotent_and_records_rejects(store: Store, make_record: Callable[..., Record],
                                                          tmp_path: Path) -> None:
    store.put_records(_batch(make_record))
    store._conn.execute("INSERT INTO records(thread_id, repo, error_type, doc, updated) "
                        "VALUES ('x/y#1','x/y','data','{not json',0)")
    store._conn.execute("INSERT INTO records(thread_id, repo, error_type, doc, updated) "
                        "VALUES ('x/y#2','x/y','data','{\"thread_id\": \"x/y#2\"}',0)")
    first = run_score(store, input=None, output=None, threshold=4, rejects=tmp_path / "rej.jsonl", seed=0)
    docs1 = [r.model_dump(mode="json") for r in store.iter_scored(kept_only=False)]
    second = run_score(store, input=None, output=None, threshold=4, rejects=None, seed=0)
    docs2 = [r.model_dump(mode="json") for r in store.iter_scored(kept_only=False)]
    assert docs1 == docs2 and len(docs1) == 34
    assert first.counts == second.counts and first.counts["rejects"] == 2
    rej = store.query("SELECT item_id, reason FROM rejects WHERE stage='score' ORDER BY item_id")
    assert [r[0] for r in rej] == ["x/y#1", "x/y#2"] and "repo" in rej[1][1]
    lines = [json.loads(x) for x in (tmp_path / "rej.jsonl").read_text().splitlines()]
    assert {x["thread_id"] for x in lines} == {"x/y#1", "x/y#2"}


def test_file_mode_rejects_bad_lines_and_writes_all_records(make_record: Callable[..., Record],
                                                            tmp_path: Path) -> None:
    good = [r.model_dump_json() for r in _batch(make_record)[:5]]
    lines = [good[0], "{broken json", good[1], '{"thread_id": "a/b#9", "repo": "a/b", "error_type": "oops"}',
             "", good[2], "[1, 2]", good[2], good[3], good[4]]
    src = tmp_path / "records.jsonl"
    src.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe not utf8\n")
    out, rej = tmp_path / "scored.jsonl", tmp_path / "rejects.jsonl"
    report = run_score(None, input=src, output=out, threshold=4, rejects=rej, seed=0)
    scored = [parse_record(json.loads(x)) for x in out.read_text().splitlines()]
    assert len(scored) == 5 and report.counts["records"] == 5
    rejects = [json.loads(x) for x in rej.read_text().splitlines()]
    assert report.counts["rejects"] == len(rejects) == 5
    by_line = {x["line"]: x for x in rejects}
    assert "malformed JSON" in by_line[2]["reason"]
    assert by_line[4]["thread_id"] == "a/b#9" and "error_type" in by_line[4]["reason"]
    assert "expected a JSON object" in by_line[7]["reason"]
    assert "duplicate" in by_line[8]["reason"]
    assert "UTF-8" in by_line[11]["reason"]


def test_unreadable_input_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read"):
        run_score(None, input=tmp_path / "missing.jsonl", output=None, threshold=4, rejects=None, seed=0)
    with pytest.raises(UserError, match="directory"):
        run_score(None, input=tmp_path, output=None, threshold=4, rejects=None, seed=0)


def test_cli_exit_2_on_unreadable_input(cli: Callable[..., object], tmp_path: Path) -> None:
    proc = cli("score", "--input", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2, proc.stderr
    assert "cannot read" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_scores_a_file(cli: Callable[..., object], make_record: Callable[..., Record], tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text("\n".join(r.model_dump_json() for r in _batch(make_record)) + "\n{bad\n")
    out = tmp_path / "s.jsonl"
    proc = cli("-q", "score", "--input", str(src), "--output", str(out), "--rejects", str(tmp_path / "rj.jsonl"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["counts"]["records"] == 34 and report["counts"]["rejects"] == 1
    assert GH not in out.read_text()
