"""The workspace: one directory holding ``reprodiag.sqlite`` (WAL mode).

Every stage reads and writes through :class:`Store`. Writes happen in
transactions, so a process killed at any moment (SIGKILL included) leaves a
valid database in which each batch is either fully present or absent. Readers
in other processes keep working while a writer runs (WAL).

Use ``with store.transaction():`` to group several writes atomically, e.g. a
page of threads together with the sync checkpoint that points past it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprodiag.schema import (
    FilterDecision,
    Record,
    Thread,
    Verdict,
)

DB_NAME = "reprodiag.sqlite"
#: Rows per query of the paged readers (``Store.paged``).
PAGE = 500

#: Ordered migrations; index + 1 is the schema version they lead to.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE repos (
        repo TEXT PRIMARY KEY,
        stars INTEGER,
        archived INTEGER,
        has_issues INTEGER,
        has_discussions INTEGER,
        official INTEGER,
        framework TEXT,
        renamed_from TEXT,
        meta TEXT NOT NULL DEFAULT '{}',
        added_at REAL NOT NULL
    );
    CREATE TABLE papers (
        paper_url TEXT NOT NULL,
        repo TEXT NOT NULL,
        paper_title TEXT,
        paper_arxiv_id TEXT,
        is_official INTEGER,
        mentioned_in_paper INTEGER,
        mentioned_in_github INTEGER,
        framework TEXT,
        PRIMARY KEY (paper_url, repo)
    );
    CREATE INDEX papers_repo ON papers(repo);
    CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        kind TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        doc TEXT NOT NULL
    );
    CREATE INDEX threads_repo ON threads(repo, kind);
    CREATE TABLE sync_checkpoints (
        repo TEXT NOT NULL,
        kind TEXT NOT NULL,
        cursor TEXT,
        high_water TEXT,
        run_high_water TEXT,
        complete INTEGER NOT NULL DEFAULT 0,
        page_size INTEGER,
        updated REAL NOT NULL,
        PRIMARY KEY (repo, kind)
    );
    CREATE TABLE repo_status (
        repo TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        threads INTEGER NOT NULL DEFAULT 0,
        points INTEGER NOT NULL DEFAULT 0,
        requests INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        updated REAL NOT NULL
    );
    CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        created REAL NOT NULL
    );
    CREATE TABLE decisions (
        thread_id TEXT PRIMARY KEY,
        is_reproduction INTEGER NOT NULL,
        score REAL NOT NULL,
        doc TEXT NOT NULL
    );
    CREATE TABLE records (
        thread_id TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        error_type TEXT NOT NULL,
        doc TEXT NOT NULL,
        updated REAL NOT NULL
    );
    CREATE TABLE scored (
        thread_id TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        keep INTEGER NOT NULL,
        drop_reason TEXT,
        split TEXT,
        doc TEXT NOT NULL
    );
    CREATE TABLE rejects (
        stage TEXT NOT NULL,
        item_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (stage, item_id)
    );
    CREATE TABLE cases (
        case_id TEXT PRIMARY KEY,
        path TEXT,
        status TEXT NOT NULL,
        thread_id TEXT,
        missing TEXT,
        spec TEXT
    );
    CREATE TABLE verdicts (
        case_id TEXT PRIMARY KEY,
        verdict TEXT NOT NULL,
        thread_id TEXT,
        doc TEXT NOT NULL,
        updated REAL NOT NULL
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        stage TEXT NOT NULL,
        started REAL NOT NULL,
        finished REAL,
        status TEXT NOT NULL,
        counts TEXT NOT NULL DEFAULT '{}',
        args TEXT NOT NULL DEFAULT '{}'
    );
    """,
    # 2: credentials are masked when a thread is stored (existing rows are masked by _mask_stored_threads)
    """
    ALTER TABLE threads ADD COLUMN secrets_masked INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: people's review decisions on eval candidates and sampled SFT rows (reprodiag/review/decisions.py);
    # append-only: a reviewer's latest row on an item is their decision, earlier rows are its history
    """
    CREATE TABLE reviews (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        item_id TEXT NOT NULL,
        queue TEXT NOT NULL,
        reviewer TEXT NOT NULL,
        decided REAL NOT NULL,
        decision TEXT NOT NULL,
        reason TEXT,
        before TEXT NOT NULL,
        after TEXT,
        record_digest TEXT NOT NULL,
        source TEXT NOT NULL
    );
    CREATE INDEX reviews_item ON reviews(item_id, reviewer, id);
    """,
]


def _mask_stored_threads(c: sqlite3.Connection) -> None:
    """Migration 2's data step: mask tokens and keys in threads stored before ingest masking existed."""
    from reprodiag.redact import mask_thread_secrets

    rows = c.execute("SELECT id, doc FROM threads").fetchall()
    for tid, doc in rows:
        t, n = mask_thread_secrets(Thread.model_validate_json(doc))
        if n:
            raw = _dumps(t.model_dump(mode="json"))
            c.execute("UPDATE threads SET doc=?, content_hash=?, secrets_masked=? WHERE id=?",
                      (raw, hashlib.sha256(raw.encode("utf-8")).hexdigest(), n, tid))


