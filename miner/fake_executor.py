"""A small GraphQL executor for already validated documents over dict/callable resolvers.

The fake GitHub (:mod:`miner.fake_github`) answers every query by executing it over
plain values: dicts whose values are either the field's value or a callable
``f(info, **args)`` (graphql-core's default field resolver convention). graphql-core's
general executor spends most of its time in machinery that this case does not need
(resolve infos, awaitable checks, per-item completion dispatch). :func:`execute_fast`
walks the operation's collected fields directly and gives the same
:class:`graphql.ExecutionResult` as :func:`graphql.execute` would (same ``data``, same
errors in the same order, with the same message, path, locations and original error):

* operation selection, variable coercion, field collection (aliases, fragments, type
  conditions, ``@skip``/``@include``, merging of equal response keys) and argument
  coercion are graphql-core's own functions; fields are collected once per field group
  and runtime type, and arguments coerced once per field group, per execution;
* resolvers are called as ``f(None, **args)``: the ``info`` argument is always None;
* leaf values that are already what the type's output coercion would return (a ``str``
  for String/ID, a ``bool`` for Boolean, a 32-bit ``int`` for Int, an enum name whose
  internal value is the name, anything non-null for a scalar without output coercion)
  pass as they are; anything else goes through graphql-core's leaf completion;
* abstract types resolve from the value's ``__typename`` (graphql-core's default type
  resolver), checked as graphql-core checks it; ``__typename`` is the runtime type's name;
* a field error gives null and a located error; a null (or error) in a Non-Null position
  nulls the nearest nullable ancestor (``data`` None when that is the root), recording
  the error once, at the position where it arose, as graphql-core does.

Whatever this executor does not implement falls back to :func:`graphql.execute` before
any resolver runs: schemas with custom ``resolve``/``resolve_type``/``is_type_of``
functions, introspection (``__schema``/``__type``), operations that disable error
propagation, and selections nested too deeply to collect.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLAbstractType,
    GraphQLEnumType,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLUnionType,
    execute,
    located_error,
)
from graphql.execution.collect_fields import FieldDetails, collect_fields, collect_subfields
from graphql.execution.executor import Executor, get_typename
from graphql.execution.values import get_argument_values
from graphql.pyutils import is_iterable
from graphql.type import GraphQLBoolean, GraphQLID, GraphQLInt, GraphQLString

__all__ = ["execute_fast"]

_MIN_INT = -2_147_483_648
_MAX_INT = 2_147_483_647

# Kinds of compiled output types.
_LEAF = 0
_OBJECT = 1
_ABSTRACT = 2
_LIST = 3


class _Unsupported(Exception):
    """The document needs something this executor leaves to graphql-core."""


class _Type:
    """An output type compiled for fast completion.

    ``fast``: Python types whose values a leaf returns unchanged without any check (the
    type's output coercion is the identity on them). ``ints``: Int's 32-bit check applies.
    ``names``: enum names that are their own internal value.
    """

    __slots__ = ("nonnull", "kind", "gtype", "fast", "ints", "names", "item")

    def __init__(self, nonnull: bool, kind: int, gtype: Any) -> None:
        self.nonnull = nonnull
        self.kind = kind
        self.gtype = gtype
        self.fast: frozenset[type] = frozenset()
        self.ints = False
        self.names: frozenset[str] = frozenset()
        self.item: _Type | None = None


_IDENTITY_FAST = frozenset({str, int, float, bool, dict, list})


class _SchemaInfo:
    """Per-schema facts: whether the fast path applies, compiled types, checked runtime types."""

    def __init__(self, schema: GraphQLSchema) -> None:
        self.schema = schema
        self.supported = _plain_schema(schema)
        self.types: dict[int, tuple[GraphQLOutputType, _Type]] = {}
        self.lock = threading.Lock()

    def compiled(self, gtype: GraphQLOutputType) -> _Type:
        """The compiled form of an output type (cached by the type object's identity)."""
        hit = self.types.get(id(gtype))
        if hit is not None and hit[0] is gtype:
            return hit[1]
        t = _compile_type(gtype)
        with self.lock:
            self.types[id(gtype)] = (gtype, t)
        return t


def _plain_schema(schema: GraphQLSchema) -> bool:
    """True when no (non-introspection) type has custom resolve, resolve_type or is_type_of functions."""
    for name, t in schema.type_map.items():
        if name.startswith("__"):
            continue
        if isinstance(t, GraphQLObjectType):
            if t.is_type_of is not None or any(f.resolve is not None for f in t.fields.values()):
                return False
        elif isinstance(t, (GraphQLInterfaceType, GraphQLUnionType)) and t.resolve_type is not None:
            return False
    return True


def _compile_type(gtype: GraphQLOutputType) -> _Type:
    nonnull = isinstance(gtype, GraphQLNonNull)
    inner = gtype.of_type if nonnull else gtype
    if isinstance(inner, GraphQLList):
        t = _Type(nonnull, _LIST, inner)
        t.item = _compile_type(inner.of_type)
        return t
    if isinstance(inner, GraphQLObjectType):
        return _Type(nonnull, _OBJECT, inner)
    if isinstance(inner, (GraphQLInterfaceType, GraphQLUnionType)):
        return _Type(nonnull, _ABSTRACT, inner)
    t = _Type(nonnull, _LEAF, inner)
    if isinstance(inner, GraphQLEnumType):
        t.names = frozenset(name for name, ev in inner.values.items()  # names the coercion maps to themselves
                            if type(ev.value) is str and ev.value == name and inner.coerce_output_value(name) == name)
    elif inner is GraphQLString or inner is GraphQLID:
        t.fast = frozenset({str})
    elif inner is GraphQLBoolean:
        t.fast = frozenset({bool})
    elif inner is GraphQLInt:
        t.ints = True
    elif isinstance(inner, GraphQLScalarType) and inner.coerce_output_value is GraphQLScalarType.serialize:
        t.fast = _IDENTITY_FAST  # no output coercion: values pass as they are
    return t


_schemas: dict[int, _SchemaInfo] = {}
_schemas_lock = threading.Lock()


def _schema_info(schema: GraphQLSchema) -> _SchemaInfo:
    info = _schemas.get(id(schema))
    if info is not None and info.schema is schema:
        return info
    with _schemas_lock:
        if len(_schemas) > 32:
            _schemas.clear()
        info = _schemas[id(schema)] = _SchemaInfo(schema)
    return info


class _FieldPlan:
    """One response key of a selection on one runtime object type, ready to execute.

    ``args`` are the coerced arguments (or ``arg_error`` the error coercing them raised,
    raised again at every execution of the field, as graphql-core does); ``sub`` caches
    the plans of the sub-selection per runtime object type name.
    """

    __slots__ = ("key", "name", "details", "nodes", "parent", "field_def", "t", "nonnull", "kind", "fast",
                 "typename", "args", "arg_error", "sub", "null_msg")

    def __init__(self, key: str, details: list[FieldDetails], parent: GraphQLObjectType, field_def: GraphQLField,
                 t: _Type) -> None:
        self.key = key
        self.name = details[0].node.name.value
        self.details = details
        self.nodes = [d.node for d in details]
        self.parent = parent
        self.field_def = field_def
        self.t = t
        self.nonnull = t.nonnull
        self.kind = t.kind
        self.fast = t.fast
        self.typename = self.name == "__typename"
        self.args: dict[str, Any] = {}
        self.arg_error: Exception | None = None
        self.sub: dict[str, list[_FieldPlan]] = {}
        self.null_msg = f"Cannot return null for non-nullable field {parent.name}.{self.name}."


def _path_list(path: tuple[Any, str | int] | None) -> list[str | int]:
    """The response path of a linked ``(parent, key)`` path, root first."""
    out: list[str | int] = []
    while path is not None:
        path, key = path
        out.append(key)
    out.reverse()
    return out


class _Run:
    """One execution: graphql-core's prepared executor (fragments, variables) and the errors so far."""

    def __init__(self, info: _SchemaInfo, ex: Executor) -> None:
        self.info = info
        self.schema = info.schema
        self.ex = ex
        self.errors: list[GraphQLError] = []
        self.runtime: dict[tuple[str, str], GraphQLObjectType] = {}
        # Keyed by node identities: the document (and the FieldDetails held by the cached
        # plans) outlive the run, so the ids cannot be reused while it lasts.
        self.arg_cache: dict[tuple[int, int, int], tuple[dict[str, Any], Exception | None]] = {}
        self.plan_cache: dict[tuple[str, tuple[tuple[int, int], ...]], list[_FieldPlan]] = {}

    def plans(self, parent: GraphQLObjectType, grouped: dict[str, list[FieldDetails]]) -> list[_FieldPlan]:
        """Field plans for a collected field set on ``parent`` (fields the type lacks are left out)."""
        out: list[_FieldPlan] = []
        schema, ex = self.schema, self.ex
        for key, details in grouped.items():
            first = details[0]
            node = first.node
            name = node.name.value
            field_def = schema.get_field(parent, name)
            if field_def is None:
                continue
            if field_def.resolve is not None and name != "__typename":
                raise _Unsupported(name)
            plan = _FieldPlan(key, details, parent, field_def, self.info.compiled(field_def.type))
            if field_def.args or node.arguments:
                ck = (id(node), id(field_def), id(first.fragment_variable_values))
                hit = self.arg_cache.get(ck)
                if hit is None:
                    try:
                        hit = (get_argument_values(field_def, node, ex.variable_values,
                                                   first.fragment_variable_values, ex.hide_suggestions), None)
                    except Exception as exc:  # noqa: BLE001 - raised again where graphql-core raises it
                        hit = ({}, exc)
                    self.arg_cache[ck] = hit
                plan.args, plan.arg_error = hit
            out.append(plan)
        return out

    def sub_plans(self, f: _FieldPlan, otype: GraphQLObjectType) -> list[_FieldPlan]:
        """The plans of ``f``'s sub-selection on runtime type ``otype``.

        Collected once per run and per (field nodes, runtime type): aliases of fields that
        spread the same fragment share the fragment's plans, and its arguments.
        """
        plans = f.sub.get(otype.name)
        if plans is None:
            key = (otype.name, tuple((id(d.node), id(d.fragment_variable_values)) for d in f.details))
            plans = self.plan_cache.get(key)
            if plans is None:
                ex = self.ex
                grouped = collect_subfields(self.schema, ex.fragments, ex.variable_values, ex.operation, otype,
                                            f.details, ex.hide_suggestions).grouped_field_set
                plans = self.plan_cache[key] = self.plans(otype, grouped)
            f.sub[otype.name] = plans
        return plans

    def fields(self, plans: list[_FieldPlan], src: Any, path: tuple[Any, str | int] | None,
               parent_name: str) -> dict[str, Any]:
        """Execute the fields of one object value; raise a located error to null this object."""
        out: dict[str, Any] = {}
        is_dict = isinstance(src, dict)
        for f in plans:
            try:
                if f.typename:
                    v: Any = parent_name
                else:
                    v = src.get(f.name) if is_dict else _attr(src, f.name)
                    if f.arg_error is not None:
                        raise f.arg_error
                    if callable(v):
                        v = v(None, **f.args)
                    if v is None:
                        if f.nonnull:
                            raise TypeError(f.null_msg)
                    else:
                        kind = f.kind
                        if kind == _LEAF:
                            if type(v) not in f.fast:
                                v = self.complete(f.t, v, f, (path, f.key))
                        elif kind == _OBJECT:  # inlined complete() for the common case
                            if isinstance(v, Exception):
                                raise v
                            otype = f.t.gtype
                            sub = f.sub.get(otype.name)
                            if sub is None:
                                sub = self.sub_plans(f, otype)
                            v = self.fields(sub, v, (path, f.key), otype.name)
                        else:
                            v = self.complete(f.t, v, f, (path, f.key))
            except Exception as exc:  # noqa: BLE001 - a field error, as in graphql-core
                err = located_error(exc, f.nodes, _path_list((path, f.key)))
                if f.nonnull:
                    raise err from None
                self.errors.append(err)
                v = None
            out[f.key] = v
        return out

    def complete(self, t: _Type, v: Any, f: _FieldPlan, path: tuple[Any, str | int]) -> Any:
        """Complete a non-null value ``v`` of type ``t`` (graphql-core's ``complete_value``)."""
        if isinstance(v, Exception):
            raise v
        kind = t.kind
        if kind == _LEAF:
            if t.ints:
                if type(v) is int and _MIN_INT <= v <= _MAX_INT:
                    return v
            elif t.names:
                if type(v) is str and v in t.names:
                    return v
            elif type(v) in t.fast:
                return v
            return Executor.complete_leaf_value(t.gtype, v)
        if kind == _OBJECT:
            otype = t.gtype
            return self.fields(self.sub_plans(f, otype), v, path, otype.name)
        if kind == _ABSTRACT:
            otype = self.runtime_type(t.gtype, v, f)
            return self.fields(self.sub_plans(f, otype), v, path, otype.name)
        # list
        if not (type(v) is list or is_iterable(v)):
            raise GraphQLError(f"Expected Iterable, but did not find one for field '{f.parent.name}.{f.name}'.")
        it = t.item
        assert it is not None
        errors = self.errors
        items: list[Any] = []
        if it.kind == _OBJECT:  # the common case, a list of objects: the plans looked up once
            otype = it.gtype
            plans = self.sub_plans(f, otype)
            for i, item in enumerate(v):
                try:
                    if item is None:
                        if it.nonnull:
                            raise TypeError(f.null_msg)
                    else:
                        if isinstance(item, Exception):
                            raise item
                        item = self.fields(plans, item, (path, i), otype.name)
                except Exception as exc:  # noqa: BLE001 - an item error, as in graphql-core
                    err = located_error(exc, f.nodes, _path_list((path, i)))
                    if it.nonnull:
                        raise err from None
                    errors.append(err)
                    item = None
                items.append(item)
            return items
        fast = it.fast if it.kind == _LEAF else None
        for i, item in enumerate(v):
            try:
                if item is None:
                    if it.nonnull:
                        raise TypeError(f.null_msg)
                elif fast is None or type(item) not in fast:
                    item = self.complete(it, item, f, (path, i))
            except Exception as exc:  # noqa: BLE001 - an item error, as in graphql-core
                err = located_error(exc, f.nodes, _path_list((path, i)))
                if it.nonnull:
                    raise err from None
                errors.append(err)
                item = None
            items.append(item)
        return items

    def runtime_type(self, abstract: GraphQLAbstractType, v: Any, f: _FieldPlan) -> GraphQLObjectType:
        """The object type of value ``v`` of an abstract type, from its ``__typename``, checked as graphql-core does."""
        name = v.get("__typename") if type(v) is dict else get_typename(v)
        if isinstance(name, str):
            rt = self.runtime.get((abstract.name, name))
            if rt is not None:
                return rt
            found = self.schema.get_type(name)
            if isinstance(found, GraphQLObjectType) and self.schema.is_sub_type(abstract, found):
                self.runtime[(abstract.name, name)] = found
                return found
        else:
            name = None
        info = SimpleNamespace(parent_type=f.parent, field_name=f.name)
        return self.ex.ensure_valid_runtime_type(name, abstract, f.details, info, v)  # raises


def _attr(src: Any, name: str) -> Any:
    """graphql-core's default resolver lookup for a non-dict source."""
    return src.get(name) if isinstance(src, Mapping) else getattr(src, name, None)


def execute_fast(schema: GraphQLSchema, document: DocumentNode, root_value: Any = None,
                 variable_values: dict[str, Any] | None = None,
                 operation_name: str | None = None) -> ExecutionResult:
    """Execute a validated ``document`` like :func:`graphql.execute` (same result), faster.

    Resolvers are graphql-core default-resolver style values (see the module docstring)
    and are called with ``info=None``; they must be synchronous. Falls back to
    :func:`graphql.execute` for what this executor does not implement.
    """
    info = _schema_info(schema)
    if not info.supported:
        return _slow(schema, document, root_value, variable_values, operation_name)
    ex = Executor.build(schema, document, root_value, None, variable_values, operation_name)
    if isinstance(ex, list):
        return ExecutionResult(None, ex)
    if not ex.error_propagation:
        return _slow(schema, document, root_value, variable_values, operation_name)
    op = ex.operation
    root_type = schema.get_root_type(op.operation)
    if root_type is None:
        return ExecutionResult(None, [GraphQLError(
            f"Schema is not configured to execute {op.operation.value} operation.", op)])
    run = _Run(info, ex)
    try:
        grouped = collect_fields(schema, ex.fragments, ex.variable_values, root_type, op,
                                 ex.hide_suggestions).grouped_field_set
        plans = run.plans(root_type, grouped)
    except (_Unsupported, RecursionError):
        return _slow(schema, document, root_value, variable_values, operation_name)
    data: dict[str, Any] | None
    try:
        data = run.fields(plans, root_value, None, root_type.name)
    except GraphQLError as err:
        run.errors.append(err)
        data = None
    return ExecutionResult(data, run.errors or None)


def _slow(schema: GraphQLSchema, document: DocumentNode, root_value: Any, variable_values: dict[str, Any] | None,
          operation_name: str | None) -> ExecutionResult:
    result = execute(schema, document, root_value=root_value, variable_values=variable_values,
                     operation_name=operation_name)
    assert isinstance(result, ExecutionResult)
    return result
