"""The record contract's msgspec twin: same documents as the model, never more permissive."""

from __future__ import annotations

import copy
import gzip
import json
import random
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reprodiag.schema import Record
from reprodiag.schema_mirror import RECORD_TWIN, Twin, UnsupportedContract, mirror

REAL = Path(__file__).resolve().parents[2] / "scoring" / "data" / "real_records.jsonl.gz"


def _real_lines() -> list[bytes]:
    with gzip.open(REAL, "rb") as fh:
        return [line.rstrip(b"\n") for line in fh if line.strip()]


def _model_doc(raw: bytes) -> dict[str, Any] | None:
    try:
        return Record.model_validate_json(raw).model_dump(mode="json")
    except ValidationError:
        return None


def test_the_twin_reads_every_real_record_as_the_model_does() -> None:
    lines = _real_lines()
    assert len(lines) > 1000
    for raw in lines:
        twin = RECORD_TWIN.decode(raw)
        assert twin is not None, raw[:200]
        assert RECORD_TWIN.to_document(twin) == _model_doc(raw)


def test_encoded_twin_equal_to_the_input_means_the_input_is_the_document() -> None:
    for raw in _real_lines()[:200]:
        canonical = Record.model_validate_json(raw).model_dump_json().encode()
        twin = RECORD_TWIN.decode(canonical)
        assert RECORD_TWIN.encode(twin) == canonical
        assert orjson.loads(canonical) == RECORD_TWIN.to_document(twin)


def test_defaults_are_filled_as_the_model_fills_them() -> None:
    raw = b'{"thread_id": "o/r#1", "repo": "o/r"}'
    assert RECORD_TWIN.to_document(RECORD_TWIN.decode(raw)) == _model_doc(raw)
    twin = RECORD_TWIN.decode(raw)
    assert twin.extractor.backend == "rules" and twin.hypothesis_chain == [] and twin.stats.participants == []


@pytest.mark.parametrize("change", [
    {"diagnostic_depth": "3"},                       # a string for an int: the model coerces, the twin refuses
    {"diagnostic_depth": 3.0},                       # an integral float for an int
    {"diagnostic_depth": True},                      # a bool for an int
    {"is_resolved": "true"},                         # a string for a bool
    {"error_type": "typo"},                          # not one of the types
    {"unknown_field": 1},                            # unknown fields are forbidden
    {"stats": {"created_at": "2023-01-02T03:04:05"}},  # a timestamp without offset: the model makes it UTC
    {"temporal_tag": {"framework_versions": {"torch": None}}},  # a null in a map: the model drops it
    {"temporal_tag": {"framework_versions": '{"torch": "1.8"}'}},  # a map as a JSON string (Parquet exports)
    {"thread_id": None},                             # a required string as null
])
def test_what_the_twin_refuses_the_model_decides(change: dict[str, Any]) -> None:
    doc = orjson.loads(_real_lines()[0])
    for k, v in change.items():
        if isinstance(v, dict) and isinstance(doc.get(k), dict):
            doc[k] = {**doc[k], **v}
        else:
            doc[k] = v
    raw = json.dumps(doc).encode()
    assert RECORD_TWIN.decode(raw) is None


@pytest.mark.parametrize("stamp", [
    "2023-01-01T00:00:00.5Z", "2023-01-01T00:00:00.123456+02:00", "2023-01-01T00:00:00+00:00",
    "2023-01-01T00:00:00-00:00", "2023-01-01 00:00:00Z", "2023-01-01T00:00Z", "2023-02-30T00:00:00Z",
    "2023-01-01T24:00:00Z", "2023-01-01T00:00:60Z", "2023-01-01T23:59:59.999999999Z",
    "2023-01-01T00:00:00.1234567Z", "2023-01-01T00:00:00+24:00", "2023-01-01T00:00:00+0200",
    "0001-01-01T00:00:00Z", "2023-01-01T00:00:00,5Z", "1700000000", "2023-01-01T00:00:00z",
])
def test_timestamps_read_as_the_model_reads_them_or_are_left_to_it(stamp: str) -> None:
    raw = json.dumps({"thread_id": "o/r#1", "repo": "o/r", "stats": {"created_at": stamp}}).encode()
    twin = RECORD_TWIN.decode(raw)
    if twin is not None:
        assert RECORD_TWIN.to_document(twin) == _model_doc(raw)


def test_missing_required_field_is_refused() -> None:
    assert RECORD_TWIN.decode(b'{"repo": "o/r"}') is None
    assert RECORD_TWIN.decode(b"[1, 2]") is None
    assert RECORD_TWIN.decode(b"{not json") is None


_ODD_VALUES: list[Any] = [None, 0, -1, 1.5, 2 ** 63, True, False, "", "x", "2023-01-01T00:00:00Z",
                          "2023-01-01T00:00:00+02:00", "2023-01-01", [], [1], ["a"], {}, {"a": 1}, {"a": "b"},
                          "résumé\u200b", "\ud7ff", 1e308, -0.0]


def _leaves(v: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if isinstance(v, dict):
        for k, x in v.items():
            out.extend(_leaves(x, (*path, k)))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out.extend(_leaves(x, (*path, i)))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


def test_the_twin_is_never_more_permissive_than_the_model() -> None:
    """Random changes of real records (any value replaced by an odd one): whatever the twin takes, the
    model takes too, with the same document."""
    rng = random.Random(7)
    lines = _real_lines()
    taken = refused = 0
    for _ in range(3000):
        doc = orjson.loads(rng.choice(lines))
        for _k in range(rng.randint(1, 3)):
            path = rng.choice(_leaves(doc))
            _set(doc, path, copy.deepcopy(rng.choice(_ODD_VALUES)))
        raw = json.dumps(doc, ensure_ascii=False).encode()
        twin = RECORD_TWIN.decode(raw)
        if twin is None:
            refused += 1
            continue
        taken += 1
        assert RECORD_TWIN.to_document(twin) == _model_doc(raw), raw[:300]
    assert taken > 100 and refused > 1000  # both sides were exercised


class _Checked(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int

    @field_validator("n")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 0:
            raise ValueError("negative")
        return v


class _Constrained(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(ge=0)


class _Open(BaseModel):
    n: int = 0


class _Odd(BaseModel):
    model_config = ConfigDict(extra="forbid")
    when: tuple[int, int] = (0, 0)


@pytest.mark.parametrize("model", [_Checked, _Constrained, _Open, _Odd])
def test_what_the_twin_cannot_mirror_fails_when_it_is_built(model: type[BaseModel]) -> None:
    with pytest.raises(UnsupportedContract):
        mirror(model)


def test_a_twin_of_another_model_decodes_its_documents() -> None:
    class Inner(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        at: datetime | None = None
        tags: list[str] = Field(default_factory=list)

    class Outer(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        name: str
        inner: Inner = Field(default_factory=Inner)
        items: list[Inner] = Field(default_factory=list)

    twin = Twin(Outer)
    raw = b'{"name": "a", "items": [{"at": "2024-05-06T07:08:09Z", "tags": ["x"]}]}'
    assert twin.to_document(twin.decode(raw)) == Outer.model_validate_json(raw).model_dump(mode="json")