#: Python steps run in the same transaction right after a migration's SQL (version → step).
POST_MIGRATION = {2: _mask_stored_threads}

#: Tables ``export`` accepts, mapped to how their rows become JSON documents.
EXPORTABLE = ("threads", "records", "verdicts", "trajectories", "scored", "decisions", "repos", "papers",
              "repo_status", "rejects", "cases", "runs", "reviews")


class StoreError(RuntimeError):
    """The workspace cannot be opened or used (one-line message)."""


@dataclass(frozen=True)
class UpsertCounts:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    stale: int = 0

    def __add__(self, other: UpsertCounts) -> UpsertCounts:
        return UpsertCounts(
            self.inserted + other.inserted,
            self.updated + other.updated,
            self.unchanged + other.unchanged,
            self.stale + other.stale,
        )


@dataclass(frozen=True)
class Checkpoint:
    """Sync state of one (repo, kind).

    ``cursor``: GraphQL end cursor of the last committed page of the running
    pass. ``high_water``: newest ``updatedAt`` from the last *completed* pass
    (the ``since`` of the next incremental pass). ``run_high_water``: newest
    ``updatedAt`` seen so far in the running pass. ``complete``: the last pass
    finished.
    """

    repo: str
    kind: str
    cursor: str | None = None
    high_water: str | None = None
    run_high_water: str | None = None
    complete: bool = False
    page_size: int | None = None


