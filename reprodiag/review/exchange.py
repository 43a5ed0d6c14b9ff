"""``reprodiag review export`` and ``reprodiag review import``: review items out to a file, decisions back in.

Formats:

- ``label-studio``: a JSON array of Label Studio tasks (:mod:`reprodiag.review.label_studio`) for a project
  set up with the shipped labeling config; read back from the project's JSON export.
- ``jsonl``: one review item per line: ``item_id``, ``queue``, ``eval_id``, ``repo``, ``title``, ``reader``,
  ``model``, ``record_digest``, ``before`` (the fields, :mod:`reprodiag.review.fields`), ``thread`` and
  ``evidence`` (plain text), and ``decision`` / ``reason`` / ``after`` / ``reviewer`` left null for a person
  (or a script) to fill: ``decision`` accept | edit | reject (null: not decided, skipped), ``after`` the
  fields (required for an edit), ``reviewer`` the name (else ``--reviewer``, else the user's login name).

An import is all or nothing: the whole file is read and checked first (its format, every decision, and that
every item is a kept record of this workspace), then its decisions are stored in one transaction (a decision
that repeats the reviewer's current one on the item is not stored again, so importing a file twice stores it
once); a malformed or foreign file is one line naming the file and the place, and stores nothing. A decision
on a record read again since it was exported is stored but not applied by ``build`` (counted as stale).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from reprodiag.atomic_write import write_text
from reprodiag.errors import UserError, read_user_text
from reprodiag.review.decisions import (
    DECISIONS,
    QUEUES,
    Decision,
    clean_reviewer,
    current_decisions,
    decide,
    put_decisions,
)
from reprodiag.review.fields import record_digest
from reprodiag.review.items import ReviewItem, evidence_text, load_items, thread_text, thread_view
from reprodiag.schema import StageReport
from reprodiag.store import Store

FORMATS = ("label-studio", "jsonl")


def default_reviewer() -> str:
    """The user's login name, else ``reviewer``."""
    import getpass

    try:
        return clean_reviewer(getpass.getuser())
    except (ValueError, KeyError, OSError):
        return "reviewer"


def _texts(store: Store, it: ReviewItem) -> tuple[str, str]:
    thread = store.get_thread(it.item_id)
    if thread is None:
        return f"{it.title}\n\n(the workspace does not hold this thread)", ""
    view = thread_view(thread, it.evidence)
    return thread_text(view), evidence_text(view)


def _write(path: Path, text: str) -> None:
    if path.is_dir():
        raise UserError(f"-o {path} is a directory; give a file name")
    if not path.parent.exists():
        raise UserError(f"-o: directory {path.parent} does not exist")
    write_text(path, text)


