"""export_table: planted secrets absent from every export format; documents stay valid."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from reprodiag.errors import UserError
from reprodiag.exporting import export_table
from reprodiag.schema import (
    Comment,
    Participant,
    Record,
    Step,
    Thread,
    ThreadStats,
    Verdict,
    parse_record,
    parse_thread,
)
from reprodiag.store import Store

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OPENAI = "sk-proj-" + "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe"
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
EMAIL = "jane.doe@example.org"
PLANTED = [GH, OPENAI, HF, EMAIL, "alice-w", "bobmaint", "/home/jdoe"]
TEXT = f"token {GH}, key {OPENAI}, hub {HF}, mail {EMAIL}, log /home/jdoe/run.txt, cc @bobmaint"


def _fill(store: Store) -> None:
    t0 = datetime(2022, 1, 2, tzinfo=UTC)
    store.upsert_threads([Thread(
        repo="lab/model", number=1, kind="issue", title="BLEU gap", body=TEXT, author="alice-w", state="closed",
        created_at=t0, updated_at=t0,
        comments=[Comment(id="c1", author="bobmaint", author_association="MEMBER", body=TEXT, created_at=t0)])])
    rec = Record(thread_id="lab/model#1", repo="lab/model", problem_statement=TEXT, root_cause=TEXT,
                 stats=ThreadStats(participants=[Participant(login="alice-w", role="asker"),
                                                 Participant(login="bobmaint", role="maintainer")]))
    store.put_records([rec])
    store.put_scored([rec])
    store.put_verdict(Verdict(case_id="case1", verdict="confirmed", thread_id="lab/model#1", reason=TEXT,
                              steps=[Step(phase="before", command=f"HF_TOKEN={HF} python /home/jdoe/run.py",
                                          stdout_tail=TEXT)]))


def _read(path: Path, fmt: str) -> tuple[str, list[dict]]:
    if fmt == "jsonl":
        text = path.read_text(encoding="utf-8")
        return text, [json.loads(x) for x in text.splitlines()]
    rows = pl.read_parquet(path).to_dicts()
    return json.dumps(rows, default=str), rows


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("table", ["threads", "records", "scored", "verdicts", "trajectories"])
def test_planted_secrets_absent_from_exports(store: Store, tmp_path: Path, fmt: str, table: str) -> None:
    _fill(store)
    out = tmp_path / f"{table}.{fmt}"
    report = export_table(store, table, out, fmt=fmt, redact=True)
    text, rows = _read(out, fmt)
    assert report.counts["rows"] == len(rows) >= 1
    for s in PLANTED:
        assert s not in text, (table, fmt, s)
    assert report.counts["redacted"] > 0
    if table == "threads" and fmt == "jsonl":
        t = parse_thread(rows[0])
        assert t.author == "asker_0" and t.comments[0].author == "maintainer_0"
    if table in ("records", "scored") and fmt == "jsonl":
        assert parse_record(rows[0]).thread_id == "lab/model#1"


def test_raw_export_keeps_text(store: Store, tmp_path: Path) -> None:
    _fill(store)
    out = tmp_path / "raw.jsonl"
    report = export_table(store, "threads", out, fmt="jsonl", redact=False)
    assert GH in out.read_text() and "not redacted" in report.notes[0]


def test_bad_arguments_are_user_errors(store: Store, tmp_path: Path) -> None:
    with pytest.raises(UserError):
        export_table(store, "nope", tmp_path / "x.jsonl", fmt="jsonl", redact=True)
    with pytest.raises(UserError):
        export_table(store, "threads", tmp_path / "x.csv", fmt="csv", redact=True)
    with pytest.raises(UserError):
        export_table(store, "threads", tmp_path / "missing" / "x.jsonl", fmt="jsonl", redact=True)


def test_cli_export_redacts_by_default(store: Store, tmp_path: Path, cli: Callable[..., object]) -> None:
    _fill(store)
    out = tmp_path / "threads.parquet"
    proc = cli("export", "threads", "--format", "parquet", "-o", str(out), workspace=store.root)
    assert proc.returncode == 0, proc.stderr
    text, rows = _read(out, "parquet")
    assert rows and all(s not in text for s in PLANTED)
    assert GH not in proc.stdout + proc.stderr
