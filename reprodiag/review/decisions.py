"""The workspace's ``reviews`` table: people's decisions on review items, and how they combine.

One row per decision, never updated or deleted: ``item_id`` (the record's thread id), ``queue`` (``eval``:
an eval candidate; ``sft``: a sampled SFT row), ``reviewer``, ``decided`` (Unix time, seconds),
``decision`` (``accept`` | ``edit`` | ``reject``), ``reason``, ``before`` (the fields as the reader gave
them, JSON, :mod:`reprodiag.review.fields`), ``after`` (the fields the reviewer settled on: ``before`` for
an accept, the edited fields for an edit, null for a reject), ``record_digest``
(:func:`~reprodiag.review.fields.record_digest` of the record reviewed) and ``source`` (``page``,
``label-studio``, ``jsonl``). Each :func:`put_decisions` call is one committed transaction, so a decision
whose call returned survives any kill of the process.

A reviewer's decision on an item is their latest row on it; earlier rows are its history. Reviewers are kept
apart: nobody's row replaces another's. For ``build`` (:func:`combine`), on each item, over the reviewers'
current decisions on the current record (a decision on a record read again since, i.e. with another digest,
is *stale* and ignored): a reject in a queue takes the item out of that queue's datasets (``eval``: the eval
set; ``sft``: SFT and DPO) whatever the others said; the fields are the latest edit's, else the reader's
(accepted).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reprodiag.review.fields import Fields, changed, clean_fields, clean_reason
from reprodiag.store import Store

DECISIONS = ("accept", "edit", "reject")
QUEUES = ("eval", "sft")
SOURCES = ("page", "label-studio", "jsonl")
MAX_REVIEWER = 100


def clean_reviewer(name: str) -> str:
    """A reviewer name: one line, 1 to 100 printable characters (``ValueError`` otherwise)."""
    n = " ".join(str(name or "").split())
    if not n or len(n) > MAX_REVIEWER or not n.isprintable():
        raise ValueError(f"a reviewer name must be 1 to {MAX_REVIEWER} printable characters, got {str(name)[:40]!r}")
    return n


@dataclass(frozen=True)
class Decision:
    """One row of ``reviews`` (``id`` and ``decided`` are set when it is stored, unless given)."""

    item_id: str
    queue: str
    reviewer: str
    decision: str
    before: Fields
    after: Fields | None
    record_digest: str
    source: str
    reason: str | None = None
    decided: float | None = None
    id: int | None = None


def decide(*, item_id: str, queue: str, reviewer: str, before: Mapping[str, object],
           after: Mapping[str, object] | None = None, record_digest: str, source: str, reason: str | None = None,
           reject: bool = False, decided: float | None = None) -> Decision:
    """A validated decision: ``reject``, else ``edit`` when ``after`` differs from ``before`` in any field
    (:func:`~reprodiag.review.fields.changed`), else ``accept`` (``after`` None means the reader's fields).
    Raises ``ValueError`` naming what is wrong."""
    if queue not in QUEUES:
        raise ValueError(f"queue must be one of {', '.join(QUEUES)}, got {queue!r}")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    if not item_id or not isinstance(item_id, str):
        raise ValueError("an item id is required")
    b = clean_fields(before)
    if reject:
        return Decision(item_id, queue, clean_reviewer(reviewer), "reject", b, None, record_digest, source,
                        clean_reason(reason), decided)
    a = b if after is None else clean_fields(after)
    kind = "edit" if changed(b, a) else "accept"
    return Decision(item_id, queue, clean_reviewer(reviewer), kind, b, a, record_digest, source,
                    clean_reason(reason), decided)


def put_decisions(store: Store, decisions: Iterable[Decision]) -> int:
    """Store decisions in one transaction (committed when this returns); returns how many."""
    n = 0
    now = time.time()
    with store.transaction() as c:
        for d in decisions:
            c.execute("INSERT INTO reviews(item_id, queue, reviewer, decided, decision, reason, before, after,"
                      " record_digest, source) VALUES (?,?,?,?,?,?,?,?,?,?)",
                      (d.item_id, d.queue, d.reviewer, d.decided if d.decided is not None else now, d.decision,
                       d.reason, _dumps(d.before), None if d.after is None else _dumps(d.after), d.record_digest,
                       d.source))
            n += 1
    return n


def _dumps(doc: object) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


_COLS = "id, item_id, queue, reviewer, decided, decision, reason, before, after, record_digest, source"


def _row(r: tuple) -> Decision:  # type: ignore[type-arg]
    i, item, queue, reviewer, decided, decision, reason, before, after, digest, source = r
    return Decision(item, queue, reviewer, decision, json.loads(before), None if after is None else json.loads(after),
                    digest, source, reason, decided, i)


def current_decisions(store: Store, reviewer: str | None = None) -> list[Decision]:
    """Each reviewer's latest decision per item (one reviewer's only, when given), ordered by item and
    reviewer."""
    where, params = ("WHERE reviewer=?", [reviewer]) if reviewer is not None else ("", [])
    rows = store.query(f"SELECT {_COLS} FROM reviews WHERE id IN (SELECT max(id) FROM reviews {where}"
                       " GROUP BY item_id, reviewer) ORDER BY item_id, reviewer", params)
    return [_row(tuple(r)) for r in rows]


def history(store: Store, item_id: str) -> list[Decision]:
    """Every decision on one item, oldest first."""
    return [_row(tuple(r)) for r in store.query(f"SELECT {_COLS} FROM reviews WHERE item_id=? ORDER BY id",
                                                (item_id,))]


@dataclass(frozen=True)
class Combined:
    """The reviewers' current decisions on one item, combined (see the module docstring)."""

    item_id: str
    before: Fields
    #: The fields to use (the latest edit's, else the reader's); None when every reviewer rejected it.
    after: Fields | None
    #: Queues in which some reviewer rejected the item.
    rejected_in: frozenset[str]
    reviewers: tuple[str, ...]
    decisions: tuple[Decision, ...]

    @property
    def kept(self) -> bool:
        """Accepted or edited, and rejected by nobody in the eval queue."""
        return self.after is not None and "eval" not in self.rejected_in


def combine(decisions: Iterable[Decision], digests: Mapping[str, str]) -> tuple[dict[str, Combined], list[Decision]]:
    """``(item id → Combined, stale decisions)`` from current decisions (:func:`current_decisions`) and the
    digests of the records as they are now (item id → digest; an item missing from it is not in the
    workspace any more and its decisions are stale)."""
    by_item: dict[str, list[Decision]] = {}
    stale: list[Decision] = []
    for d in decisions:
        if digests.get(d.item_id) != d.record_digest:
            stale.append(d)
        else:
            by_item.setdefault(d.item_id, []).append(d)
    out: dict[str, Combined] = {}
    for item, ds in by_item.items():
        ds = sorted(ds, key=lambda d: (d.decided or 0.0, d.id or 0))
        edits = [d for d in ds if d.decision == "edit"]
        accepts = [d for d in ds if d.decision == "accept"]
        after = edits[-1].after if edits else accepts[-1].after if accepts else None
        out[item] = Combined(item, ds[-1].before, after, frozenset(d.queue for d in ds if d.decision == "reject"),
                             tuple(sorted({d.reviewer for d in ds})), tuple(ds))
    return out, stale
