"""The ``manifest.json`` of a recorded set (answers, verdicts): what it must hold, read once for all kinds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError, read_user_text


def read_manifest_doc(path: Path, what: str, required: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, int]]:
    """The manifest's JSON object and its ``parts`` (part name → count; absent: empty).

    Each of ``required`` must be a non-empty string; anything else (not JSON, not an object, a missing field,
    ``parts`` not an object of integers) is a one-line :class:`UserError` naming ``what`` and ``path``."""
    try:
        doc = json.loads(read_user_text(path, what))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        missing = [k for k in required if not isinstance(doc.get(k), str) or not doc.get(k)]
        if missing:
            raise ValueError("missing " + ", ".join(missing))
        parts = doc.get("parts") or {}
        if not isinstance(parts, dict):
            raise ValueError("'parts' is not an object")
        return doc, {str(k): int(v) for k, v in parts.items()}
    except (ValueError, TypeError) as exc:
        raise UserError(f"{path}: not a {what} ({' '.join(str(exc).split())[:160]})") from None
