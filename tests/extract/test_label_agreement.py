"""Label reliability: agreement and Cohen's kappa between the corpus's gold and a second annotation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extract.label_agreement import SECOND_ANNOTATION, _kappa, agreement, load_second, thread_key
from extract.realcorpus import Labeled, load_real
from reprodiag.errors import UserError
from tests.extract.llm_helpers import llm_thread


def _row(i: int, **gold: object) -> Labeled:
    base = {"is_reproduction": True, "error_type": "data", "is_resolved": True, "paper_value": 32.7,
            "obtained_value": 20.4}
    return Labeled(llm_thread(i), {**base, **gold}, "", "dev")


def test_kappa_is_one_for_identical_zero_for_chance_and_negative_for_systematic_disagreement() -> None:
    assert _kappa([("a", "a"), ("b", "b"), ("a", "a")]) == pytest.approx(1.0)
    assert _kappa([("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]) == pytest.approx(0.0)
    assert _kappa([("a", "b"), ("b", "a")]) == pytest.approx(-1.0)
    assert _kappa([("a", "a"), ("a", "a")]) is None  # one class only: kappa undefined


def test_agreement_compares_conditional_fields_on_shared_reproductions_and_values_within_one_percent() -> None:
    gold = [_row(i) for i in range(4)] + [_row(4, is_reproduction=False)]
    second = {thread_key(r.thread.repo, r.thread.number): {"is_reproduction": r.gold["is_reproduction"],
                                                          "error_type": "data", "is_resolved": True,
                                                          "paper_value": 32.7, "obtained_value": 20.4}
              for r in gold}
    k = [thread_key(r.thread.repo, r.thread.number) for r in gold]
    second[k[0]]["error_type"] = "hyperparameter"
    second[k[1]]["paper_value"] = 32.8  # within 1%
    second[k[2]]["obtained_value"] = None
    second[k[3]]["is_reproduction"] = False  # leaves the conditional comparisons
    got = agreement(gold, second)
    assert got.threads == 5 and got.both_reproductions == 3
    assert got.agreement["is_reproduction"].value == pytest.approx(4 / 5)
    assert got.agreement["error_type"].value == pytest.approx(2 / 3)
    assert got.agreement["paper_value"].value == pytest.approx(1.0)
    assert got.agreement["obtained_value"].value == pytest.approx(2 / 3)
    assert got.agreement["is_resolved"].value == 1.0
    lo, hi = got.agreement["error_type"].lo, got.agreement["error_type"].hi
    assert lo is not None and hi is not None and lo <= 2 / 3 <= hi


@pytest.mark.parametrize("line,msg", [("{not json", "line 1"), ('{"id": "x"}', "owner/name#number"),
                                      ('{"id": "a/b#1"}', "boolean"),
                                      ('{"id": "a/b#1", "is_reproduction": true, "paper_value": "3"}', "number")])
def test_a_malformed_second_annotation_is_one_clear_error(tmp_path: Path, line: str, msg: str) -> None:
    p = tmp_path / "second.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(UserError, match=msg):
        load_second(p)


def test_the_shipped_second_annotation_covers_real_dev_threads_only() -> None:
    second = load_second(SECOND_ANNOTATION)
    dev = {thread_key(r.thread.repo, r.thread.number) for r in load_real("dev")}
    test = {thread_key(r.thread.repo, r.thread.number) for r in load_real("test")}
    assert len(second) >= 200 and set(second) <= dev and not set(second) & test
    assert all(json.dumps(v) for v in second.values())


def test_cli_bench_labels_prints_every_field(cli, tmp_path: Path) -> None:  # noqa: ANN001
    r = cli("bench", "labels", workspace=tmp_path / "ws")
    assert r.returncode == 0, r.stderr
    for field in ("is_reproduction", "error_type", "is_resolved", "paper_value", "obtained_value"):
        assert f"{field}: agreement" in r.stdout + r.stderr
    assert "kappa" in r.stdout + r.stderr
