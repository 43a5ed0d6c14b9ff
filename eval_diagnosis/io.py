"""Reading eval sets, answers and grader labels; every malformed input is a one-line UserError
naming the file and line (or row)."""

from __future__ import annotations

import json
from collections.abc import Iterator
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


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) for each non-empty line."""
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
                raise UserError(f"{path}:{lineno}: line longer than {MAX_LINE_CHARS} characters")
            try:
                doc = json.loads(line)
            except ValueError as exc:
                raise UserError(f"{path}:{lineno}: bad JSON ({str(exc).split(':')[0]})") from None
            if not isinstance(doc, dict):
                raise UserError(f"{path}:{lineno}: expected a JSON object, got {type(doc).__name__}")
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


def load_eval_set(path: Path) -> list[EvalItem]:
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
            rows += _eval_rows_parquet(f) if f.suffix == ".parquet" else [(f"{f}:{n}", d) for n, d in _lines(f)]
    elif path.suffix == ".parquet":
        rows = _eval_rows_parquet(path)
    else:
        rows = [(f"{path}:{n}", d) for n, d in _lines(path)]
    items: list[EvalItem] = []
    seen: set[str] = set()
    for where, doc in rows:
        item = _validate(EvalItem, doc, where)
        if item.id in seen:
            raise UserError(f"{where}: duplicate item id {item.id!r}")
        if not item.gold_root_cause.strip():
            raise UserError(f"{where}: item {item.id!r} has an empty gold_root_cause")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise UserError(f"eval set {path}: holds no items")
    return items


def load_answers(path: Path) -> list[AnswerRow]:
    """Answer rows ``{"id", "model", "answer"}``; a later row for the same (id, model) wins."""
    rows: dict[tuple[str, str], AnswerRow] = {}
    for n, doc in _lines(Path(path)):
        if doc.get("answer") is None and "answer" in doc:
            doc = {**doc, "answer": ""}
        for field in ("id", "model"):
            if field not in doc:
                raise UserError(f"{path}:{n}: missing field '{field}'")
        if "answer" not in doc and not doc.get("error"):
            raise UserError(f"{path}:{n}: missing field 'answer'")
        try:
            row = AnswerRow.model_validate(doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise UserError(f"{path}:{n}: field '{loc}': {first.get('msg')}") from None
        rows[(row.id, row.model)] = row
    return list(rows.values())


def load_labels(path: Path) -> list[LabelRow]:
    out = []
    for n, doc in _lines(Path(path)):
        for field in ("item", "answer", "hit"):
            if field not in doc:
                raise UserError(f"{path}:{n}: missing field '{field}'")
        try:
            out.append(LabelRow.model_validate(doc))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise UserError(f"{path}:{n}: field '{loc}': {first.get('msg')}") from None
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