def run_export(store: Store, fmt: str, output: Path, *, include_offline: bool = False, sample_sft: int = 0,
               seed: int = 0) -> StageReport:
    """Write the review items (the page's: eval candidates, optionally the SFT sample) to ``output``."""
    from reprodiag.review.label_studio import CONFIG, task

    if fmt not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    output = Path(output)
    items = load_items(store, include_offline=include_offline, sample_sft=sample_sft, seed=seed)
    docs: list[dict[str, Any]] = []
    for it in items:
        thread, evidence = _texts(store, it)
        if fmt == "label-studio":
            docs.append(task(it, thread, evidence))
        else:
            docs.append({"item_id": it.item_id, "queue": it.queue, "eval_id": it.eval_id, "repo": it.repo,
                         "title": it.title, "reader": it.reader, "model": it.model, "record_digest": it.digest,
                         "before": it.before, "thread": thread, "evidence": evidence, "decision": None,
                         "reason": None, "after": None, "reviewer": None})
    if fmt == "label-studio":
        _write(output, json.dumps(docs, ensure_ascii=False, indent=1) + "\n")
    else:
        _write(output, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    queues = Counter(it.queue for it in items)
    rep = StageReport(stage="review-export", counts={"items": len(items), "eval items": queues.get("eval", 0),
                                                     "sft rows": queues.get("sft", 0)},
                      outputs={"file": str(output)})
    if fmt == "label-studio":
        rep.outputs["labeling config"] = str(CONFIG)
        rep.notes.append("Label Studio: create a project with the labeling config above, import the tasks file, "
                         "review, export the project as JSON and run `reprodiag review import FILE`")
    return rep


def _jsonl(text: str, path: Path, reviewer: str | None) -> tuple[list[Decision], Counter[str]]:
    out: list[Decision] = []
    counts: Counter[str] = Counter()
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{no}: not JSON ({exc.msg})") from None
        try:
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if not isinstance(doc.get("item_id"), str) or doc.get("queue") not in QUEUES or not isinstance(
                    doc.get("record_digest"), str) or not isinstance(doc.get("before"), dict):
                raise ValueError("not a review item: item_id, queue, record_digest and before are required (as "
                                 "`review export --format jsonl` writes them)")
            counts["items"] += 1
            if doc.get("decision") is None:
                counts["not decided"] += 1
                continue
            if doc["decision"] not in DECISIONS:
                raise ValueError(f"decision must be one of {', '.join(DECISIONS)} or null")
            after = doc.get("after")
            if doc["decision"] == "edit" and not isinstance(after, dict):
                raise ValueError("an edit needs its fields in after")
            if after is not None and not isinstance(after, dict):
                raise ValueError("after must be an object of fields or null")
            name = doc.get("reviewer") or reviewer or default_reviewer()
            out.append(decide(item_id=doc["item_id"], queue=doc["queue"], reviewer=name, before=doc["before"],
                              after=after if doc["decision"] != "reject" else None,
                              record_digest=doc["record_digest"], source="jsonl", reason=doc.get("reason"),
                              reject=doc["decision"] == "reject"))
        except ValueError as exc:
            raise UserError(f"{path}:{no}: {' '.join(str(exc).split())[:200]}") from None
    return out, counts


def _same_decision(a: Decision | None, b: Decision) -> bool:
    """Whether ``b`` repeats ``a`` (a file imported again stores nothing new)."""
    return a is not None and (a.queue, a.decision, a.after, a.reason, a.record_digest) == (
        b.queue, b.decision, b.after, b.reason, b.record_digest)


def run_import(store: Store, path: Path, *, reviewer: str | None = None) -> StageReport:
    """Read a Label Studio JSON export or a JSONL of review items and store its decisions (all or nothing).
    Label Studio decisions are ``reviewer``'s (default ``label-studio``; ``:<annotator>`` appended when the
    file holds several annotators)."""
    from reprodiag.review.label_studio import FormatError, read_export

    path = Path(path)
    if reviewer is not None:
        try:
            reviewer = clean_reviewer(reviewer)
        except ValueError as exc:
            raise UserError(f"--reviewer: {exc}") from None
    text = read_user_text(path, "review file")
    head = text.lstrip()[:1]
    if head == "[":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        try:
            decisions, counts = read_export(doc, reviewer=reviewer or "label-studio")
        except FormatError as exc:
            raise UserError(f"{path}: {' '.join(str(exc).split())[:300]}") from None
        fmt = "label-studio"
    elif head == "{":
        decisions, counts = _jsonl(text, path, reviewer)
        fmt = "jsonl"
    else:
        raise UserError(f"{path} is neither a Label Studio JSON export (an array of tasks) nor JSONL of review items "
                        "(`reprodiag review export` writes both)")
    digests = {r.thread_id: record_digest(r) for r in store.iter_scored(kept_only=True)}
    for d in decisions:
        if d.item_id not in digests:
            raise UserError(f"{path}: item {d.item_id[:80]!r} is not a kept record of this workspace (a file from "
                            "another workspace?); nothing was stored")
    current = {(d.item_id, d.reviewer): d for d in current_decisions(store)}
    new = [d for d in decisions if not _same_decision(current.get((d.item_id, d.reviewer)), d)]
    n = put_decisions(store, new)
    kinds = Counter(d.decision for d in decisions)
    stale = sum(digests[d.item_id] != d.record_digest for d in decisions)
    rep = StageReport(stage="review-import", counts={
        **{k: v for k, v in counts.items() if k in ("tasks", "items")}, "decisions stored": n,
        "already stored": len(decisions) - n,
        "accepted": kinds.get("accept", 0), "edited": kinds.get("edit", 0), "rejected": kinds.get("reject", 0),
        **{k: v for k, v in counts.items() if k not in ("tasks", "items")},
        "stale (record read again since the export)": stale}, outputs={fmt: str(path)})
    people = sorted({d.reviewer for d in decisions})
    if people:
        rep.notes.append("reviewers: " + ", ".join(people))
    without = sum(d.decision == "reject" and not d.reason for d in decisions)
    if without:
        rep.notes.append(f"{without} reject(s) came without a reason")
    return rep
