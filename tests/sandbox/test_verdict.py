"""The tolerance rules of sandbox.verdict.decide, case by case."""

from __future__ import annotations

import math

import pytest

from reprodiag.schema import ReplaySpec, RunSpec
from sandbox.spec import DEFAULT_TOLERANCE, tolerance_for
from sandbox.verdict import decide, measure, spread, within


def spec(paper: float = 80.0, reported: float | None = 70.0, task: str = "deterministic",
         tol: float | None = None, higher: bool = True) -> ReplaySpec:
    return ReplaySpec(id="c", paper_value=paper, reported_value=reported, task_type=task, tolerance=tol,
                      higher_is_better=higher, run=RunSpec(command="x", metric_regex="(1)"))


@pytest.mark.parametrize(("task", "tol"), [("deterministic", 0.05), ("nlp_generation", 0.08), ("rl", 0.15),
                                           ("generative", 0.10)])
def test_default_tolerances(task: str, tol: float) -> None:
    assert DEFAULT_TOLERANCE[task] == tol
    assert tolerance_for(spec(task=task)) == tol
    assert decide(spec(task=task), [70], [80]).tolerance == tol


def test_explicit_tolerance_wins() -> None:
    s = spec(tol=0.3)
    assert tolerance_for(s) == 0.3
    # 60 is within 30% of 80 (|60-80| = 20 <= 24): confirmed only because of the wider tolerance
    assert decide(s, [70], [60]).verdict == "confirmed"
    assert decide(spec(), [70], [60]).verdict == "fix_not_confirmed"


def test_within_is_relative_and_inclusive() -> None:
    assert within(84.0, 80.0, 0.05)      # |4| <= 4: boundary included
    assert within(76.0, 80.0, 0.05)
    assert not within(84.01, 80.0, 0.05)
    assert not within(75.99, 80.0, 0.05)
    assert within(-84.0, -80.0, 0.05)    # |v| for negative references
    assert within(0.0, 0.0, 0.05) and not within(0.001, 0.0, 0.05)
    assert within(0.1 + 0.2, 0.3, 0.0000001)  # round-off allowance


def test_confirmed() -> None:
    d = decide(spec(), [70.0], [79.0])
    assert (d.verdict, d.direction_ok) == ("confirmed", True)
    assert "within 5%" in d.reason


def test_confirmed_at_exact_tolerance_boundaries() -> None:
    assert decide(spec(), [73.5], [84.0]).verdict == "confirmed"  # before: |73.5-70| = 3.5 = 5% of 70
    assert decide(spec(), [73.51], [84.0]).verdict == "symptom_not_reproduced"


def test_symptom_not_reproduced_with_reported_value() -> None:
    d = decide(spec(), [80.0], [80.0])
    assert d.verdict == "symptom_not_reproduced"
    assert d.direction_ok is None
    assert "reported" in d.reason


def test_symptom_without_reported_value_is_a_gap_to_the_paper() -> None:
    s = spec(reported=None)
    assert decide(s, [79.0], [80.0]).verdict == "symptom_not_reproduced"   # already within 5% of 80
    assert decide(s, [70.0], [80.0]).verdict == "confirmed"
    assert decide(s, [90.0], [80.0]).verdict == "confirmed"                # a gap upwards is a symptom too


def test_fix_moves_toward_paper_without_reaching_it() -> None:
    d = decide(spec(), [70.0], [74.0])
    assert (d.verdict, d.direction_ok) == ("fix_not_confirmed", True)
    assert "weaker evidence" in d.reason


def test_fix_moves_away_or_overshoots() -> None:
    assert decide(spec(), [70.0], [65.0]).direction_ok is False
    d = decide(spec(), [70.0], [95.0])   # overshoot: farther from 80 than before
    assert (d.verdict, d.direction_ok) == ("fix_not_confirmed", False)
    assert decide(spec(), [70.0], [70.0]).direction_ok is False          # no change


def test_lower_is_better_metric_uses_the_same_distance_rules() -> None:
    s = spec(paper=10.0, reported=14.0, higher=False)   # e.g. FID
    assert decide(s, [14.0], [10.3]).verdict == "confirmed"
    assert decide(s, [14.0], [12.0]).direction_ok is True
    assert decide(s, [14.0], [16.0]).direction_ok is False


def test_unstable_spread_before_or_after() -> None:
    d = decide(spec(), [40.0, 100.0, 70.0], [80.0])
    assert d.verdict == "unstable"
    assert "before" in d.reason
    d = decide(spec(), [70.0], [50.0, 110.0, 80.0])
    assert d.verdict == "unstable" and "after" in d.reason


def test_spread_threshold_is_twenty_percent() -> None:
    # population std of [a, b] is |a-b|/2, mean (a+b)/2: cv = |a-b|/(a+b)
    assert spread(measure([80, 120])) == pytest.approx(0.2)
    assert decide(spec(paper=100, reported=100, tol=0.5), [80, 120], [100]).verdict != "unstable"
    assert decide(spec(paper=100, reported=100, tol=0.5), [79, 121], [100]).verdict == "unstable"


def test_spread_edge_cases() -> None:
    assert spread(measure([5.0])) == 0
    assert spread(measure([0.0, 0.0])) == 0
    assert spread(measure([-1.0, 1.0])) == math.inf
    assert decide(spec(paper=1, reported=0), [-1.0, 1.0], [1.0]).verdict == "unstable"


def test_seed_means_are_compared() -> None:
    d = decide(spec(), [69.0, 71.0, 70.0], [79.0, 81.0, 80.0])
    assert d.verdict == "confirmed"
    m = measure([69.0, 71.0, 70.0])
    assert m.mean == pytest.approx(70.0)
    assert m.std == pytest.approx(math.sqrt(2 / 3))


def test_missing_or_non_finite_values_are_errors() -> None:
    assert decide(spec(), [], [80.0]).verdict == "error"
    assert decide(spec(), [70.0], []).verdict == "error"
    assert decide(spec(), [float("nan")], [80.0]).verdict == "error"
    assert decide(spec(), [70.0], [float("inf")]).verdict == "error"


def test_negative_metric_values() -> None:
    s = spec(paper=-100.0, reported=-150.0, task="rl")   # e.g. RL return
    assert decide(s, [-150.0], [-110.0]).verdict == "confirmed"      # within 15% of |-100|
    d = decide(s, [-150.0], [-130.0])
    assert (d.verdict, d.direction_ok) == ("fix_not_confirmed", True)


def test_decision_is_frozen() -> None:
    d = decide(spec(), [70.0], [80.0])
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError on frozen assignment
        d.verdict = "error"  # type: ignore[misc]
