"""``reprodiag merge WS…``: fold workspaces (e.g. the parts of a ``mine --shard I/N`` crawl) into one.

Each source is opened as a workspace (which brings it to the current schema) and attached to the target's
database; everything is copied in **one transaction**, so a killed merge leaves the target as it was and
a rerun gives the same result. Merging the same source twice adds nothing. Per table:

* ``threads``: one row per thread id; the **newest content** wins (later ``updated_at``; on a tie the
  row already in the target stays).
* ``sync_checkpoints``: one row per (repository, kind); the more advanced one wins (a finished list over
  an unfinished one, then the later high-water mark, then the later update), so an incremental re-mine
  of the merged workspace asks GitHub only for what changed since.
* ``repo_status``: the later update wins.
* ``records``: rows the target lacks are added; where both hold a record of the thread, an LLM reader's
  record replaces the offline reader's (``extractor.backend`` "rules"), else the target's stays.
* ``repos`` and ``papers`` (the index), ``cache`` (content-keyed: equal keys hold equal values),
  ``decisions``, ``rejects``, ``cases`` and ``verdicts``: rows the target lacks are added, the target's rows stay (each stage re-checks them against the threads'
  content hashes, so a decision made on older content is made again by the next ``filter``).
* ``scored`` is not copied: scoring decides near-duplicates and splits over the whole corpus, so run
  ``score`` on the merged workspace. ``runs`` (each workspace's history) are not copied; the merge adds
  its own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from reprodiag.errors import UserError
from reprodiag.schema import StageReport
from reprodiag.store import DB_NAME, Store, StoreError

_ADD_MISSING = ("repos", "papers", "cache", "decisions", "rejects", "cases", "verdicts")
_NEWER_THREAD = "excluded.updated_at > threads.updated_at"
_NEWER_STATUS = "excluded.updated > repo_status.updated"
_MORE_ADVANCED = (
    "(excluded.complete, coalesce(excluded.high_water, ''), excluded.updated) > "
    "(sync_checkpoints.complete, coalesce(sync_checkpoints.high_water, ''), sync_checkpoints.updated)"
)
#: An LLM reader's record replaces the offline reader's (the datasets come from the reader that was measured).
_LLM_OVER_OFFLINE = ("json_extract(excluded.doc, '$.extractor.backend') != 'rules' AND "
                     "json_extract(records.doc, '$.extractor.backend') = 'rules'")
#: Upserted tables: (table, conflict columns, condition for the source row to replace the target's).
_UPSERT = (("threads", ("id",), _NEWER_THREAD), ("sync_checkpoints", ("repo", "kind"), _MORE_ADVANCED),
           ("repo_status", ("repo",), _NEWER_STATUS), ("records", ("thread_id",), _LLM_OVER_OFFLINE))


def _columns(c: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in c.execute(f"PRAGMA {schema}.table_info({table})")]


def _source(path: Path, target: Store) -> Path:
    p = Path(path)
    if not (p / DB_NAME).is_file():
        raise UserError(f"{p} is not a workspace (no {DB_NAME} in it)")
    if p.resolve() == target.root.resolve():
        raise UserError(f"{p} is the target workspace itself")
    try:
        Store(p, create=False).close()  # brings the source to the current schema
    except StoreError as exc:
        raise UserError(f"cannot open workspace {p}: {exc}") from None
    return p / DB_NAME


def _fold(c: sqlite3.Connection, src: str, counts: dict[str, int]) -> None:
    """Copy attached database ``src`` into ``main`` by the rules of the module docstring."""
    for table, key, newer in _UPSERT:
        cols = [x for x in _columns(c, src, table) if x in _columns(c, "main", table)]
        names = ", ".join(cols)
        sets = ", ".join(f"{x}=excluded.{x}" for x in cols if x not in key)
        cur = c.execute(f"INSERT INTO main.{table}({names}) SELECT {names} FROM {src}.{table} WHERE true "
                        f"ON CONFLICT({', '.join(key)}) DO UPDATE SET {sets} WHERE {newer}")
        counts[f"{table}_written"] = counts.get(f"{table}_written", 0) + max(cur.rowcount, 0)
    for table in _ADD_MISSING:
        cols = [x for x in _columns(c, src, table) if x in _columns(c, "main", table)]
        names = ", ".join(cols)
        cur = c.execute(f"INSERT OR IGNORE INTO main.{table}({names}) SELECT {names} FROM {src}.{table}")
        counts[f"{table}_added"] = counts.get(f"{table}_added", 0) + max(cur.rowcount, 0)


#: Sources folded in one merge (SQLite attaches at most 10 databases to a connection).
MAX_SOURCES = 9


def merge_workspaces(target: Store, sources: Sequence[Path]) -> StageReport:
    """Fold every workspace of ``sources`` into ``target`` (see the module docstring)."""
    if not sources:
        raise UserError("merge needs at least one source workspace: reprodiag -w TARGET merge WS [WS ...]")
    if len(sources) > MAX_SOURCES:
        raise UserError(f"merge takes at most {MAX_SOURCES} workspaces at once ({len(sources)} given): "
                        "merge them in steps")
    if len({Path(s).resolve() for s in sources}) != len(sources):
        raise UserError("a source workspace is given twice")
    dbs = [_source(s, target) for s in sources]
    counts: dict[str, int] = {"sources": len(dbs)}
    before = {t: target.count(t) for t in ("threads", "decisions", "records")}
    run_id = target.start_run("merge", {"sources": [str(s) for s in sources]})
    c = target._conn
    try:
        with target._lock:
            for n, db in enumerate(dbs):
                c.execute(f"ATTACH DATABASE ? AS src{n}", (str(db),))
            try:
                with target.transaction():  # all sources in one transaction: a killed merge changes nothing
                    for n in range(len(dbs)):
                        _fold(c, f"src{n}", counts)
            finally:
                for n in range(len(dbs)):
                    c.execute(f"DETACH DATABASE src{n}")
    except sqlite3.DatabaseError as exc:
        target.finish_run(run_id, {}, status="failed")
        raise UserError(f"merge failed, the target is unchanged: {exc}") from None
    except BaseException:
        target.finish_run(run_id, {}, status="failed")
        raise
    for t, n in before.items():
        counts[f"{t}_before"] = n
        counts[f"{t}_after"] = target.count(t)
    target.finish_run(run_id, counts)
    notes = ["scored records were not merged: run `reprodiag score` on the merged workspace (near-duplicates and "
             "splits are decided over the whole corpus)"]
    return StageReport(stage="merge", counts=counts, notes=notes)
