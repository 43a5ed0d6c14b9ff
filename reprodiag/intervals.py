"""Seeded bootstrap 95% intervals for figures computed over labeled rows.

A figure is a function of a list of per-row outcomes (e.g. ``(predicted, gold)`` pairs) returning a float
or None (undefined on that sample, e.g. recall with no positives). The interval is the 2.5th and 97.5th
percentile of the figure over ``n_boot`` resamples of the rows with replacement; resamples where the figure
is undefined are skipped. Rows may be resampled in clusters (``groups``, e.g. repositories), which gives
honest intervals when rows of one group are correlated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
N_BOOT = 1000


@dataclass(frozen=True)
class Estimate:
    """A figure and its 95% bootstrap interval (``lo``/``hi`` None when fewer than 2 rows)."""

    value: float | None
    lo: float | None
    hi: float | None
    n: int

    def fmt(self, digits: int = 3) -> str:
        if self.value is None:
            return "n/a"
        if self.lo is None or self.hi is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"

    def to_json(self) -> dict[str, Any]:
        return {"value": _r(self.value), "ci95": [_r(self.lo), _r(self.hi)], "n": self.n}


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def bootstrap(rows: Sequence[T], figure: Callable[[Sequence[T]], float | None], *, seed: int = 0,
              n_boot: int = N_BOOT, groups: Sequence[str] | None = None) -> Estimate:
    """The figure on ``rows`` and its seeded 95% interval (cluster bootstrap when ``groups`` is given)."""
    value = figure(rows)
    if len(rows) < 2 or value is None:
        return Estimate(value, None, None, len(rows))
    rng = np.random.default_rng(seed)
    if groups is not None:
        keys = sorted(set(groups))
        members: dict[str, list[int]] = {k: [] for k in keys}
        for i, g in enumerate(groups):
            members[g].append(i)
    samples: list[float] = []
    for _ in range(n_boot):
        if groups is None:
            idx = rng.integers(0, len(rows), len(rows))
        else:
            pick = rng.integers(0, len(keys), len(keys))
            idx = [i for k in pick for i in members[keys[k]]]
        v = figure([rows[i] for i in idx])
        if v is not None:
            samples.append(v)
    if not samples:
        return Estimate(value, None, None, len(rows))
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return Estimate(value, float(lo), float(hi), len(rows))


def cohen_kappa(rows: Sequence[tuple[Any, Any]]) -> float | None:
    """Cohen's kappa of ``(a, b)`` label pairs (any hashable labels); None without rows or when chance
    agreement is 1 (both raters always gave the same single label)."""
    from collections import Counter

    if not rows:
        return None
    n = len(rows)
    po = sum(a == b for a, b in rows) / n
    ca, cb = Counter(a for a, _ in rows), Counter(b for _, b in rows)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    return None if pe >= 1.0 else (po - pe) / (1 - pe)
