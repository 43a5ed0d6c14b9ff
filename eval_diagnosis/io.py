"""Reading eval sets, answers and grader labels; every malformed input is a one-line UserError
naming the file and line (or row), or, with an :class:`InvalidLines` collector (``--skip-invalid``), a
recorded row ``{"where", "reason"}`` and reading goes on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reprodiag.errors import UserError
from reprodiag.schema import EvalItem, SchemaError, parse_model

MAX_LINE_CHARS = 5_000_000


class AnswerRow(BaseModel):
    """One line of answers.jsonl. ``error`` is set when the provider failed for this item."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    model: str
    answer: str = ""
    error: str | None = None


class LabelRow(BaseModel):
    """One human label: was ``answer`` a hit for ``item``?"""

    model_config = ConfigDict(extra="ignore", frozen=True)

    item: EvalItem
    answer: str
    hit: bool
    notes: str = ""
    category: str = Field(default="")
    #: 1-based rank of the first direction that names the cause (answers_real files; None for a miss).
    hit_rank: int | None = None


@dataclass
class InvalidLines:
    """Bad input lines collected instead of raised (``--skip-invalid``); :meth:`write` puts them in a file."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows), encoding="utf-8")
        return path


def _bad(invalid: InvalidLines | None, where: str, reason: str) -> None:
    """Raise the one-line error, or record it when collecting."""
    if invalid is None:
        raise UserError(f"{where}: {reason}")
    invalid.rows.append({"where": where, "reason": reason})


def _lines(path: Path, invalid: InvalidLines | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) for each non-empty line (bad lines: see :func:`_bad`)."""
    try:
        fh = path.open("r", encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    with fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError:
                raise UserError(f"{path}:{lineno + 1}: not UTF-8 text") from None
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            if len(line) > MAX_LINE_CHARS:
                _bad(invalid, f"{path}:{lineno}", f"line longer than {MAX_LINE_CHARS} characters")
                continue
            try:
                doc = json.loads(line)
            except ValueError as exc:
                _bad(invalid, f"{path}:{lineno}", f"bad JSON ({str(exc).split(':')[0]})")
                continue
            if not isinstance(doc, dict):
                _bad(invalid, f"{path}:{lineno}", f"expected a JSON object, got {type(doc).__name__}")
                continue
            yield lineno, doc


def _validate(model: type[BaseModel], doc: dict[str, Any], where: str) -> Any:
    try:
        return parse_model(model, doc, model.__name__)
    except SchemaError as exc:
        raise UserError(f"{where}: {exc}") from None


def _eval_rows_parquet(path: Path) -> list[tuple[str, dict[str, Any]]]:
    import polars as pl

    try:
        df = pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable parquet is a user error
        raise UserError(f"{path}: not a readable Parquet file ({type(exc).__name__})") from None
    return [(f"{path}: row {i + 1}", row) for i, row in enumerate(df.to_dicts())]


def load_eval_set(path: Path, invalid: InvalidLines | None = None) -> list[EvalItem]:
    """EvalItems from a JSONL file, a Parquet file, or a build output directory (``OUT`` or ``OUT/eval``)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"eval set {path}: no such file or directory")
    rows: list[tuple[str, dict[str, Any]]] = []
    if path.is_dir():
        if (path / "eval").is_dir():
            path = path / "eval"
        files = sorted(path.glob("*.parquet")) or sorted(path.glob("*.jsonl"))
        if not files:
            raise UserError(f"eval set {path}: directory holds no .parquet or .jsonl eval file")
        for f in files:
            rows += _eval_rows_parquet(f) if f.suffix == ".parquet" else [(f"{f}:{n}", d) for n, d in _lines(f, invalid)]
    elif path.suffix == ".parquet":
        rows = _eval_rows_parquet(path)
    else:
        rows = [(f"{path}:{n}", d) for n, d in _lines(path, invalid)]
    items: list[EvalItem] = []
    seen: set[str] = set()
    for where, doc in rows:
        try:
            item = _validate(EvalItem, doc, where)
        except UserError as exc:
            if invalid is None:
                raise
            invalid.rows.append({"where": where, "reason": str(exc).split(": ", 1)[-1]})
            continue
        if item.id in seen:
            _bad(invalid, where, f"duplicate item id {item.id!r}")
            continue
        if not item.gold_root_cause.strip():
            _bad(invalid, where, f"item {item.id!r} has an empty gold_root_cause")
            continue
        seen.add(item.id)
        items.append(item)
    if not items:
        raise UserError(f"eval set {path}: holds no items")
    return items


def _missing(doc: dict[str, Any], fields: tuple[str, ...]) -> str | None:
    return next((f"missing field '{f}'" for f in fields if f not in doc), None)


def _field_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return f"field '{'.'.join(str(p) for p in first.get('loc', ()))}': {first.get('msg')}"


def load_answers(path: Path, invalid: InvalidLines | None = None) -> list[AnswerRow]:
    """Answer rows ``{"id", "model", "answer"}``; a later row for the same (id, model) wins."""
    rows: dict[tuple[str, str], AnswerRow] = {}
    for n, doc in _lines(Path(path), invalid):
        if doc.get("answer") is None and "answer" in doc:
            doc = {**doc, "answer": ""}
        why = _missing(doc, ("id", "model")) or (
            "missing field 'answer'" if "answer" not in doc and not doc.get("error") else None)
        if why:
            _bad(invalid, f"{path}:{n}", why)
            continue
        try:
            row = AnswerRow.model_validate(doc)
        except ValidationError as exc:
            _bad(invalid, f"{path}:{n}", _field_error(exc))
            continue
        rows[(row.id, row.model)] = row
    return list(rows.values())


def load_labels(path: Path, invalid: InvalidLines | None = None) -> list[LabelRow]:
    out = []
    for n, doc in _lines(Path(path), invalid):
        why = _missing(doc, ("item", "answer", "hit"))
        if why:
            _bad(invalid, f"{path}:{n}", why)
            continue
        try:
            out.append(LabelRow.model_validate(doc))
        except ValidationError as exc:
            _bad(invalid, f"{path}:{n}", _field_error(exc))
    if not out:
        raise UserError(f"{path}: holds no labels")
    return out


def read_resumable_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a file this package appends to; a torn last line (killed writer) is cut off the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(cut)
        data = data[:cut]
    out = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out
