"""Label Studio tasks for review items, and Label Studio's JSON export read back as review decisions.

The formats, as Label Studio documents them ("Label Studio JSON format of annotated tasks", "Import
pre-annotated data"):

- **Tasks to import** are a JSON array of objects. ``data`` holds the values the labeling config refers to
  as ``$name`` (any JSON values; extra keys are kept and come back in the export). ``predictions`` (optional)
  is a list of pre-annotations, each ``{"model_version": str, "score": float, "result": [...]}``; Label
  Studio shows a prediction's result pre-filled in the labeling interface.
- **A result** is a list of regions, one per control tag that holds a value: ``{"id": str, "from_name":
  <control tag name>, "to_name": <object tag name>, "type": <control type, lower case>, "value": {...}}``.
  The value's key is the control type: ``Choices`` → ``{"choices": ["label"]}``, ``TextArea`` →
  ``{"text": ["entry", ...]}`` (one string per submitted entry), ``Number`` → ``{"number": 1.5}``. A control
  left empty has no region.
- **The JSON export** is a JSON array of the tasks, each with its ``id``, ``data`` (as imported),
  ``predictions``, and ``annotations``: one object per submitted annotation, with ``result`` (regions as
  above), ``completed_by`` (the annotator's user id, or an object with ``id`` and ``email``),
  ``was_cancelled`` (true when the annotator skipped the task), ``ground_truth``, ``created_at`` /
  ``updated_at`` (ISO-8601), ``lead_time`` (seconds) and ``task``. A person who accepts a prediction
  unchanged submits an annotation whose result is the prediction's.

The labeling config shipped with reprodiag (:data:`CONFIG`, ``reprodiag/data/label_studio_config.xml``)
shows the thread (``<Text name="thread">``) and the evidence quotes, and has one control per reviewable
field (:mod:`reprodiag.review.fields`) plus ``verdict`` (accept | reject) and ``reason``. Each task carries
``data.reprodiag`` (item id, queue, the fields as exported, record digest) so that an annotation is read
against what was shown, and a file without it is refused as foreign.

Reading an annotation: ``verdict`` reject → a reject (with ``reason``); accept → the fields of the
annotation (a control without a region is empty: no root cause, no directions, no value), an edit when
they differ from the exported fields, else an accept. Cancelled annotations and tasks nobody annotated are
skipped (counted). Anything else malformed (not JSON, not an array of tasks, a region of an unknown control
or of the wrong type, a value of the wrong type, an unknown error type) is a one-line error naming the task,
and nothing is stored.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from reprodiag.review.decisions import MAX_REVIEWER, QUEUES, Decision, clean_reviewer, decide
from reprodiag.review.fields import TYPES, Fields, clean_fields
from reprodiag.review.items import ReviewItem

CONFIG = Path(__file__).resolve().parents[1] / "data" / "label_studio_config.xml"
#: The object tag every control labels.
TO_NAME = "thread"
#: control name → its type in a result (the labeling config's tags, lower case)
CONTROLS: dict[str, str] = {"verdict": "choices", "error_type": "choices", "root_cause": "textarea",
                            "acceptable_directions": "textarea", "paper_value": "number",
                            "obtained_value": "number", "is_resolved": "choices", "reason": "textarea"}
#: version of ``data.reprodiag`` written by :func:`task`
META_VERSION = 1


def _region(name: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"id": name, "from_name": name, "to_name": TO_NAME, "type": CONTROLS[name], "value": value}


def result_of(fields: Fields, verdict: str = "accept") -> list[dict[str, Any]]:
    """The result regions that show ``fields`` in the shipped labeling config (empty controls have none)."""
    out = [_region("verdict", {"choices": [verdict]}), _region("error_type", {"choices": [fields["error_type"]]})]
    if fields["root_cause"]:
        out.append(_region("root_cause", {"text": [fields["root_cause"]]}))
    if fields["acceptable_directions"]:
        out.append(_region("acceptable_directions", {"text": list(fields["acceptable_directions"])}))
    for k in ("paper_value", "obtained_value"):
        if fields[k] is not None:
            out.append(_region(k, {"number": fields[k]}))
    out.append(_region("is_resolved", {"choices": ["yes" if fields["is_resolved"] else "no"]}))
    return out


def task(item: ReviewItem, thread: str, evidence: str) -> dict[str, Any]:
    """One Label Studio task: the thread and evidence as text, and the item's fields as a prediction."""
    return {"data": {"title": f"{item.title} ({item.item_id}, {item.queue})", "thread": thread,
                     "evidence": evidence or "(the reader gave no quote)",
                     "reprodiag": {"version": META_VERSION, "item_id": item.item_id, "queue": item.queue,
                                   "eval_id": item.eval_id, "before": item.before, "record_digest": item.digest}},
            "predictions": [{"model_version": f"reprodiag {item.reader} reader ({item.model})", "score": 1.0,
                             "result": result_of(item.before)}]}


class FormatError(ValueError):
    """A Label Studio file that is not what :func:`read_export` accepts (the message names where)."""


@dataclass(frozen=True)
class Annotation:
    """One submitted annotation of a task, read (``decision`` has no reviewer name yet: see :func:`read_export`)."""

    task_no: int
    annotator: str
    decision: Decision


def _choice(name: str, value: dict[str, Any], allowed: tuple[str, ...]) -> str:
    got = value.get("choices")
    if not isinstance(got, list) or len(got) != 1 or got[0] not in allowed:
        raise FormatError(f"{name} must be one choice of {', '.join(allowed)}, got {str(got)[:60]}")
    return str(got[0])


def _texts(name: str, value: dict[str, Any]) -> list[str]:
    got = value.get("text")
    if isinstance(got, str):
        got = [got]
    if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
        raise FormatError(f"{name} must hold a list of texts")
    return got


