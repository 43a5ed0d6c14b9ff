"""Where ``reprodiag score`` keeps finished batches until the corpus-level pass has written the result.

A small SQLite file beside the result (the workspace's ``score-stage.sqlite``,
or ``.<output>.score-stage.sqlite`` next to ``--output``). Each batch of input
is stored, in one transaction, under the digest of its input bytes and the
per-record settings (:func:`batch_key`); a run killed part-way and run again
reuses every stored batch whose input did not change, so only the batches
that were not finished are scored again. The file holds only redacted text
(redaction is part of the batch) and is removed when the run has written its
result.
"""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from reprodiag.errors import UserError
from scoring.batch import LIGHT_SCHEMA, ScoredBatch

_DDL = """
CREATE TABLE IF NOT EXISTS score_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS score_batches (
    key TEXT PRIMARY KEY, run TEXT, ord INTEGER, meta TEXT NOT NULL, light BLOB NOT NULL, docs BLOB NOT NULL);
"""
#: Separators of a batch's ``docs`` blob: JSON text never holds them unescaped.
_PIECE, _DOC = b"\x1e", b"\n"


def batch_key(settings_key: str, ordinal: int, raws: Sequence[bytes]) -> str:
    """Digest of the ``ordinal``-th batch's input bytes (in order) under the per-record settings. The ordinal
    keeps two equal batches of one input apart (each is its own stored row)."""
    h = hashlib.sha256(f"{settings_key}|{ordinal}".encode())
    for raw in raws:
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
    return h.hexdigest()


def encode_batch(batch: ScoredBatch) -> tuple[bytes, bytes]:
    """A scored batch as the stage stores it: its light columns (Arrow IPC) and its documents' pieces."""
    light = io.BytesIO()
    batch.light.write_ipc(light, compression="uncompressed")
    return light.getvalue(), _DOC.join(_PIECE.join(p.encode() for p in pieces) for pieces in batch.docs)


def _unlink(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        p.unlink(missing_ok=True)


@dataclass(frozen=True)
class BatchMeta:
    """What a stored batch decided besides its rows: input lines rejected (``(line, thread_id, reason)``),
    ids rejected as already seen in an earlier batch, and redaction counts."""

    rejects: tuple[tuple[int | None, str | None, str], ...] = ()
    seen_before: tuple[str, ...] = ()
    redactions: dict[str, int] = field(default_factory=dict)

    def dumps(self) -> str:
        return json.dumps({"rejects": self.rejects, "seen_before": self.seen_before,
                           "redactions": self.redactions})

    @classmethod
    def loads(cls, text: str) -> BatchMeta:
        d = json.loads(text)
        return cls(tuple(tuple(r) for r in d["rejects"]), tuple(d["seen_before"]), d["redactions"])


class ScoreStage:
    """The stage file (``path``; None: in memory) for one run under ``settings_key``."""

    def __init__(self, path: Path | None, settings_key: str) -> None:
        self.path = path
        try:
            self._conn = self._open(settings_key)
        except sqlite3.DatabaseError:
            if path is None:
                raise
            _unlink(path)  # a damaged stage only costs the work it held
            self._conn = self._open(settings_key)
        except OSError as exc:
            raise UserError(f"cannot write the scoring stage file {path}: {exc.strerror or exc}") from None
        self.run = uuid.uuid4().hex

    def _open(self, settings_key: str) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:" if self.path is None else self.path, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL" if self.path is not None else "PRAGMA journal_mode=OFF")
            # a killed process loses no committed batch with synchronous=OFF (only a machine crash could)
            conn.execute("PRAGMA synchronous=OFF")
            conn.executescript(_DDL)
            row = conn.execute("SELECT value FROM score_meta WHERE key='settings'").fetchone()
            if row is None or row[0] != settings_key:  # other settings: nothing stored is reusable
                conn.executescript("BEGIN; DELETE FROM score_batches; DELETE FROM score_meta; COMMIT;")
                conn.execute("INSERT INTO score_meta VALUES ('settings', ?)", (settings_key,))
        except BaseException:
            conn.close()
            raise
        return conn

    def reuse(self, key: str, ordinal: int, seen: set[str]) -> BatchMeta | None:
        """The stored batch ``key`` taken into this run as its ``ordinal``-th batch, or None when it is not
        stored or its decisions about ids seen in earlier batches no longer hold (then it is scored again)."""
        row = self._conn.execute("SELECT meta, light FROM score_batches WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        meta = BatchMeta.loads(row[0])
        ids = pl.read_ipc(io.BytesIO(row[1]), columns=["thread_id"])["thread_id"].to_list()
        if any(t in seen for t in ids) or any(t not in seen for t in meta.seen_before):
            return None
        seen.update(ids)
        self._conn.execute("UPDATE score_batches SET run=?, ord=? WHERE key=?", (self.run, ordinal, key))
        return meta

    def put(self, key: str, ordinal: int, batch: ScoredBatch, meta: BatchMeta) -> None:
        """Store one scored batch as this run's ``ordinal``-th (one row, one transaction; batches may be put
        in any order)."""
        self.put_encoded(key, ordinal, *encode_batch(batch), meta)

    def put_encoded(self, key: str, ordinal: int, light: bytes, docs: bytes, meta: BatchMeta) -> None:
        """:meth:`put` of a batch already encoded by :func:`encode_batch` (e.g. on a Ray worker)."""
        self._conn.execute("INSERT OR REPLACE INTO score_batches(key, run, ord, meta, light, docs) "
                           "VALUES (?,?,?,?,?,?)", (key, self.run, ordinal, meta.dumps(), light, docs))

    def _blobs(self, col: str) -> Iterator[bytes]:
        """One column of this run's batches in input order, one row read at a time (the order is read first,
        so SQLite never sorts the blobs themselves)."""
        keys = [k for (k,) in self._conn.execute("SELECT key FROM score_batches WHERE run=? ORDER BY ord",
                                                 (self.run,))]
        for key in keys:
            yield self._conn.execute(f"SELECT {col} FROM score_batches WHERE key=?", (key,)).fetchone()[0]

    def light(self) -> pl.DataFrame:
        """The light columns (:data:`scoring.batch.LIGHT_SCHEMA`) of every record of this run, in input order."""
        frames = [pl.read_ipc(io.BytesIO(blob)) for blob in self._blobs("light")]
        return pl.concat(frames, rechunk=True) if frames else pl.DataFrame(schema=LIGHT_SCHEMA)

    def docs(self) -> Iterator[tuple[str, str, str]]:
        """Every record's document pieces, in input order, one batch in memory at a time."""
        for blob in self._blobs("docs"):
            if not blob:
                continue
            for doc in blob.split(_DOC):
                head, quality, tail = doc.split(_PIECE)
                yield head.decode(), quality.decode(), tail.decode()

    def remove(self) -> None:
        """Close and delete the stage file (the run's result is written)."""
        self._conn.close()
        if self.path is not None:
            _unlink(self.path)

    def close(self) -> None:
        self._conn.close()
