"""The fields a reviewer judges on an item, as one JSON object (``before`` and ``after`` of a review):

- ``error_type``: one of the five types or ``other``;
- ``root_cause``: the gold root cause an answer is graded against (one line; "" when none);
- ``acceptable_directions``: phrases a correct answer may name (``build`` derives them from the root cause
  unless a reviewer changed them);
- ``paper_value`` / ``obtained_value``: the thread's main comparison, in the metric's own unit (null when
  unknown);
- ``is_resolved``: the thread established the cause.

Every object that enters the workspace goes through :func:`clean_fields`: unknown keys, wrong types, a
non-finite number or an over-long text are refused with a ``ValueError`` that names the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from reprodiag.schema import ERROR_TYPES, Record

FIELDS: tuple[str, ...] = ("error_type", "root_cause", "acceptable_directions", "paper_value", "obtained_value",
                           "is_resolved")
#: Types a reviewer may choose: the five of SPEC.md and ``other`` (an item of type ``other`` leaves the eval set).
TYPES: tuple[str, ...] = (*ERROR_TYPES, "other")
#: Longest root cause, direction and reason accepted (characters).
MAX_TEXT = 4000
MAX_DIRECTION = 500
MAX_DIRECTIONS = 50

Fields = dict[str, Any]


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) become one space; ends stripped."""
    return " ".join(str(text).split())


def _number(name: str, v: Any) -> float | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, bool):
        raise ValueError(f"{name} must be a number or empty, got a boolean")
    try:
        x = float(v.strip().replace(",", "")) if isinstance(v, str) else float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or empty, got {str(v)[:40]!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number")
    return x


def clean_directions(v: Any) -> list[str]:
    """A list of directions from a list of strings or one string with one direction per line; blank entries
    and repeats (case-insensitive) dropped, order kept."""
    if isinstance(v, str):
        v = v.splitlines()
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError("acceptable_directions must be a list of strings")
    out: list[str] = []
    for x in v:
        d = one_line(x)
        if not d or d.lower() in (o.lower() for o in out):
            continue
        if len(d) > MAX_DIRECTION:
            raise ValueError(f"a direction is longer than {MAX_DIRECTION} characters")
        out.append(d)
    if len(out) > MAX_DIRECTIONS:
        raise ValueError(f"more than {MAX_DIRECTIONS} acceptable directions")
    return out


def clean_fields(raw: Mapping[str, Any]) -> Fields:
    """The reviewable fields of ``raw``, validated and normalised (see the module docstring); every field
    must be present, no other key may be."""
    if not isinstance(raw, Mapping):
        raise ValueError("fields must be a JSON object")
    extra = sorted(set(raw) - set(FIELDS))
    missing = [f for f in FIELDS if f not in raw]
    if extra:
        raise ValueError(f"unknown field {extra[0]!r}")
    if missing:
        raise ValueError(f"missing field {missing[0]!r}")
    et = raw["error_type"]
    if et not in TYPES:
        raise ValueError(f"error_type must be one of {', '.join(TYPES)}, got {str(et)[:40]!r}")
    root = raw["root_cause"]
    if root is None:
        root = ""
    if not isinstance(root, str):
        raise ValueError("root_cause must be a string")
    root = one_line(root)
    if len(root) > MAX_TEXT:
        raise ValueError(f"root_cause is longer than {MAX_TEXT} characters")
    resolved = raw["is_resolved"]
    if not isinstance(resolved, bool):
        raise ValueError("is_resolved must be true or false")
    return {"error_type": et, "root_cause": root,
            "acceptable_directions": clean_directions(raw["acceptable_directions"]),
            "paper_value": _number("paper_value", raw["paper_value"]),
            "obtained_value": _number("obtained_value", raw["obtained_value"]), "is_resolved": resolved}


def clean_reason(v: Any) -> str | None:
    """A reviewer's reason (one line, at most :data:`MAX_TEXT` characters), None when empty."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValueError("reason must be a string")
    r = one_line(v)
    if len(r) > MAX_TEXT:
        raise ValueError(f"reason is longer than {MAX_TEXT} characters")
    return r or None


def comparable(field: str, v: Any) -> Any:
    """A field's value in the form two reviews are compared in (texts case- and whitespace-insensitive,
    directions as an ordered tuple)."""
    if field == "root_cause":
        return one_line(v or "").lower()
    if field == "acceptable_directions":
        return tuple(one_line(x).lower() for x in v or [])
    return v


def changed(before: Fields, after: Fields) -> list[str]:
    """The fields whose value differs between two field objects (in :data:`FIELDS` order)."""
    return [f for f in FIELDS if comparable(f, before.get(f)) != comparable(f, after.get(f))]


def record_digest(r: Record) -> str:
    """A digest of what the reader said about the fields a reviewer judges (of the stored record, before
    redaction): a review made before the thread was read again no longer applies to the new record."""
    s = r.symptom
    doc = [r.error_type, (r.root_cause or "").strip(), s.paper_value, s.obtained_value, bool(r.is_resolved)]
    return hashlib.sha256(json.dumps(doc, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def still_eligible(before: Fields, after: Fields, reader_eligible: bool) -> bool:
    """Whether a reviewed (accepted or edited) item may be an eval item: one of the five types, a root cause,
    and the thread established it (``is_resolved``, or the reader's own eligibility when the reviewer left
    ``is_resolved`` as the reader had it)."""
    if after["error_type"] not in ERROR_TYPES or not after["root_cause"].strip():
        return False
    if after["is_resolved"]:
        return True
    return reader_eligible and not before.get("is_resolved")
