"""Credentials never rest in the workspace: tokens and keys are masked when a thread is stored (counted per
thread), older workspaces are masked by the migration, and after the whole demo (which mines threads with
planted tokens through the fake GitHub) no byte of the workspace holds one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reprodiag.schema import parse_thread
from reprodiag.store import MIGRATIONS, Store

GHP = "ghp_" + "Q" * 36
SK = "sk-proj-" + "AbCdEfGh0123456789" * 3
PLANTED = (GHP, SK, "hunter2-Zx9Qv7Lm3Kp8Wr5T")


def _thread(number: int = 1):  # noqa: ANN202
    return parse_thread({
        "repo": "o/r", "number": number, "kind": "issue", "title": "BLEU 24.1 vs 27.6", "state": "open",
        "body": f"My run: export GITHUB_TOKEN={GHP}\nOPENAI_API_KEY={SK}\nBLEU 24.1, paper 27.6",
        "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-02T00:00:00Z", "author": "anna",
        "comments": [{"id": "c1", "body": f"Authorization: token={PLANTED[2]} was in your log, revoke it",
                      "created_at": "2024-01-02T00:00:00Z"}],
    })


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_tokens_are_masked_at_ingest_and_counted(tmp_path: Path) -> None:
    with Store(tmp_path / "w") as s:
        s.upsert_threads([_thread()])
        t = s.get_thread("o/r#1")
        assert "BLEU 24.1, paper 27.6" in t.body and "[REDACTED_" in t.body and "[REDACTED_" in t.comments[0].body
        assert s.query("SELECT secrets_masked FROM threads")[0][0] == 3
        assert s.upsert_threads([_thread()]).unchanged == 1  # same content: masked the same way, a no-op
        assert t.author == "anna"  # personal data stays for export-time redaction
    data = _all_bytes(tmp_path / "w")
    for secret in PLANTED:
        assert secret.encode() not in data


def test_a_workspace_from_before_masking_is_masked_by_the_migration(tmp_path: Path) -> None:
    ws = tmp_path / "old"
    ws.mkdir()
    con = sqlite3.connect(ws / "reprodiag.sqlite")
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    con.executescript(MIGRATIONS[0])
    con.execute("INSERT INTO schema_version(version) VALUES (1)")
    doc = _thread().model_dump_json()
    con.execute("INSERT INTO threads(id, repo, number, kind, state, created_at, updated_at, content_hash, doc) "
                "VALUES ('o/r#1','o/r',1,'issue','open','2024-01-01','2024-01-02','x',?)", (doc,))
    con.commit()
    con.close()
    with Store(ws) as s:
        assert s.schema_version == len(MIGRATIONS)
        assert GHP not in s.get_thread("o/r#1").body
        s.query("PRAGMA wal_checkpoint(TRUNCATE)")
    for secret in PLANTED:  # secure_delete: the overwritten text left no copy in free pages
        assert secret.encode() not in _all_bytes(ws)


def test_no_byte_of_the_demo_workspace_holds_a_planted_token(demo_workspace: Path) -> None:
    from reprodiag.sample import load_sample_threads

    planted = {w for t in load_sample_threads() for text in [t.body] + [c.body for c in t.all_comments()]
               for w in text.replace("=", " ").split() if w.startswith(("ghp_", "sk-"))}
    assert planted  # the sample corpus plants them (and the fake GitHub serves them)
    data = _all_bytes(demo_workspace)
    for secret in planted:
        assert secret.encode() not in data, secret
