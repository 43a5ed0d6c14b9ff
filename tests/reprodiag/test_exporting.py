"""export_table: planted secrets absent from every export format; documents stay valid."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from reprodiag.errors import UserError
from reprodiag.exporting import export_table, read_parquet_docs
from reprodiag.schema import (
    Comment,
    Hypothesis,
    Participant,
    Quality,
    Record,
    Step,
    Symptom,
    TemporalTag,
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


def test_raw_export_keeps_personal_data_but_never_held_the_tokens(store: Store, tmp_path: Path) -> None:
    _fill(store)
    out = tmp_path / "raw.jsonl"
    report = export_table(store, "threads", out, fmt="jsonl", redact=False)
    text = out.read_text()
    assert "not redacted" in report.notes[0]
    assert EMAIL in text and "/home/jdoe" in text and "@bobmaint" in text and "alice-w" in text
    assert all(s not in text for s in (GH, OPENAI, HF))  # masked when the thread was stored
    assert "[REDACTED_GITHUB_TOKEN]" in text


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


def _fill_varied(store: Store) -> None:
    """Rows whose maps have different keys (and one empty), threads with nested replies."""
    t0 = datetime(2021, 4, 5, tzinfo=UTC)
    threads = []
    for n in range(3):
        reply = Comment(id=f"r{n}", author="carol42", body=f"reply {n} cc @alice-w", created_at=t0)
        threads.append(Thread(
            repo="lab/model", number=n + 1, kind="discussion" if n == 2 else "issue", title=f"gap {n}",
            body=TEXT if n == 0 else "plain body", author="alice-w", state="closed", created_at=t0,
            updated_at=t0, closed_at=t0 if n else None, labels=["question"] if n else [],
            comments=[Comment(id=f"c{n}", author="bobmaint", author_association="MEMBER", body=TEXT,
                              created_at=t0, replies=[reply] if n == 2 else [])]))
    store.upsert_threads(threads)
    versions = [{"torch": "1.8.1", "cuda": "11.1"}, {}, {"tensorflow": "1.15"}]
    recs = [Record(thread_id=f"lab/model#{n + 1}", repo="lab/model", problem_statement=TEXT if n == 0 else "p",
                   temporal_tag=TemporalTag(created_year=2021, framework_versions=versions[n], tier="historical",
                                            weight=0.5),
                   quality=Quality(score=n + 4, components={"resolved": 3, "code": 2} if n else {}),
                   symptom=Symptom(metric="BLEU", paper_value=32.7, obtained_value=28.4 + n),
                   hypothesis_chain=[Hypothesis(text=f"h{k}") for k in range(n)],
                   replay=Verdict(case_id="c", verdict="confirmed") if n == 1 else None,
                   stats=ThreadStats(participants=[Participant(login="alice-w", role="asker")],
                                     created_at=t0, labels=["bug"] * n))
            for n in range(3)]
    store.put_records(recs)
    store.put_scored(recs)


@pytest.mark.parametrize("table, parse", [("threads", parse_thread), ("records", parse_record),
                                          ("scored", parse_record)])
def test_parquet_rows_revalidate_and_match_jsonl(store: Store, tmp_path: Path, table: str,
                                                 parse: Callable[[object], object]) -> None:
    _fill_varied(store)
    export_table(store, table, tmp_path / "x.jsonl", fmt="jsonl")
    export_table(store, table, tmp_path / "x.parquet", fmt="parquet")
    from_jsonl = [parse(json.loads(x)) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    from_parquet = [parse(d) for d in read_parquet_docs(tmp_path / "x.parquet")]
    assert from_parquet == from_jsonl and len(from_parquet) == 3
    raw_rows = [parse(d) for d in pl.read_parquet(tmp_path / "x.parquet").to_dicts()]  # no decoder needed
    assert raw_rows == from_jsonl
    if table != "threads":
        assert [r.temporal_tag.framework_versions for r in from_parquet] == [
            {"cuda": "11.1", "torch": "1.8.1"}, {}, {"tensorflow": "1.15"}]
        # documented encoding: the map is a JSON object string in the file
        raw = pl.read_parquet(tmp_path / "x.parquet")
        assert raw.schema["temporal_tag"].to_schema()["framework_versions"] == pl.String
        assert json.loads(raw["temporal_tag"][0]["framework_versions"]) == {"cuda": "11.1", "torch": "1.8.1"}


def test_exported_parquet_feeds_score(store: Store, tmp_path: Path) -> None:
    from scoring.pipeline import run_score

    _fill_varied(store)
    export_table(store, "records", tmp_path / "r.parquet", fmt="parquet")
    report = run_score(None, input=tmp_path / "r.parquet", output=tmp_path / "s.jsonl")
    assert report.counts["records"] == 3 and report.counts["rejects"] == 0


def test_unreadable_parquet_is_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(UserError, match="Parquet"):
        read_parquet_docs(bad)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_exports_keep_hosts_versions_and_common_words(store: Store, tmp_path: Path, fmt: str) -> None:
    keep = "clone git@github.com:lab/model.git; cuDNN 8.9.2.26 with TensorRT 8.6.1.6; the data loader"
    t0 = datetime(2022, 1, 2, tzinfo=UTC)
    store.upsert_threads([Thread(repo="lab/model", number=1, kind="issue", title="gap", body=f"{keep}. {TEXT}",
                                 author="data", state="open", created_at=t0, updated_at=t0)])
    out = tmp_path / f"t.{fmt}"
    export_table(store, "threads", out, fmt=fmt)
    text, rows = _read(out, fmt)
    assert keep in text and rows[0]["author"] == "asker_0"
    for s in PLANTED:
        assert s not in text, s
