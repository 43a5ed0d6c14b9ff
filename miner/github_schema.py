"""GitHub's public GraphQL schema (bundled, gzip-compressed) and GitHub's query-cost formula.

Used by the fake server to validate and cost every query, and by tests to check the
client's query strings. The schema is built once per process (about one second).

Cost (GitHub's documented formula): over every connection field that has ``first`` or
``last``, add the requests needed to fill it assuming every ``first``/``last`` is reached
(``ceil(n / 100)`` per parent node; a nested connection counts once per node of its parent
connection), divide the sum by 100, round half up, minimum 1. Connections queried without
``first``/``last`` (only ``totalCount`` is allowed there) add nothing. ``first``/``last``
must be 1..100 and a query may ask for at most 500,000 nodes.
"""

from __future__ import annotations

import gzip
import math
import threading
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    build_schema,
    parse,
    validate,
)
from graphql.error import GraphQLSyntaxError

MAX_NODES = 500_000
MAX_PAGE = 100

_lock = threading.Lock()
_schema: list[GraphQLSchema] = []


def github_schema() -> GraphQLSchema:
    """The bundled GitHub schema, built on first use and cached for the process."""
    with _lock:
        if not _schema:
            raw = resources.files("miner").joinpath("github_schema.graphql.gz").read_bytes()
            schema = build_schema(gzip.decompress(raw).decode("utf-8"), assume_valid_sdl=True)
            schema._validation_errors = []  # the published SDL trips two strictness checks; see README
            _schema.append(schema)
        return _schema[0]


@dataclass(frozen=True)
class QueryCost:
    """``requests``: the formula's raw sum; ``points``: what GitHub charges; ``nodes``: max nodes asked."""

    requests: int
    points: int
    nodes: int


class QueryRejected(ValueError):
    """The query is invalid for GitHub (syntax, schema, page bounds, node limit). One-line message."""


def check_query(query: str, variables: dict[str, Any] | None = None) -> tuple[DocumentNode, QueryCost]:
    """Parse, validate against the schema and cost a query; raise :class:`QueryRejected`."""
    doc = _validated(query)
    return doc, query_cost(doc, variables or {})


@lru_cache(maxsize=512)
def _validated(query: str) -> DocumentNode:
    """Parsed and schema-validated document (cached per query text; the cost depends on variables)."""
    try:
        doc = parse(query)
    except GraphQLSyntaxError as exc:
        raise QueryRejected(" ".join(exc.message.split())) from None
    errors = validate(github_schema(), doc)
    if errors:
        raise QueryRejected("; ".join(" ".join(e.message.split()) for e in errors[:3]))
    return doc


def query_cost(doc: DocumentNode, variables: dict[str, Any]) -> QueryCost:
    frags = {d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}
    ops = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    total = _Tally()
    for op in ops:
        _walk(op.selection_set, 1, frags, variables, total)
    if total.nodes > MAX_NODES:
        raise QueryRejected(f"This query requests up to {total.nodes:,} possible nodes which exceeds the maximum "
                            f"allowed, {MAX_NODES:,}.")
    points = max(1, math.floor(total.requests / 100 + 0.5))
    return QueryCost(total.requests, points, total.nodes)


class _Tally:
    __slots__ = ("requests", "nodes")

    def __init__(self) -> None:
        self.requests = 0
        self.nodes = 0


def _page_arg(field: FieldNode, variables: dict[str, Any]) -> int | None:
    for arg in field.arguments or ():
        if arg.name.value not in ("first", "last"):
            continue
        v = arg.value
        n: Any = None
        if isinstance(v, IntValueNode):
            n = int(v.value)
        elif isinstance(v, VariableNode):
            n = variables.get(v.name.value)
        if n is None:
            continue
        if not isinstance(n, int) or not 1 <= n <= MAX_PAGE:
            raise QueryRejected(f"Requesting {n} records on the `{field.name.value}` connection exceeds the "
                                f"`{arg.name.value}` limit of {MAX_PAGE} records (minimum 1).")
        return n
    return None


def _walk(sel: SelectionSetNode | None, mult: int, frags: dict[str, FragmentDefinitionNode],
          variables: dict[str, Any], total: _Tally, seen: frozenset[str] = frozenset()) -> None:
    if sel is None:
        return
    for s in sel.selections:
        if isinstance(s, FieldNode):
            n = _page_arg(s, variables)
            if n is not None:
                total.requests += mult * math.ceil(n / 100)
                total.nodes += mult * n
                _walk(s.selection_set, mult * n, frags, variables, total, seen)
            else:
                _walk(s.selection_set, mult, frags, variables, total, seen)
        elif isinstance(s, InlineFragmentNode):
            _walk(s.selection_set, mult, frags, variables, total, seen)
        elif isinstance(s, FragmentSpreadNode):
            name = s.name.value
            if name in frags and name not in seen:
                _walk(frags[name].selection_set, mult, frags, variables, total, seen | {name})
