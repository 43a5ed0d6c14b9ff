"""A fast, stricter twin of a pydantic contract: msgspec structs generated from the pydantic models.

Validating a record with pydantic builds some twenty model objects (~70 µs a
record, the largest cost of ``reprodiag score``); msgspec decodes and checks
the same JSON into structs about ten times faster. The contract stays the
pydantic model: :func:`mirror` derives the structs from its fields (names,
order, types, defaults), so there is nothing to keep in step by hand.

The twin is **at most as permissive** as the model, never more: it takes
no coercion (``"3"`` for an int, ``1.0`` for an int, ``null`` in a string
map), no unknown field (the models forbid them), and timestamps only with a
UTC offset. A document the twin refuses is not necessarily invalid; callers
then validate it with the pydantic model, which decides and names the
problem. A document the twin accepts is valid for the model and
:func:`to_document` gives ``model_dump(mode="json")`` of it, key for key
(``tests/reprodiag/test_schema_mirror.py`` checks both on real records).

Only what the contract uses is supported (str, int, float, bool, None,
datetime, Literal, unions with None, lists, string-keyed dicts, nested
models); field validators must be listed in :data:`TRUSTED_VALIDATORS`
(validators whose effect the twin's strictness already implies). Anything
else fails loudly when the twin is built, not silently at run time.
"""

from __future__ import annotations

import datetime as dt
import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from reprodiag import schema

#: Field validators the twin may ignore, because what the twin accepts, they leave unchanged: ``_map_field``
#: (turns a JSON-object string or a struct with nulls into a dict; the twin takes only a dict without nulls)
#: and ``_utc`` (gives a naive timestamp the UTC zone; the twin takes only timestamps with an offset).
TRUSTED_VALIDATORS: frozenset[Callable[..., Any]] = frozenset({schema._map_field, schema._utc})
_SCALARS = (str, int, float, bool, type(None))
_AWARE = Annotated[dt.datetime, msgspec.Meta(tz=True)]
#: A second fraction of more than six digits: msgspec rounds it, pydantic truncates it, so a document that
#: may hold one (``:ss.`` then seven digits, in a timestamp or not: also ``"x":12.3456789``, about 0.1% of real
#: records) is left to the model. The leading literal keeps the search at ~2 µs a record.
_LONG_FRACTION = re.compile(rb":[0-9]{2}\.[0-9]{7}")


class UnsupportedContract(TypeError):
    """The model uses something the twin cannot mirror exactly."""


def _type(ann: Any, cache: dict[type, type]) -> Any:
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if ann in _SCALARS:
        return ann
    if ann is dt.datetime:
        cache[dt.datetime] = _AWARE  # marks the tree as holding timestamps (see Twin.decode)
        return _AWARE
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return _struct(ann, cache)
    if origin is typing.Literal and all(isinstance(a, str) for a in args):
        return ann
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_type(a, cache) for a in args)]  # noqa: UP007 - built at run time
    if origin is list and len(args) == 1:
        return list[_type(args[0], cache)]  # type: ignore[misc]
    if origin is dict and len(args) == 2 and args[0] is str:
        return dict[str, _type(args[1], cache)]  # type: ignore[misc]
    raise UnsupportedContract(f"cannot mirror field type {ann!r}")


def _default_factory(factory: Callable[[], Any], target: Any) -> Callable[[], Any]:
    def make() -> Any:
        value = factory()
        if isinstance(value, BaseModel):
            return msgspec.convert(value.model_dump(mode="python"), target)
        return value
    return make


def _struct(model: type[BaseModel], cache: dict[type, type]) -> type:
    if model in cache:
        return cache[model]
    decorators = model.__pydantic_decorators__
    for name, dec in decorators.field_validators.items():
        if dec.func not in TRUSTED_VALIDATORS:
            raise UnsupportedContract(f"{model.__name__}.{name}: field validator the twin does not know")
    if decorators.model_validators or decorators.field_serializers or decorators.model_serializers:
        raise UnsupportedContract(f"{model.__name__}: model validators/serializers cannot be mirrored")
    if model.model_config.get("extra") != "forbid":
        raise UnsupportedContract(f"{model.__name__}: the twin forbids unknown fields, the model does not")
    fields: list[tuple[str, Any, Any]] = []
    for name, info in model.model_fields.items():
        if info.alias not in (None, name) or info.metadata:
            raise UnsupportedContract(f"{model.__name__}.{name}: aliases and constraints are not mirrored")
        t = _type(info.annotation, cache)
        if info.default_factory is not None:
            fields.append((name, t, msgspec.field(default_factory=_default_factory(info.default_factory, t))))
        elif info.default is PydanticUndefined:
            fields.append((name, t))  # type: ignore[arg-type]
        elif isinstance(info.default, _SCALARS):
            fields.append((name, t, info.default))
        else:
            raise UnsupportedContract(f"{model.__name__}.{name}: a mutable default is not mirrored")
    # fields without defaults may follow ones with: keyword-only, as JSON objects are
    struct = msgspec.defstruct(model.__name__, fields, kw_only=True, frozen=True, forbid_unknown_fields=True)
    cache[model] = struct
    return struct


def _mirror(model: type[BaseModel]) -> tuple[type, bool]:
    cache: dict[type, Any] = {}
    return _struct(model, cache), dt.datetime in cache


def mirror(model: type[BaseModel]) -> type:
    """The msgspec struct type mirroring ``model`` (nested models mirrored too)."""
    return _mirror(model)[0]


class Twin:
    """Decoder of one model's JSON documents through its msgspec twin."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self.struct, self._has_datetimes = _mirror(model)
        self._decoder = msgspec.json.Decoder(self.struct)

    def decode(self, raw: bytes) -> Any | None:
        """The struct of ``raw``, or None when the twin does not take it (validate with the model then)."""
        if self._has_datetimes and _LONG_FRACTION.search(raw):
            return None
        try:
            return self._decoder.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None

    @staticmethod
    def encode(struct: Any) -> bytes:
        """Compact JSON of ``struct``; decoding it as plain JSON gives :meth:`to_document`."""
        return msgspec.json.encode(struct)

    @staticmethod
    def to_document(struct: Any) -> dict[str, Any]:
        """The document ``model_dump(mode="json")`` gives for the same input."""
        return msgspec.to_builtins(struct)  # type: ignore[no-any-return]


#: The twin of the record contract (what ``reprodiag score`` reads).
RECORD_TWIN = Twin(schema.Record)
#: A record as the scorer reads it: the model, or its twin (same attribute names and values).
RecordLike = schema.Record | Any
