"""Metrics, bootstrap intervals and agreement statistics."""

from __future__ import annotations

import pytest

from eval_diagnosis.graders.base import DirectionGrade, Grade
from eval_diagnosis.metrics import agreement, block, summarize


def _g(i: int, rank: int | None, n_dirs: int = 3, model: str = "m", error: str | None = None) -> Grade:
    dirs = [DirectionGrade(text=f"d{k}", matched=(rank == k + 1), justified=k == 0) for k in range(n_dirs)]
    return Grade(id=f"i{i}", model=model, hit=rank is not None, hit_rank=rank, directions=dirs,
                 false_positives=n_dirs - (rank is not None), justified=1, error=error)


def test_rates_and_intervals() -> None:
    grades = [_g(0, 1), _g(1, 2), _g(2, 3), _g(3, None), _g(4, None, error="HTTP 500")]
    b = block(grades, seed=0)
    assert b["n"] == 4 and b["errors"] == 1
    assert b["hit_at_1"] == 0.25 and b["hit_at_3"] == 0.75 and b["hit_any"] == 0.75
    assert b["false_positive_rate"] == pytest.approx(9 / 12, abs=1e-4)
    assert b["justified_rate"] == pytest.approx(4 / 12, abs=1e-4)
    lo, hi = b["ci95"]["hit_any"]
    assert 0 <= lo <= 0.75 <= hi <= 1
    assert block(grades, seed=0) == b  # seeded
    assert block([], seed=0)["hit_any"] is None


def test_summary_per_model_and_type() -> None:
    grades = [_g(0, 1), _g(1, None), _g(0, None, model="n"), _g(1, None, model="n")]
    s = summarize(grades, {"i0": "data", "i1": "hyperparameter"})
    assert set(s) == {"m", "n"}
    assert s["m"]["per_type"]["data"]["hit_any"] == 1.0
    assert s["m"]["per_type"]["hyperparameter"]["hit_any"] == 0.0
    assert s["n"]["overall"]["hit_any"] == 0.0


def test_agreement_kappa() -> None:
    res = agreement([True, True, False, False], [True, False, False, False])
    assert res["accuracy"] == 0.75
    assert res["kappa"] == pytest.approx(0.5)
    assert res["confusion"] == {"tp": 1, "fp": 1, "fn": 0, "tn": 2}
    assert agreement([True, False], [True, False])["kappa"] == 1.0
