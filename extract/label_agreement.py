"""How reliable the real-thread corpus's labels are: agreement between the corpus's gold and a second,
independent annotation of a sample of it, made blind to the gold by the same written rules
(``extract/data/real/LABELING.md``).

Two annotators who agree on a label in a fraction *a* of the threads bound what any extractor can be
measured to reach on that label: where they disagree, one of them is "wrong" by the other's reading, and a
model that agrees with one cannot be scored above the two's agreement by more than chance. The figures are
raw agreement and Cohen's kappa (agreement beyond what the two label distributions give by chance), each
with a 95% bootstrap interval over threads. Fields conditional on a reproduction (error type,
is_resolved, values) are compared on the threads both call a reproduction. Values agree when both are
null or both are within 1% of each other (the corpus's value tolerance).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extract.realcorpus import Labeled, load_real
from reprodiag.errors import UserError, read_user_text
from reprodiag.intervals import Estimate, bootstrap, cohen_kappa
from reprodiag.schema import StageReport

SECOND_ANNOTATION = Path(__file__).resolve().parent / "data" / "real" / "second_annotation.jsonl"
FIELDS = ("is_reproduction", "error_type", "is_resolved", "paper_value", "obtained_value")
_BOOL = ("is_reproduction", "is_resolved")


def thread_key(repo: str, number: int) -> str:
    return f"{repo.lower()}#{number}"


def load_second(path: Path) -> dict[str, dict[str, Any]]:
    """``{"id": "owner/name#N", <FIELDS>...}`` per line; a malformed line is a one-line UserError."""
    out: dict[str, dict[str, Any]] = {}
    for no, line in enumerate(read_user_text(path, "second annotation").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or "#" not in doc["id"]:
                raise ValueError("expected an object with an 'id' of the form owner/name#number")
            if not isinstance(doc.get("is_reproduction"), bool):
                raise ValueError("expected a boolean 'is_reproduction'")
            for k in ("paper_value", "obtained_value"):
                v = doc.get(k)
                if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                    raise ValueError(f"'{k}' must be a number or null")
        except ValueError as exc:
            raise UserError(f"{path}:{no}: {' '.join(str(exc).split())[:200]}") from None
        repo, _, num = doc["id"].rpartition("#")
        out[f"{repo.lower()}#{num}"] = doc
    return out


def _same_value(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = float(a), float(b)
    return abs(a - b) <= 0.01 * max(abs(a), abs(b))


Pair = tuple[Any, Any]


def _agree(field: str) -> Callable[[Sequence[Pair]], float | None]:
    def fig(rows: Sequence[Pair]) -> float | None:
        if not rows:
            return None
        same = _same_value if field.endswith("_value") else (lambda a, b: a == b)
        return sum(same(a, b) for a, b in rows) / len(rows)
    return fig


_kappa = cohen_kappa


@dataclass(frozen=True)
class Agreement:
    """Per field: raw agreement and (for categorical fields) Cohen's kappa, with 95% intervals."""

    threads: int
    both_reproductions: int
    agreement: dict[str, Estimate]
    kappa: dict[str, Estimate]


def _gold(r: Labeled, field: str) -> Any:
    v = r.gold.get(field)
    if field == "error_type":
        return v or "other"
    return v


def agreement(gold: list[Labeled], second: dict[str, dict[str, Any]], *, seed: int = 0) -> Agreement:
    """The two annotations compared on the threads both cover (``second`` keyed by :func:`thread_key`)."""
    both = [(r, second[k]) for r in gold if (k := thread_key(r.thread.repo, r.thread.number)) in second]
    if len(both) < 2:
        raise UserError("the second annotation covers fewer than 2 threads of the corpus")
    pos = [(r, s) for r, s in both if r.gold["is_reproduction"] and s["is_reproduction"]]
    agree: dict[str, Estimate] = {}
    kappa: dict[str, Estimate] = {}
    for field in FIELDS:
        rows = both if field == "is_reproduction" else pos
        pairs = [(_gold(r, field), (s.get(field) or "other") if field == "error_type" else s.get(field))
                 for r, s in rows]
        if field == "is_resolved":
            pairs = [(bool(a), bool(b)) for a, b in pairs]
        agree[field] = bootstrap(pairs, _agree(field), seed=seed)
        if field in _BOOL or field == "error_type":
            kappa[field] = bootstrap(pairs, _kappa, seed=seed)
    return Agreement(len(both), len(pos), agree, kappa)


def run_label_bench(*, second: Path | None = None, seed: int = 0) -> StageReport:
    """``reprodiag bench labels``: the shipped second annotation (or ``second``) against the corpus's gold."""
    got = agreement(load_real("all"), load_second(second or SECOND_ANNOTATION), seed=seed)
    rep = StageReport(stage="bench-labels", counts={"threads": got.threads,
                                                    "both_reproductions": got.both_reproductions})
    for field in FIELDS:
        line = f"{field}: agreement {got.agreement[field].fmt()}"
        if field in got.kappa:
            line += f", kappa {got.kappa[field].fmt()}"
        rep.notes.append(line)
    return rep
