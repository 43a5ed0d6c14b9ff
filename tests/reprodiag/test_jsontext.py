from __future__ import annotations

import pytest

from reprodiag.jsontext import first_json_object


@pytest.mark.parametrize(("text", "want"), [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": {"b": [1, 2]}}\n```', {"a": {"b": [1, 2]}}),
    ('Here is the record:\n{"a": "x}y"}\nHope this helps {:)}', {"a": "x}y"}),
    ('Use {placeholder} here. {"matches": [true, false]} and {"second": 1}', {"matches": [True, False]}),
    ('{"a": 1', None),
    ("[1, 2, 3]", None),
    ("no json at all", None),
    ("", None),
    (None, None),
])
def test_first_json_object(text: str | None, want: dict | None) -> None:
    assert first_json_object(text) == want
