"""The readers' figures that cards and the README quote (extract.measured) are what the bench measures now."""

from __future__ import annotations

import pytest

from extract.bench import _part_rows, measure, outcomes
from extract.measured import LLM, OFFLINE, ReaderFigures
from extract.recorded import RECORDED_DIR, RecordedExtractor, find_manifest, results_path, staleness


def _figures(os: list) -> dict[str, float]:
    m = measure(os)
    return {"error_type": m["error_type"].value, "is_resolved": m["is_resolved"].value,
            "paper_value": m["paper_value"].value, "obtained_value": m["obtained_value"].value,
            "false_positive_rate": m["false_positive_rate"].value,
            "dataset_precision": m["dataset_precision"].value, "eval_sound": m["dataset_eval_sound"].value}


def _check(stated: ReaderFigures, got: dict[str, float]) -> None:
    for k, v in got.items():
        assert getattr(stated, k) == pytest.approx(v, abs=0.0005), (stated.reader, k, v)


def test_the_llm_readers_figures_are_those_of_the_shipped_recorded_answers() -> None:
    assert staleness(find_manifest(RECORDED_DIR)) is None, "the shipped answers are stale: record them again"
    ext = RecordedExtractor(results_path(RECORDED_DIR, "test"))
    rows = _part_rows("test")
    assert all(ext.answered(t.id) for t, _, _ in rows)
    _check(LLM, _figures(outcomes(rows, ext)))


def test_the_offline_readers_figures_are_those_of_the_shipped_models() -> None:
    _check(OFFLINE, _figures(outcomes(_part_rows("test"))))
