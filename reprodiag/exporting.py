"""``reprodiag export``: write a workspace table to JSONL or Parquet, redacted by default.

Redaction (:mod:`reprodiag.redact`) is applied per document as the store's
export transform: threads through :func:`~reprodiag.redact.redact_thread_doc`
(author fields become per-thread placeholders), records and scored records
through :func:`~reprodiag.redact.redact_record_doc`, and every other table
through :func:`~reprodiag.redact.redact_doc` (free-text fields; identifiers,
enums and timestamps are kept). Exported threads are still valid Thread
documents and records valid Records (in Parquet, empty objects such as
``framework_versions: {}`` are written as null, since Parquet has no empty
struct). ``redact=False`` (``--raw``) writes the
stored documents unchanged: keep such files local.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError
from reprodiag.redact import redact_doc, redact_record_doc, redact_thread_doc
from reprodiag.schema import StageReport
from reprodiag.store import EXPORTABLE, Store, StoreError

FORMATS = ("jsonl", "parquet")


def _transform(table: str, counts: Counter[str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    if table == "threads":
        return lambda d: redact_thread_doc(d, counts)
    if table in ("records", "scored"):
        return lambda d: redact_record_doc(d, counts)
    return lambda d: redact_doc(d, None, counts)


def _no_empty_dicts(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _no_empty_dicts(x) for k, x in v.items()} if v else None
    if isinstance(v, list):
        return [_no_empty_dicts(x) for x in v]
    return v


def _parquet_safe(inner: Callable[[dict[str, Any]], dict[str, Any]] | None) -> Callable[[dict[str, Any]], Any]:
    """Parquet cannot store a struct without fields: empty objects (``{}``) become null there."""
    if inner is None:
        return _no_empty_dicts
    return lambda d: _no_empty_dicts(inner(d))


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
        transform = _parquet_safe(transform)
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