def _dumps(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


class Store:
    """A workspace directory. Safe to share between threads of one process."""

    def __init__(self, root: str | Path, *, create: bool = True) -> None:
        self.root = Path(root)
        if not self.root.exists():
            if not create:
                raise StoreError(f"workspace {self.root} does not exist (run a stage first, or pass --workspace)")
            try:
                self.root.mkdir(parents=True)
            except OSError as exc:
                raise StoreError(f"cannot create workspace {self.root}: {exc.strerror}") from None
        elif not self.root.is_dir():
            raise StoreError(f"workspace {self.root} is not a directory")
        self.path = self.root / DB_NAME
        try:
            self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA busy_timeout=60000")
            # deleted or overwritten content is zeroed, so text masked after the fact leaves no copy behind
            self._conn.execute("PRAGMA secure_delete=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"workspace database {self.path} is unusable: {exc}") from None
        self._lock = threading.RLock()
        self._depth = 0

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self) -> None:
        c = self._conn
        c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = c.execute("SELECT max(version) FROM schema_version").fetchone()
        current = row[0] or 0
        for version, sql in enumerate(MIGRATIONS, start=1):
            if version <= current:
                continue
            c.execute("BEGIN IMMEDIATE")
            try:
                again = c.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0
                if again < version:
                    for stmt in sql.split(";"):
                        if stmt.strip():
                            c.execute(stmt)
                    if version in POST_MIGRATION:
                        POST_MIGRATION[version](c)
                    c.execute("INSERT INTO schema_version(version) VALUES (?)", (version,))
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    @property
    def schema_version(self) -> int:
        return self._conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Group writes atomically. Re-entrant: nested blocks join the outer one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self._conn
            except BaseException:
                self._depth = 0
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._depth = 0
                self._conn.execute("COMMIT")

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """Run a read-only SQL query and return rows (tuples)."""
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def count(self, table: str, where: str = "", params: Iterable[Any] = ()) -> int:
        if table not in EXPORTABLE and table not in ("cache", "sync_checkpoints"):
            raise StoreError(f"unknown table {table!r}")
        sql = f"SELECT count(*) FROM {table}" + (f" WHERE {where}" if where else "")
        return self.query(sql, params)[0][0]

    # ------------------------------------------------------------------ threads

    def upsert_threads(self, threads: Iterable[Thread]) -> UpsertCounts:
        """Insert or update threads by id, atomically for the whole batch.

        A thread replaces the stored one when its ``updated_at`` is newer or
        equal with different content; identical content is a no-op; an older
        ``updated_at`` is ignored (counted as ``stale``). Tokens and keys in
        its text are masked first (:func:`reprodiag.redact.mask_thread_secrets`;
        the count is the row's ``secrets_masked``): credentials never rest in
        the workspace.
        """
        from reprodiag.redact import mask_thread_secrets

        ins = upd = same = stale = 0
        with self.transaction() as c:
            for t in threads:
                t, masked = mask_thread_secrets(t)
                doc = t.model_dump(mode="json")
                raw = _dumps(doc)  # field order is the model's: canonical without sorting
                h = hashlib.sha256(raw.encode("utf-8")).hexdigest()
                tid = t.id
                row = c.execute("SELECT updated_at, content_hash FROM threads WHERE id=?", (tid,)).fetchone()
                if row is not None:
                    if row[1] == h:
                        same += 1
                        continue
                    if row[0] > doc["updated_at"]:
                        stale += 1
                        continue
                c.execute(
                    "INSERT INTO threads(id, repo, number, kind, state, created_at, updated_at, content_hash, doc,"
                    " secrets_masked) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET"
                    " state=excluded.state, updated_at=excluded.updated_at, content_hash=excluded.content_hash,"
                    " doc=excluded.doc, secrets_masked=excluded.secrets_masked",
                    (tid, t.repo, t.number, t.kind, t.state, doc["created_at"], doc["updated_at"], h, raw, masked),
                )
                if row is None:
                    ins += 1
                else:
                    upd += 1
        return UpsertCounts(ins, upd, same, stale)

    def get_thread(self, tid: str) -> Thread | None:
        row = self.query("SELECT doc FROM threads WHERE id=?", (tid,))
        return Thread.model_validate_json(row[0][0]) if row else None

    def iter_threads(self, repo: str | None = None, ids: Iterable[str] | None = None) -> Iterator[Thread]:
        """Threads ordered by id (optionally one repository, or given ids), read a page at a time."""
        if ids is not None:
            for tid in ids:
                t = self.get_thread(tid)
                if t is not None:
                    yield t
            return
        where, params = ("repo=?", [repo]) if repo else ("", [])
        for _, doc in self.paged("threads", "id", "doc", where, params):
            yield Thread.model_validate_json(doc)

    def paged(self, table: str, key: str, cols: str, where: str = "", params: Iterable[Any] = (),
              page: int = PAGE) -> Iterator[tuple[Any, ...]]:
        """``(key, *cols)`` rows of ``table`` in ``key`` order, ``page`` rows per query (keyset pagination:
        memory is bounded by a page, and rows written meanwhile with a larger key are still read)."""
        last: Any = ""
        params = list(params)
        cond = f" AND ({where})" if where else ""
        while True:
            rows = self.query(f"SELECT {key}, {cols} FROM {table} WHERE {key} > ?{cond} ORDER BY {key} LIMIT ?",
                              [last, *params, page])
            yield from (tuple(r) for r in rows)
            if len(rows) < page:
                return
            last = rows[-1][0]

    def thread_high_water(self, repo: str, kind: str) -> str | None:
        row = self.query("SELECT max(updated_at) FROM threads WHERE repo=? AND kind=?", (repo, kind))
        return row[0][0]

    # ------------------------------------------------------------------ repos & papers

    def upsert_repo(self, repo: str, **fields: Any) -> None:
        cols = ("stars", "archived", "has_issues", "has_discussions", "official", "framework", "renamed_from")
        known = {k: fields.pop(k) for k in list(fields) if k in cols}
        meta = fields
        with self.transaction() as c:
            row = c.execute("SELECT meta FROM repos WHERE repo=?", (repo,)).fetchone()
            if row is None:
                c.execute("INSERT INTO repos(repo, meta, added_at) VALUES (?,?,?)", (repo, _dumps(meta), time.time()))
            elif meta:
                merged = {**json.loads(row[0]), **meta}
                c.execute("UPDATE repos SET meta=? WHERE repo=?", (_dumps(merged), repo))
            for k, v in known.items():
                if v is not None:
                    c.execute(f"UPDATE repos SET {k}=? WHERE repo=?", (v, repo))

    def remove_repo(self, repo: str) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM repos WHERE repo=?", (repo,))

    def repos(self) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT repo, stars, archived, has_issues, has_discussions, official, framework, renamed_from, meta"
            " FROM repos ORDER BY repo"
        )
        keys = ("repo", "stars", "archived", "has_issues", "has_discussions", "official", "framework", "renamed_from")
        out = []
        for r in rows:
            d = dict(zip(keys, r[:-1], strict=True))
            d["meta"] = json.loads(r[-1])
            out.append(d)
        return out

    def add_paper_links(self, links: Iterable[dict[str, Any]]) -> int:
        n = 0
        with self.transaction() as c:
            for link in links:
                c.execute(
                    "INSERT INTO papers(paper_url, repo, paper_title, paper_arxiv_id, is_official,"
                    " mentioned_in_paper, mentioned_in_github, framework) VALUES (?,?,?,?,?,?,?,?)"
                    " ON CONFLICT(paper_url, repo) DO UPDATE SET paper_title=excluded.paper_title,"
                    " paper_arxiv_id=excluded.paper_arxiv_id, is_official=excluded.is_official,"
                    " mentioned_in_paper=excluded.mentioned_in_paper,"
                    " mentioned_in_github=excluded.mentioned_in_github, framework=excluded.framework",
                    (
                        link.get("paper_url") or "",
                        link["repo"],
                        link.get("paper_title"),
                        link.get("paper_arxiv_id"),
                        _opt_bool(link.get("is_official")),
                        _opt_bool(link.get("mentioned_in_paper")),
                        _opt_bool(link.get("mentioned_in_github")),
                        link.get("framework"),
                    ),
                )
                n += 1
        return n

    def papers_for(self, repo: str) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT paper_url, paper_title, paper_arxiv_id, is_official FROM papers WHERE repo=? ORDER BY paper_url",
            (repo,),
        )
        return [dict(zip(("paper_url", "paper_title", "paper_arxiv_id", "is_official"), r, strict=True)) for r in rows]

    # ------------------------------------------------------------------ sync state

    def get_checkpoint(self, repo: str, kind: str) -> Checkpoint | None:
        rows = self.query(
            "SELECT cursor, high_water, run_high_water, complete, page_size FROM sync_checkpoints"
            " WHERE repo=? AND kind=?",
            (repo, kind),
        )
        if not rows:
            return None
        cur, hw, rhw, complete, ps = rows[0]
        return Checkpoint(repo, kind, cur, hw, rhw, bool(complete), ps)

    def set_checkpoint(self, cp: Checkpoint) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO sync_checkpoints(repo, kind, cursor, high_water, run_high_water, complete, page_size,"
                " updated) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(repo, kind) DO UPDATE SET cursor=excluded.cursor,"
                " high_water=excluded.high_water, run_high_water=excluded.run_high_water,"
                " complete=excluded.complete, page_size=excluded.page_size, updated=excluded.updated",
                (cp.repo, cp.kind, cp.cursor, cp.high_water, cp.run_high_water, int(cp.complete), cp.page_size,
                 time.time()),
            )

    def set_repo_status(
        self,
        repo: str,
        status: str,
        *,
        threads: int | None = None,
        points: int = 0,
        requests: int = 0,
        last_error: str | None = None,
    ) -> None:
        """Set a repository's mining status; ``points``/``requests`` are added to the totals."""
        with self.transaction() as c:
            c.execute(
                "INSERT INTO repo_status(repo, status, threads, points, requests, last_error, updated)"
                " VALUES (?,?,?,?,?,?,?) ON CONFLICT(repo) DO UPDATE SET status=excluded.status,"
                " threads=CASE WHEN ? IS NULL THEN repo_status.threads ELSE excluded.threads END,"
                " points=repo_status.points+excluded.points, requests=repo_status.requests+excluded.requests,"
                " last_error=excluded.last_error, updated=excluded.updated",
                (repo, status, threads or 0, points, requests, last_error, time.time(), threads),
            )

    def repo_status(self) -> list[dict[str, Any]]:
        rows = self.query("SELECT repo, status, threads, points, requests, last_error FROM repo_status ORDER BY repo")
        keys = ("repo", "status", "threads", "points", "requests", "last_error")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # ------------------------------------------------------------------ cache

    def cache_get(self, key: str) -> Any | None:
        rows = self.query("SELECT value FROM cache WHERE key=?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def cache_put(self, key: str, value: Any) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO cache(key, value, created) VALUES (?,?,?) ON CONFLICT(key) DO UPDATE SET"
                " value=excluded.value, created=excluded.created",
                (key, _dumps(value), time.time()),
            )

    # ------------------------------------------------------------------ stage outputs

    def put_decisions(self, decisions: Iterable[FilterDecision]) -> int:
        n = 0
        with self.transaction() as c:
            for d in decisions:
                c.execute(
                    "INSERT OR REPLACE INTO decisions(thread_id, is_reproduction, score, doc) VALUES (?,?,?,?)",
                    (d.thread_id, int(d.is_reproduction), d.score, _dumps(d.model_dump(mode="json"))),
                )
                n += 1
        return n

    def iter_decisions(self, only_positive: bool = False) -> Iterator[FilterDecision]:
        for _, doc in self.paged("decisions", "thread_id", "doc", "is_reproduction=1" if only_positive else ""):
            yield FilterDecision.model_validate_json(doc)

    def put_records(self, records: Iterable[Record]) -> int:
        n = 0
        now = time.time()
        with self.transaction() as c:
            for r in records:
                c.execute(
                    "INSERT OR REPLACE INTO records(thread_id, repo, error_type, doc, updated) VALUES (?,?,?,?,?)",
                    (r.thread_id, r.repo, r.error_type, _dumps(r.model_dump(mode="json")), now),
                )
                n += 1
        return n

    def iter_records(self, repo: str | None = None) -> Iterator[Record]:
        where, params = ("repo=?", [repo]) if repo else ("", [])
        for _, doc in self.paged("records", "thread_id", "doc", where, params):
            yield Record.model_validate_json(doc)

    def record_ids(self) -> set[str]:
        return {r[0] for r in self.query("SELECT thread_id FROM records")}

    def put_scored(self, records: Iterable[Record], *, replace_all: bool = False) -> int:
        """Store scored records (kept and dropped). ``replace_all`` swaps the whole table atomically."""
        n = 0
        with self.transaction() as c:
            if replace_all:
                c.execute("DELETE FROM scored")
            for r in records:
                c.execute(
                    "INSERT OR REPLACE INTO scored(thread_id, repo, keep, drop_reason, split, doc) VALUES (?,?,?,?,?,?)",
                    (r.thread_id, r.repo, int(r.quality.keep), r.quality.drop_reason, r.split,
                     _dumps(r.model_dump(mode="json"))),
                )
                n += 1
        return n

    def put_scored_rows(self, rows: Iterable[tuple[str, str, bool, str | None, str | None, str]], *,
                        replace_all: bool = False) -> int:
        """Store scored documents given as ``(thread_id, repo, keep, drop_reason, split, doc JSON)``, streamed;
        ``replace_all`` swaps the whole table atomically."""
        n = 0
        with self.transaction() as c:
            if replace_all:
                c.execute("DELETE FROM scored")
            batch: list[tuple[Any, ...]] = []
            for tid, repo, keep, reason, split, doc in rows:
                batch.append((tid, repo, int(keep), reason, split, doc))
                if len(batch) >= 1000:
                    n += self._insert_scored(c, batch)
            n += self._insert_scored(c, batch)
        return n

    @staticmethod
    def _insert_scored(c: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> int:
        c.executemany("INSERT OR REPLACE INTO scored(thread_id, repo, keep, drop_reason, split, doc) "
                      "VALUES (?,?,?,?,?,?)", batch)
        n = len(batch)
        batch.clear()
        return n

    def iter_scored(self, kept_only: bool = True) -> Iterator[Record]:
        for _, doc in self.paged("scored", "thread_id", "doc", "keep=1" if kept_only else ""):
            yield Record.model_validate_json(doc)

    def put_rejects(self, stage: str, rejects: Iterable[tuple[str, str]]) -> int:
        n = 0
        with self.transaction() as c:
            for item_id, reason in rejects:
                c.execute("INSERT OR REPLACE INTO rejects(stage, item_id, reason) VALUES (?,?,?)",
                          (stage, item_id, reason))
                n += 1
        return n

    def delete_rejects(self, stage: str, ids: Iterable[str]) -> int:
        """Forget ``stage``'s rejects for ``ids`` (items that later succeeded); returns how many were removed."""
        n = 0
        with self.transaction() as c:
            for item_id in ids:
                n += c.execute("DELETE FROM rejects WHERE stage=? AND item_id=?", (stage, item_id)).rowcount
        return n

    def put_case(self, case_id: str, *, status: str, path: str | None = None, thread_id: str | None = None,
                 missing: list[str] | None = None, spec: dict[str, Any] | None = None) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT OR REPLACE INTO cases(case_id, path, status, thread_id, missing, spec) VALUES (?,?,?,?,?,?)",
                (case_id, path, status, thread_id, _dumps(missing or []), _dumps(spec) if spec else None),
            )

    def set_case_status(self, case_id: str, status: str) -> bool:
        """Change a case's status (e.g. a reviewed ``draft`` becomes ``ready``); False if unknown."""
        with self.transaction() as c:
            return c.execute("UPDATE cases SET status=? WHERE case_id=?", (status, case_id)).rowcount > 0

    def cases(self, status: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT case_id, path, status, thread_id, missing FROM cases", []
        if status:
            sql += " WHERE status=?"
            params.append(status)
        rows = self.query(sql + " ORDER BY case_id", params)
        return [
            {"case_id": r[0], "path": r[1], "status": r[2], "thread_id": r[3], "missing": json.loads(r[4] or "[]")}
            for r in rows
        ]

    def put_verdict(self, v: Verdict) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT OR REPLACE INTO verdicts(case_id, verdict, thread_id, doc, updated) VALUES (?,?,?,?,?)",
                (v.case_id, v.verdict, v.thread_id, _dumps(v.model_dump(mode="json")), time.time()),
            )

    def iter_verdicts(self) -> Iterator[Verdict]:
        for (doc,) in self.query("SELECT doc FROM verdicts ORDER BY case_id"):
            yield Verdict.model_validate_json(doc)

    def verdict_ids(self) -> set[str]:
        return {r[0] for r in self.query("SELECT case_id FROM verdicts")}

    # ------------------------------------------------------------------ run log

    def start_run(self, stage: str, args: dict[str, Any] | None = None) -> int:
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO runs(stage, started, status, args) VALUES (?,?,?,?)",
                (stage, time.time(), "running", _dumps(args or {})),
            )
            return int(cur.lastrowid)

    def finish_run(self, run_id: int, counts: dict[str, Any], status: str = "done") -> None:
        with self.transaction() as c:
            c.execute("UPDATE runs SET finished=?, status=?, counts=? WHERE id=?",
                      (time.time(), status, _dumps(counts), run_id))

    def runs(self) -> list[dict[str, Any]]:
        rows = self.query("SELECT id, stage, started, finished, status, counts FROM runs ORDER BY id")
        return [
            {"id": r[0], "stage": r[1], "started": r[2], "finished": r[3], "status": r[4], "counts": json.loads(r[5])}
            for r in rows
        ]

    # ------------------------------------------------------------------ export

    def iter_export(self, table: str) -> Iterator[dict[str, Any]]:
        """JSON documents of a table, one per row, in a stable order."""
        if table not in EXPORTABLE:
            raise StoreError(f"unknown table {table!r}; choose one of: {', '.join(EXPORTABLE)}")
        doc_tables = {"threads": "id", "records": "thread_id", "verdicts": "case_id", "scored": "thread_id",
                      "decisions": "thread_id"}
        if table in doc_tables:
            for (doc,) in self.query(f"SELECT doc FROM {table} ORDER BY {doc_tables[table]}"):
                yield json.loads(doc)
        elif table == "trajectories":
            for v in self.iter_verdicts():
                for i, step in enumerate(v.steps):
                    yield {"case_id": v.case_id, "thread_id": v.thread_id, "verdict": v.verdict, "step": i,
                           **step.model_dump(mode="json")}
        elif table == "repos":
            yield from self.repos()
        elif table == "repo_status":
            yield from self.repo_status()
        elif table == "runs":
            yield from self.runs()
        elif table == "cases":
            yield from self.cases()
        elif table == "reviews":
            cur = self._conn.execute("SELECT id, item_id, queue, reviewer, decided, decision, reason, before, after,"
                                     " record_digest, source FROM reviews ORDER BY id")
            names = [d[0] for d in cur.description]
            for row in cur.fetchall():
                doc = dict(zip(names, row, strict=True))
                doc["before"] = json.loads(doc["before"])
                doc["after"] = json.loads(doc["after"]) if doc["after"] is not None else None
                yield doc
        else:
            cur = self._conn.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cur.description]
            for row in cur.fetchall():
                yield dict(zip(names, row, strict=True))

    def export(self, table: str, path: str | Path, fmt: str = "jsonl",
               transform: Any = None) -> int:
        """Write a table to JSONL or Parquet; returns the row count.

        ``transform`` (optional) maps each document before it is written, e.g.
        redaction. The file is written to a temporary name and renamed, so a
        killed export never leaves a truncated file behind.
        """
        if fmt not in ("jsonl", "parquet"):
            raise StoreError(f"unknown format {fmt!r}; choose jsonl or parquet")
        path = Path(path)
        docs = self.iter_export(table)
        if transform is not None:
            docs = (transform(d) for d in docs)
        tmp = path.with_name(path.name + ".tmp")
        n = 0
        try:
            if fmt == "jsonl":
                with tmp.open("w", encoding="utf-8") as fh:
                    for d in docs:
                        fh.write(_dumps(d) + "\n")
                        n += 1
            else:
                import polars as pl

                rows = list(docs)
                n = len(rows)
                df = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
                df.write_parquet(tmp)
            tmp.replace(path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"cannot write {path}: {exc.strerror}") from None
        return n


def _opt_bool(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, str):
        return int(v.strip().lower() in ("1", "true", "yes", "t"))
    return int(bool(v))


def open_store(root: str | Path, *, create: bool = True) -> Store:
    return Store(root, create=create)
