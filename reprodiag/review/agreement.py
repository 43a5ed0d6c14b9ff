"""What a build's dataset card says about people's reviews: how much of the eval set a person checked, and
how far the reader and the reviewers (and two reviewers) agree, field by field.

Agreement of a field is the share of pairs with the same value (texts compared case- and
whitespace-insensitively, :func:`~reprodiag.review.fields.comparable`); for categorical fields (error type,
resolved, a reviewer's decision) also Cohen's kappa, agreement beyond what the two sides' label
distributions give by chance (undefined, shown as n/a, when both sides use one single value). Each figure
has a seeded 95% bootstrap interval that resamples items (a reviewer's decisions on one item are not
independent of each other): :mod:`reprodiag.intervals`.

- Reader vs reviewer: one pair per reviewer and item the reviewer accepted or edited (a rejected item has no
  reviewer fields; rejections are counted instead), both queues.
- Reviewer vs reviewer: every two reviewers who decided the same item; the decision (accept / edit /
  reject) on all such items, the fields on the items both kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from reprodiag.intervals import Estimate, bootstrap, cohen_kappa
from reprodiag.review.decisions import Combined, Decision
from reprodiag.review.fields import FIELDS, comparable
from reprodiag.schema import ERROR_TYPES

#: Fields with a kappa (categorical); the others get the agreement share only.
CATEGORICAL = ("decision", "error_type", "is_resolved")

Pair = tuple[Any, Any]


kappa = cohen_kappa


def agreement_share(rows: Sequence[Pair]) -> float | None:
    """Share of pairs whose two values are equal; None without rows."""
    return sum(a == b for a, b in rows) / len(rows) if rows else None


@dataclass(frozen=True)
class FieldAgreement:
    """One field's pairs, agreement share and (categorical fields) kappa, each with its 95% interval."""

    field: str
    pairs: int
    agreement: Estimate
    kappa: Estimate | None = None


def _field_rows(field_: str, pairs: list[Pair], groups: list[str], seed: int) -> FieldAgreement:
    agree = bootstrap(pairs, agreement_share, seed=seed, groups=groups)
    kap = bootstrap(pairs, kappa, seed=seed, groups=groups) if field_ in CATEGORICAL else None
    return FieldAgreement(field_, len(pairs), agree, kap)


@dataclass(frozen=True)
class ReviewFacts:
    """Everything the card's "Checked by people" section states (counts are of this build and workspace)."""

    #: error type → eval items of this build, and of them those a person accepted or edited
    eval_items: dict[str, int]
    eval_reviewed: dict[str, int]
    #: items with a current (not stale) decision, in any queue, and the people who made them
    items_reviewed: int
    reviewers: int
    #: current, not stale decisions by kind (accept / edit / reject)
    decisions: Counter[str] = field(default_factory=Counter)
    #: decisions on a record read again since (not applied)
    stale: int = 0
    reader_vs_reviewer: list[FieldAgreement] = field(default_factory=list)
    #: items two reviewers decided, and their agreement
    reviewer_pairs: int = 0
    reviewer_vs_reviewer: list[FieldAgreement] = field(default_factory=list)
    reviewed_only: bool = False

    @property
    def total_eval(self) -> int:
        return sum(self.eval_items.values())

    @property
    def reviewed_eval(self) -> int:
        return sum(self.eval_reviewed.values())

    def summary_line(self) -> str:
        """One line for the build's notes."""
        n, k = self.total_eval, self.reviewed_eval
        if n and k == n:
            head = f"review: all {n} eval items were checked by a person"
        else:
            head = f"review: {k} of {n} eval items were checked by a person"
        return (head + f" ({self.items_reviewed} items reviewed in the workspace: "
                + ", ".join(f"{d} {self.decisions.get(d, 0)}" for d in ("accept", "edit", "reject"))
                + (f"; {self.stale} stale decisions not applied" if self.stale else "") + ")")


def _reader_pairs(combined: Mapping[str, Combined], seed: int) -> list[FieldAgreement]:
    rows: dict[str, list[Pair]] = {f: [] for f in FIELDS}
    groups: list[str] = []
    for item, c in sorted(combined.items()):
        for d in c.decisions:
            if d.after is None:
                continue
            groups.append(item)
            for f in FIELDS:
                rows[f].append((comparable(f, d.before[f]), comparable(f, d.after[f])))
    if not groups:
        return []
    return [_field_rows(f, rows[f], groups, seed) for f in FIELDS]


def _reviewer_pairs(combined: Mapping[str, Combined], seed: int) -> tuple[int, list[FieldAgreement]]:
    decision_rows: list[Pair] = []
    decision_groups: list[str] = []
    rows: dict[str, list[Pair]] = {f: [] for f in FIELDS}
    groups: list[str] = []
    items = 0
    for item, c in sorted(combined.items()):
        per: dict[str, Decision] = {d.reviewer: d for d in c.decisions}
        if len(per) < 2:
            continue
        items += 1
        for a, b in combinations(sorted(per), 2):
            da, db = per[a], per[b]
            decision_rows.append((da.decision, db.decision))
            decision_groups.append(item)
            if da.after is not None and db.after is not None:
                groups.append(item)
                for f in FIELDS:
                    rows[f].append((comparable(f, da.after[f]), comparable(f, db.after[f])))
    if not items:
        return 0, []
    out = [_field_rows("decision", decision_rows, decision_groups, seed)]
    if groups:
        out += [_field_rows(f, rows[f], groups, seed) for f in FIELDS]
    return items, out


def review_facts(combined: Mapping[str, Combined], stale: Sequence[Decision], *,
                 eval_items: Sequence[tuple[str, str]], reviewed_only: bool = False, seed: int = 0) -> ReviewFacts:
    """The card's review facts from the combined current decisions (:func:`~reprodiag.review.decisions.combine`),
    the stale ones, and this build's eval items as ``(item id, error type)``."""
    per_type = Counter(t for _i, t in eval_items)
    reviewed = Counter(t for i, t in eval_items if i in combined and combined[i].kept)
    decisions = Counter(d.decision for c in combined.values() for d in c.decisions)
    people = {d.reviewer for c in combined.values() for d in c.decisions}
    pairs, between = _reviewer_pairs(combined, seed)
    types = [t for t in ERROR_TYPES if per_type.get(t)] + sorted(set(per_type) - set(ERROR_TYPES))
    return ReviewFacts(
        eval_items={t: per_type[t] for t in types}, eval_reviewed={t: reviewed[t] for t in types},
        items_reviewed=len(combined), reviewers=len(people), decisions=decisions, stale=len(stale),
        reader_vs_reviewer=_reader_pairs(combined, seed), reviewer_pairs=pairs, reviewer_vs_reviewer=between,
        reviewed_only=reviewed_only)
