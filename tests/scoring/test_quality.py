"""Quality score components and drop reasons."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reprodiag.schema import Quality, Record, Symptom
from scoring.config import ScoreConfig
from tests.scoring.conftest import score_one

CFG = ScoreConfig()


def components(r: Record) -> dict[str, int]:
    return score_one(r).quality.components


def quality(r: Record, config: ScoreConfig = CFG) -> Quality:
    return score_one(r, config).quality


def test_full_record_earns_every_component(make_record: Callable[..., Record]) -> None:
    r = make_record(reactions=6)
    assert components(r) == {"resolved": 3, "code": 2, "comments": 1, "engagement": 1, "quantified_gap": 1}
    q = quality(r)
    assert q.score == 8 and q.keep and q.drop_reason is None


@pytest.mark.parametrize("change, component", [
    ({"is_resolved": False}, "resolved"),
    ({"state": "open"}, "resolved"),
    ({"has_code_snippet": False}, "code"),
    ({"comments": 2}, "comments"),
    ({"reactions": 4}, "engagement"),
    ({"obtained": None}, "quantified_gap"),
    ({"paper": None}, "quantified_gap"),
])
def test_each_component_is_lost_independently(make_record: Callable[..., Record], change: dict,
                                               component: str) -> None:
    base = components(make_record(**{"reactions": 6}))
    comps = components(make_record(**{"reactions": 6, **change}))
    assert comps[component] == 0
    assert {k: v for k, v in comps.items() if k != component} == {k: v for k, v in base.items() if k != component}


def test_accepted_answer_counts_as_resolved_and_reference_as_engagement(make_record: Callable[..., Record]) -> None:
    comps = components(make_record(is_resolved=False, state="open", has_answer=True, referenced=True))
    assert comps["resolved"] == 3 and comps["engagement"] == 1


def test_threshold_is_configurable(make_record: Callable[..., Record]) -> None:
    r = make_record(has_code_snippet=False, is_resolved=False, resolution_type="unresolved")  # 1 + 1 = 2
    assert quality(r).drop_reason == "low_quality"
    assert quality(r, ScoreConfig(threshold=2)).keep


def test_unresolved_valuable_kept_below_threshold_only_with_depth(make_record: Callable[..., Record]) -> None:
    deep = make_record(is_resolved=False, resolution_type="unresolved_valuable", diagnostic_depth=3,
                       has_code_snippet=False)
    shallow = deep.model_copy(update={"diagnostic_depth": 1})
    assert quality(deep).score < CFG.threshold
    assert quality(deep).keep
    assert quality(shallow).drop_reason == "low_quality"


@pytest.mark.parametrize("kwargs, reason", [
    ({"is_reproduction": False}, "not_reproduction"),
    ({"bot_only": True}, "bot_only"),
    ({"comments": 0}, "no_replies"),
    ({"labels": ["enhancement"]}, "feature_request"),
    ({"labels": ["type: feature request"]}, "feature_request"),
    ({"labels": ["installation"]}, "environment_setup"),
    ({"error_type": "other", "paper": None, "problem_statement": "It would be nice to add support for JAX."},
     "feature_request"),
    ({"error_type": "other", "paper": None,
      "problem_statement": "pip install fails: could not build wheels for mmcv"}, "environment_setup"),
])
def test_drop_reasons(make_record: Callable[..., Record], kwargs: dict, reason: str) -> None:
    assert quality(make_record(**kwargs)).drop_reason == reason


def test_records_below_the_relevance_gate_are_dropped(make_record: Callable[..., Record]) -> None:
    """``min_relevance`` gates the filter's probability; records without one (LLM extractors) pass, and the
    gate comes after ``not_reproduction`` in the drop order."""
    assert CFG.min_relevance == 0.7
    unsure = make_record().model_copy(update={"relevance": 0.45})
    assert quality(unsure).drop_reason == "low_relevance"
    assert quality(unsure, ScoreConfig(min_relevance=0.4)).keep
    assert quality(unsure, ScoreConfig(min_relevance=0.0)).keep
    assert quality(make_record().model_copy(update={"relevance": 0.7})).keep  # at the gate: kept
    assert quality(make_record().model_copy(update={"relevance": None})).keep
    both = make_record(is_reproduction=False).model_copy(update={"relevance": 0.1})
    assert quality(both).drop_reason == "not_reproduction"
    with pytest.raises(ValueError):
        ScoreConfig(min_relevance=1.5)


def test_install_words_in_a_quantified_reproduction_do_not_drop_it(make_record: Callable[..., Record]) -> None:
    r = make_record(error_type="framework_version",
                    problem_statement="After pip install torch 2.0 my accuracy is 79.1 instead of 81.8")
    assert quality(r).keep


def test_filtered_tier_is_dropped(make_record: Callable[..., Record]) -> None:
    q = quality(make_record(year=2017, error_type="framework_version", root_cause="The default changed in torch 1.2."))
    assert not q.keep and q.drop_reason == "temporal_filtered"


def test_symptom_without_values_is_not_quantified(make_record: Callable[..., Record]) -> None:
    r = make_record().model_copy(update={"symptom": Symptom(metric="BLEU")})
    assert components(r)["quantified_gap"] == 0
