from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from reprodiag.schema import FilterDecision, Record, Thread, Verdict, parse_thread
from reprodiag.store import MIGRATIONS, Checkpoint, Store, StoreError


def thread(number: int, updated: str = "2024-01-01T00:00:00Z", body: str = "b", repo: str = "o/r",
           kind: str = "issue", comments: int = 1) -> Thread:
    return parse_thread({
        "repo": repo, "number": number, "kind": kind, "title": f"t{number}", "body": body,
        "state": "open", "created_at": "2023-01-01T00:00:00Z", "updated_at": updated,
        "comments": [{"id": f"c{number}-{i}", "body": "x", "created_at": "2023-01-02T00:00:00Z"}
                     for i in range(comments)],
    })


def test_wal_mode_and_schema_version(store: Store):
    mode = store.query("PRAGMA journal_mode")[0][0]
    assert mode == "wal"
    assert store.schema_version == len(MIGRATIONS)


def test_reopen_does_not_rerun_migrations(tmp_path: Path):
    s = Store(tmp_path / "w")
    s.upsert_threads([thread(1)])
    s.close()
    s2 = Store(tmp_path / "w")
    assert s2.count("threads") == 1
    assert s2.query("SELECT count(*) FROM schema_version")[0][0] == len(MIGRATIONS)


def test_upsert_insert_update_noop_and_stale(store: Store):
    c = store.upsert_threads([thread(1), thread(2)])
    assert (c.inserted, c.updated, c.unchanged, c.stale) == (2, 0, 0, 0)
    c = store.upsert_threads([thread(1)])
    assert (c.inserted, c.updated, c.unchanged) == (0, 0, 1)
    newer = thread(1, updated="2024-02-01T00:00:00Z", body="edited")
    assert store.upsert_threads([newer]).updated == 1
    older = thread(1, updated="2023-06-01T00:00:00Z", body="old")
    assert store.upsert_threads([older]).stale == 1
    assert store.get_thread("o/r#1").body == "edited"
    assert store.count("threads") == 2


def test_discussion_and_issue_with_same_number_do_not_collide(store: Store):
    store.upsert_threads([thread(5), thread(5, kind="discussion")])
    assert {t.id for t in store.iter_threads()} == {"o/r#5", "o/r#d5"}