def _number(name: str, value: dict[str, Any]) -> float | None:
    got = value.get("number")
    if got is None:
        return None
    if isinstance(got, bool) or not isinstance(got, int | float) or not math.isfinite(got):
        raise FormatError(f"{name} must be a number, got {str(got)[:40]}")
    return float(got)


def read_result(result: Any) -> tuple[str, Fields, str | None]:
    """``(verdict, fields, reason)`` from an annotation's result (see the module docstring)."""
    if not isinstance(result, list):
        raise FormatError("its result is not a list of regions")
    regions: dict[str, dict[str, Any]] = {}
    for reg in result:
        if not isinstance(reg, dict) or not isinstance(reg.get("from_name"), str) or not isinstance(
                reg.get("value"), dict):
            raise FormatError("a region is not an object with from_name and value")
        name = reg["from_name"]
        if name not in CONTROLS:
            raise FormatError(f"a region of control {name[:40]!r}, which the reprodiag labeling config does not have")
        if reg.get("type") != CONTROLS[name]:
            raise FormatError(f"the region of {name} has type {str(reg.get('type'))[:20]!r}, not {CONTROLS[name]!r}")
        if name in regions:
            raise FormatError(f"two regions of {name}")
        regions[name] = reg["value"]
    if "verdict" not in regions:
        raise FormatError("no verdict (accept or reject)")
    verdict = _choice("verdict", regions["verdict"], ("accept", "reject"))
    reason = " ".join(_texts("reason", regions["reason"])) if "reason" in regions else None
    if verdict == "reject" and "error_type" not in regions:
        return verdict, {}, reason
    if "error_type" not in regions or "is_resolved" not in regions:
        raise FormatError("error_type and is_resolved are required")
    fields = {"error_type": _choice("error_type", regions["error_type"], TYPES),
              "root_cause": " ".join(_texts("root_cause", regions["root_cause"])) if "root_cause" in regions else "",
              "acceptable_directions": [line for t in _texts("acceptable_directions", regions["acceptable_directions"])
                                        for line in t.splitlines()] if "acceptable_directions" in regions else [],
              "paper_value": _number("paper_value", regions["paper_value"]) if "paper_value" in regions else None,
              "obtained_value": (_number("obtained_value", regions["obtained_value"])
                                 if "obtained_value" in regions else None),
              "is_resolved": _choice("is_resolved", regions["is_resolved"], ("yes", "no")) == "yes"}
    try:
        return verdict, clean_fields(fields), reason
    except ValueError as exc:
        raise FormatError(str(exc)) from None


def _annotator(a: dict[str, Any]) -> str:
    who = a.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    return "unknown" if who is None else str(who)


def _when(a: dict[str, Any]) -> float | None:
    for key in ("updated_at", "created_at"):
        v = a.get(key)
        if isinstance(v, str):
            try:
                return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def read_export(doc: Any, *, reviewer: str) -> tuple[list[Decision], Counter[str]]:
    """Decisions from a parsed Label Studio JSON export and what was skipped (``tasks``, ``not annotated``,
    ``cancelled``). The reviewer of each decision is ``reviewer``, followed by ``:<annotator>`` when the file
    holds annotations of more than one annotator. Raises :class:`FormatError` (nothing is returned then)."""
    if not isinstance(doc, list):
        raise FormatError("not a Label Studio JSON export (a JSON array of tasks)")
    found: list[Annotation] = []
    counts: Counter[str] = Counter()
    for no, t in enumerate(doc, start=1):
        where = f"task {no}" + (f" (id {t.get('id')})" if isinstance(t, dict) and t.get("id") is not None else "")
        if not isinstance(t, dict) or not isinstance(t.get("data"), dict):
            raise FormatError(f"{where}: not a Label Studio task (an object with data)")
        meta = t["data"].get("reprodiag")
        if not isinstance(meta, dict):
            raise FormatError(f"{where}: no data.reprodiag, so not a task `reprodiag review export` wrote")
        if meta.get("version") != META_VERSION or not isinstance(meta.get("item_id"), str) or meta.get(
                "queue") not in QUEUES or not isinstance(meta.get("record_digest"), str):
            raise FormatError(f"{where}: data.reprodiag lacks its version {META_VERSION}, item_id, queue or "
                              "record_digest")
        try:
            before = clean_fields(meta.get("before") or {})
        except ValueError as exc:
            raise FormatError(f"{where}: data.reprodiag.before: {exc}") from None
        counts["tasks"] += 1
        anns = t.get("annotations", [])
        if not isinstance(anns, list):
            raise FormatError(f"{where}: annotations is not a list")
        usable = 0
        for a in anns:
            if not isinstance(a, dict):
                raise FormatError(f"{where}: an annotation is not an object")
            if a.get("was_cancelled"):
                counts["cancelled"] += 1
                continue
            try:
                verdict, fields, reason = read_result(a.get("result"))
                d = decide(item_id=meta["item_id"], queue=meta["queue"], reviewer="label-studio", before=before,
                           after=fields or None, record_digest=meta["record_digest"], source="label-studio",
                           reason=reason, reject=verdict == "reject", decided=_when(a))
            except ValueError as exc:
                raise FormatError(f"{where}: annotation {a.get('id', '?')}: {exc}") from None
            found.append(Annotation(no, _annotator(a), d))
            usable += 1
        if not usable:
            counts["not annotated"] += 1
    several = len({a.annotator for a in found}) > 1
    out = [replace(a.decision, reviewer=clean_reviewer((f"{reviewer}:{a.annotator}" if several else reviewer)
                                                       [:MAX_REVIEWER])) for a in found]
    return out, counts
