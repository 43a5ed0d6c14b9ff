"""The real-thread corpus (``extract/data/real/``): threads of public ML-paper repositories, paraphrased,
with human labels written by the rules of ``extract/data/real/LABELING.md`` before any rule or model saw
them. Parts: ``dev`` (train and tune here, cross-validated by repository) and ``test`` (frozen)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError, read_user_text
from reprodiag.schema import SchemaError, Thread, parse_thread

REAL_DIR = Path(__file__).resolve().parent / "data" / "real"
PARTS = ("dev", "test")


@dataclass(frozen=True)
class Labeled:
    """One labeled thread. ``gold`` holds the LABELING.md fields (is_reproduction, error_type,
    is_resolved, resolution_type, metric, paper_value, obtained_value, root_cause, negative_kind,
    language)."""

    thread: Thread
    gold: dict[str, Any]
    source_url: str
    split: str

    @property
    def repo(self) -> str:
        return self.thread.repo.lower()


def split_of(repo: str) -> str:
    """``test`` for about 40% of repositories (by a stable hash of the lower-cased name), else ``dev``."""
    return "test" if int(hashlib.sha256(repo.lower().encode()).hexdigest(), 16) % 5 in (0, 1) else "dev"


def load_file(path: Path) -> list[Labeled]:
    """Rows of one JSONL file; a malformed line is a one-line UserError naming file and line. Rows in the
    older ``{"thread", "label"}`` format are read too (``label`` as ``gold``; is_resolved from
    resolution_type)."""
    lines = read_user_text(path, "labeled set").splitlines()
    out: list[Labeled] = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise ValueError("expected a JSON object")
            gold = doc.get("gold", doc.get("label"))
            if not isinstance(gold, dict) or not isinstance(gold.get("is_reproduction"), bool):
                raise ValueError("expected 'gold' (or 'label') with a boolean is_reproduction")
            gold = dict(gold)
            gold.setdefault("is_resolved", gold.get("resolution_type") == "resolved")
            t = parse_thread(doc.get("thread"))
            out.append(Labeled(t, gold, str(doc.get("source_url") or t.url), str(doc.get("split") or "")))
        except (ValueError, SchemaError) as exc:
            raise UserError(f"{path}:{no}: {' '.join(str(exc).split())[:200]}") from None
    return out


def load_real(part: str = "dev", root: Path | None = None) -> list[Labeled]:
    """``dev``, ``test`` or ``all`` of the real-thread corpus."""
    base = root or REAL_DIR
    parts = PARTS if part == "all" else (part,)
    if any(p not in PARTS for p in parts):
        raise UserError(f"unknown corpus part {part!r}: expected dev, test or all")
    rows: list[Labeled] = []
    for p in parts:
        rows.extend(load_file(base / f"{p}.jsonl"))
    return rows
