"""Benchmark metrics with seeded bootstrap 95% confidence intervals, and grader agreement.

Per model (overall and per error type), over graded answers (provider errors excluded and counted
apart): ``hit_at_1`` / ``hit_at_3`` / ``hit_any`` (share of items whose answer names the root cause
at rank ≤ 1, ≤ 3, anywhere), ``false_positive_rate`` (unmatched directions / all directions),
``justified_rate`` (justified directions / all directions). Rates are fractions in [0, 1]; a metric
over zero items or zero directions is None.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eval_diagnosis.graders.base import Grade

N_BOOT = 1000
RATE_KEYS = ("hit_at_1", "hit_at_3", "hit_any", "false_positive_rate", "justified_rate")


def _arrays(grades: list[Grade]) -> dict[str, np.ndarray]:
    return {
        "h1": np.array([g.hit and g.hit_rank is not None and g.hit_rank <= 1 for g in grades], dtype=float),
        "h3": np.array([g.hit and g.hit_rank is not None and g.hit_rank <= 3 for g in grades], dtype=float),
        "ha": np.array([g.hit for g in grades], dtype=float),
        "fp": np.array([g.false_positives for g in grades], dtype=float),
        "nd": np.array([len(g.directions) for g in grades], dtype=float),
        "js": np.array([g.justified for g in grades], dtype=float),
    }


def _stats(a: dict[str, np.ndarray], idx: np.ndarray | None = None) -> dict[str, float | None]:
    def take(k: str) -> np.ndarray:
        return a[k] if idx is None else a[k][idx]

    n = len(take("h1"))
    nd = take("nd").sum()
    return {
        "hit_at_1": float(take("h1").mean()) if n else None,
        "hit_at_3": float(take("h3").mean()) if n else None,
        "hit_any": float(take("ha").mean()) if n else None,
        "false_positive_rate": float(take("fp").sum() / nd) if nd else None,
        "justified_rate": float(take("js").sum() / nd) if nd else None,
    }


def block(grades: list[Grade], *, seed: int, n_boot: int = N_BOOT) -> dict[str, Any]:
    """Metrics of one group of grades (one model, optionally one error type)."""
    ok = [g for g in grades if g.error is None]
    out: dict[str, Any] = {"n": len(ok), "errors": len(grades) - len(ok),
                           "mean_directions": float(np.mean([len(g.directions) for g in ok])) if ok else None}
    a = _arrays(ok)
    out.update(_stats(a))
    ci: dict[str, list[float] | None] = {k: None for k in RATE_KEYS}
    if len(ok) >= 2:
        rng = np.random.default_rng(seed)
        samples: dict[str, list[float]] = {k: [] for k in RATE_KEYS}
        for _ in range(n_boot):
            s = _stats(a, rng.integers(0, len(ok), len(ok)))
            for k in RATE_KEYS:
                if s[k] is not None:
                    samples[k].append(s[k])
        for k in RATE_KEYS:
            if samples[k]:
                lo, hi = np.percentile(samples[k], [2.5, 97.5])
                ci[k] = [round(float(lo), 4), round(float(hi), 4)]
    out["ci95"] = ci
    for k in RATE_KEYS:
        if out[k] is not None:
            out[k] = round(out[k], 4)
    return out


def summarize(grades: list[Grade], types: dict[str, str], *, seed: int = 0) -> dict[str, Any]:
    """``{model: {"overall": block, "per_type": {error_type: block}}}``; ``types`` maps item id → type."""
    by_model: dict[str, list[Grade]] = {}
    for g in grades:
        by_model.setdefault(g.model, []).append(g)
    out: dict[str, Any] = {}
    for model in sorted(by_model):
        gs = sorted(by_model[model], key=lambda g: g.id)
        per_type: dict[str, Any] = {}
        for t in sorted({types.get(g.id, "other") for g in gs}):
            per_type[t] = block([g for g in gs if types.get(g.id, "other") == t], seed=seed)
        out[model] = {"overall": block(gs, seed=seed), "per_type": per_type}
    return out


def agreement(predicted: list[bool], human: list[bool]) -> dict[str, Any]:
    """Accuracy and Cohen's kappa of a grader's hit decisions against human labels."""
    if len(predicted) != len(human) or not human:
        raise ValueError("agreement needs two equally long, non-empty label lists")
    p = np.array(predicted, dtype=bool)
    h = np.array(human, dtype=bool)
    n = len(h)
    po = float((p == h).mean())
    pe = float(p.mean() * h.mean() + (1 - p.mean()) * (1 - h.mean()))
    kappa = 1.0 if pe == 1.0 else (po - pe) / (1 - pe)
    return {
        "n": n,
        "accuracy": round(po, 4),
        "kappa": round(kappa, 4),
        "confusion": {"tp": int((p & h).sum()), "fp": int((p & ~h).sum()), "fn": int((~p & h).sum()),
                      "tn": int((~p & ~h).sum())},
    }


def _kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    if not pairs:
        return None
    n = len(pairs)
    po = sum(p == h for p, h in pairs) / n
    pp = sum(p for p, _ in pairs) / n
    ph = sum(h for _, h in pairs) / n
    pe = pp * ph + (1 - pp) * (1 - ph)
    return 1.0 if pe == 1.0 else (po - pe) / (1 - pe)


def agreement_ci(predicted: list[bool], human: list[bool], groups: list[str] | None = None, *,
                 seed: int = 0) -> dict[str, Any]:
    """:func:`agreement` plus 95% bootstrap intervals of accuracy and kappa (answers resampled by item
    when ``groups`` gives each answer's item id: the answers of one item are not independent)."""
    from reprodiag.intervals import bootstrap

    out = agreement(predicted, human)
    pairs = list(zip(predicted, human, strict=True))
    acc = bootstrap(pairs, lambda ps: sum(p == h for p, h in ps) / len(ps) if ps else None, seed=seed,
                    groups=groups)
    kap = bootstrap(pairs, _kappa, seed=seed, groups=groups)
    out["ci95"] = {"accuracy": [round(acc.lo, 4), round(acc.hi, 4)] if acc.lo is not None else None,
                   "kappa": [round(kap.lo, 4), round(kap.hi, 4)] if kap.lo is not None else None}
    return out
