"""``reprodiag export``: write a workspace table to JSONL or Parquet, redacted by default.

Redaction (:mod:`reprodiag.redact`) is applied per document as the store's
export transform: threads through :func:`~reprodiag.redact.redact_thread_doc`
(author fields become per-thread placeholders), records and scored records
through :func:`~reprodiag.redact.redact_record_doc`, and every other table
through :func:`~reprodiag.redact.redact_doc` (free-text fields; identifiers,
enums and timestamps are kept). ``redact=False`` (``--raw``) writes the
stored documents unchanged: keep such files local.

Exported threads are valid Thread documents and records valid Records, in
both formats. Parquet needs one fixed schema per column, so there:

* maps whose keys vary from row to row are written as JSON object strings:
  ``temporal_tag.framework_versions`` (e.g. ``'{"torch": "1.8.1"}'``) and
  ``quality.components`` of records (:data:`PARQUET_JSON_FIELDS`), and any
  other empty object in the remaining tables becomes null (Parquet has no
  empty struct);
* rows read back as plain dicts (``pl.read_parquet(f).to_dicts()``) validate
  as they are (``parse_record``/``parse_thread``: those two Record fields
  accept a JSON object string); :func:`read_parquet_docs` also turns the
  strings back into objects, and ``reprodiag score --input f.parquet`` uses it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError
from reprodiag.redact import redact_doc, redact_record_doc, redact_thread_doc
from reprodiag.schema import StageReport
from reprodiag.store import EXPORTABLE, Store, StoreError

FORMATS = ("jsonl", "parquet")
#: Record fields (path of keys) holding a map with row-dependent keys: JSON strings in Parquet.
PARQUET_JSON_FIELDS: tuple[tuple[str, ...], ...] = (("temporal_tag", "framework_versions"),
                                                     ("quality", "components"))
RECORD_TABLES = ("records", "scored")


def _transform(table: str, counts: Counter[str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    if table == "threads":
        return lambda d: redact_thread_doc(d, counts)
    if table in RECORD_TABLES:
        return lambda d: redact_record_doc(d, counts)
    return lambda d: redact_doc(d, None, counts)


def _no_empty_dicts(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _no_empty_dicts(x) for k, x in v.items()} if v else None
    if isinstance(v, list):
        return [_no_empty_dicts(x) for x in v]
    return v


def _map_path(doc: dict[str, Any], path: tuple[str, ...], fn: Callable[[Any], Any]) -> None:
    node: Any = doc
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and path[-1] in node:
        node[path[-1]] = fn(node[path[-1]])


def to_parquet_doc(doc: dict[str, Any], table: str) -> dict[str, Any]:
    """A document in its Parquet form (see the module docstring); the input is not changed."""
    doc = json.loads(json.dumps(doc))
    if table in RECORD_TABLES:
        for path in PARQUET_JSON_FIELDS:
            _map_path(doc, path, lambda v: json.dumps(v or {}, ensure_ascii=False, sort_keys=True))
    return _no_empty_dicts(doc)


def from_parquet_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """Undo :func:`to_parquet_doc` for a record row (JSON-string maps back to objects)."""
    def load(v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, str):
            try:
                return json.loads(v)
            except json.JSONDecodeError:
                return v  # left for validation to reject
        if isinstance(v, dict):  # a struct (older exports): keys absent from this row read back as null
            return {k: x for k, x in v.items() if x is not None}
        return v

    for path in PARQUET_JSON_FIELDS:
        _map_path(doc, path, load)
    return doc


def read_parquet_docs(path: Path) -> list[dict[str, Any]]:
    """Rows of an exported Parquet file as documents (record maps decoded); unreadable file → UserError."""
    import polars as pl

    try:
        rows = pl.read_parquet(path).to_dicts()
    except Exception as exc:  # noqa: BLE001 - polars raises many types for a bad file
        raise UserError(f"cannot read {path} as Parquet: {type(exc).__name__}") from None
    return [from_parquet_doc(r) for r in rows]


def _parquet_transform(inner: Callable[[dict[str, Any]], dict[str, Any]] | None,
                       table: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def transform(doc: dict[str, Any]) -> dict[str, Any]:
        return to_parquet_doc(inner(doc) if inner is not None else doc, table)

    return transform


def export_table(store: Store, table: str, output: Path, *, fmt: str = "jsonl", redact: bool = True) -> StageReport:
    """Write ``table`` to ``output`` (written to a temporary name, then renamed); counts rows and redactions."""
    if table not in EXPORTABLE:
        raise UserError(f"unknown table {table!r}; choose one of: {', '.join(EXPORTABLE)}")
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose jsonl or parquet")
    output = Path(output)
    if output.is_dir():
        raise UserError(f"--output {output} is a directory; give a file name")
    if not output.parent.exists():
        raise UserError(f"--output directory {output.parent} does not exist")
    counts: Counter[str] = Counter()
    transform = _transform(table, counts) if redact else None
    if fmt == "parquet":
        transform = _parquet_transform(transform, table)
    try:
        n = store.export(table, output, fmt, transform=transform)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    report = StageReport(stage="export", counts={"rows": n}, outputs={table: str(output)})
    if redact:
        report.counts["redacted"] = sum(counts.values())
        report.counts.update({f"redacted_{k.lower()}": v for k, v in sorted(counts.items())})
    else:
        report.notes.append("raw export: not redacted; do not publish this file")
    return report
