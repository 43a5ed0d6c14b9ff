"""JSON objects embedded in model output: prose before or after, code fences, stray braces."""

from __future__ import annotations

import json
from typing import Any

#: Opening braces tried before giving up (a long answer full of ``{x}`` placeholders).
MAX_STARTS = 200


def first_json_object(text: str | None) -> dict[str, Any] | None:
    """The first complete JSON object in ``text``, or None.

    The whole text is tried first; then each ``{`` in turn is tried as the start of an object
    (``json.JSONDecoder.raw_decode``), so ``Here it is: ```json {...} ``` Hope it helps {:)}`` gives
    the object. Arrays and scalars at the top level do not count."""
    if not text:
        return None
    raw = text.strip()
    try:
        whole = json.loads(raw)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return whole
    dec = json.JSONDecoder()
    i = raw.find("{")
    for _ in range(MAX_STARTS):
        if i < 0:
            break
        try:
            obj, _end = dec.raw_decode(raw, i)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return obj
        i = raw.find("{", i + 1)
    return None