def test_transaction_rolls_back_threads_and_checkpoint_together(store: Store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.upsert_threads([thread(1)])
            store.set_checkpoint(Checkpoint("o/r", "issue", cursor="abc"))
            raise RuntimeError("boom")
    assert store.count("threads") == 0
    assert store.get_checkpoint("o/r", "issue") is None
    with store.transaction():
        store.upsert_threads([thread(1)])
        store.set_checkpoint(Checkpoint("o/r", "issue", cursor="abc", high_water="2024-01-01T00:00:00Z"))
    cp = store.get_checkpoint("o/r", "issue")
    assert cp.cursor == "abc" and cp.high_water == "2024-01-01T00:00:00Z" and not cp.complete


def test_repo_status_accumulates_points(store: Store):
    store.set_repo_status("o/r", "pending")
    store.set_repo_status("o/r", "done", threads=10, points=3, requests=4)
    store.set_repo_status("o/r", "done", points=2, requests=1)
    (row,) = store.repo_status()
    assert row["threads"] == 10 and row["points"] == 5 and row["requests"] == 5


def test_cache_and_stage_tables(store: Store):
    store.cache_put("k", {"a": [1, 2]})
    assert store.cache_get("k") == {"a": [1, 2]} and store.cache_get("nope") is None
    store.put_decisions([FilterDecision(thread_id="o/r#1", is_reproduction=True, score=0.9, signals=["x"])])
    assert [d.thread_id for d in store.iter_decisions(only_positive=True)] == ["o/r#1"]
    store.put_records([Record(thread_id="o/r#1", repo="o/r", error_type="data")])
    store.put_records([Record(thread_id="o/r#1", repo="o/r", error_type="hyperparameter")])
    assert [r.error_type for r in store.iter_records()] == ["hyperparameter"]
    store.put_verdict(Verdict(case_id="c1", verdict="confirmed"))
    assert store.verdict_ids() == {"c1"}


def test_export_jsonl_and_parquet(store: Store, tmp_path: Path):
    store.upsert_threads([thread(i, comments=i % 3) for i in range(1, 6)])
    n = store.export("threads", tmp_path / "t.jsonl", "jsonl")
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert n == 5 and len(lines) == 5
    assert all(parse_thread(json.loads(line)) for line in lines)
    assert store.export("threads", tmp_path / "t.parquet", "parquet") == 5
    df = pl.read_parquet(tmp_path / "t.parquet")
    assert df.height == 5 and "comments" in df.columns
    with pytest.raises(StoreError, match="unknown table"):
        store.export("sqlite_master", tmp_path / "x.jsonl")
    with pytest.raises(StoreError, match="unknown format"):
        store.export("threads", tmp_path / "x.csv", "csv")


def test_trajectories_export_one_row_per_step(store: Store, tmp_path: Path):
    v = Verdict.model_validate({"case_id": "c", "verdict": "confirmed", "steps": [
        {"phase": "before", "command": "python a.py", "exit_code": 0, "metric": 1.0},
        {"phase": "after", "command": "python a.py --fix", "exit_code": 0, "metric": 2.0}]})
    store.put_verdict(v)
    store.export("trajectories", tmp_path / "tr.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "tr.jsonl").read_text().splitlines()]
    assert [r["phase"] for r in rows] == ["before", "after"] and rows[1]["metric"] == 2.0


def test_unusable_workspace_is_a_store_error(tmp_path: Path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        Store(f)
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "missing", create=False)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "reprodiag.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="unusable"):
        Store(bad)


WRITER = textwrap.dedent("""
    import sys
    from reprodiag.store import Store
    from reprodiag.schema import parse_thread
    s = Store(sys.argv[1])
    batch = 0
    while True:
        threads = [parse_thread({
            "repo": "o/r", "number": batch * 1000 + i, "kind": "issue", "title": "t", "body": "x" * 2000,
            "state": "open", "created_at": "2023-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
            "labels": [f"batch{batch}"],
            "comments": [{"id": f"c{batch}-{i}-{j}", "body": "y" * 500, "created_at": "2023-01-02T00:00:00Z"}
                         for j in range(20)]}) for i in range(200)]
        s.upsert_threads(threads)
        batch += 1
        print(batch, flush=True)
""")


def test_sigkill_mid_batch_leaves_valid_db_with_whole_batches(tmp_path: Path):
    ws = tmp_path / "ws"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(ws)], stdout=subprocess.PIPE, text=True)
    try:
        # wait for at least two committed batches, then kill in the middle of a later one
        for _ in range(2):
            assert proc.stdout.readline()
        time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    conn = sqlite3.connect(ws / "reprodiag.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    s = Store(ws)
    per_batch = Counter()
    for t in s.iter_threads():
        assert len(t.comments) == 20 and t.body == "x" * 2000  # no partial thread
        per_batch[t.labels[0]] += 1
    assert len(per_batch) >= 2
    assert set(per_batch.values()) == {200}  # no partial batch


def test_reader_in_other_process_works_while_writer_holds_transaction(tmp_path: Path):
    s = Store(tmp_path / "ws")
    s.upsert_threads([thread(1)])
    reader = textwrap.dedent("""
        import sys
        from reprodiag.store import Store
        print(Store(sys.argv[1]).count("threads"))
    """)
    with s.transaction():
        s.upsert_threads([thread(2)])
        out = subprocess.run([sys.executable, "-c", reader, str(tmp_path / "ws")], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "1"  # sees the last committed state, not blocked
    assert s.count("threads") == 2
