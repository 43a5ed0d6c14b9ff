"""The lexical grader on ``grader_labels_real.jsonl``: 30 hand-labeled answers for items derived from the
real-thread set (paraphrases, wrong types, hedge-everything lists, Chinese answers), and the concepts those
answers needed (summary-level ROUGE-L, answer normalization, metric thresholds, test-split unions, training-set
mismatch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_diagnosis.graders.concept import ConceptGrader as LexicalGrader
from eval_diagnosis.io import load_labels
from eval_diagnosis.pipeline import run_agreement
from reprodiag.schema import EvalItem

DATA = Path(__file__).resolve().parents[2] / "eval_diagnosis" / "data"
REAL = DATA / "grader_labels_real.jsonl"


def test_real_labels_cover_the_hard_cases() -> None:
    labels = load_labels(REAL)
    assert len(labels) == 30 and len({lab.item.id for lab in labels}) == 10
    assert {"paraphrase", "wrong_type", "lists_everything", "chinese", "right_type_wrong_cause"} <= {
        lab.category for lab in labels}
    assert 10 <= sum(lab.hit for lab in labels) <= 20


def test_lexical_agrees_on_real_labels_and_keeps_the_shipped_ones() -> None:
    """Measured 0.733 accuracy / 0.469 kappa on these labels with the first word-overlap grader. Neither file
    is a training set of the concept grader (it trains on answers_real/dev.jsonl): both are checks written
    by other hands. Since the hit threshold was set for precision (0.2.0: 0.767 / 0.54 on the 30, 0.885 / 0.77 on
    the 78), most disagreements are hits the grader is unsure of: uncertain, so the cascade's judge decides them."""
    res = run_agreement(REAL, LexicalGrader())
    assert res["accuracy"] >= 0.75 and res["kappa"] >= 0.5, res["disagreements"]
    assert res["uncertain_disagreeing"] >= len(res["disagreements"]) - 2, res["disagreements"]
    shipped = run_agreement(DATA / "grader_labels.jsonl", LexicalGrader())
    assert shipped["accuracy"] >= 0.85 and shipped["kappa"] >= 0.7, shipped["disagreements"]


def _item(et: str, gold: str, acceptable: list[str]) -> EvalItem:
    return EvalItem(id="x", error_type=et, symptom="s", gold_root_cause=gold, acceptable_directions=acceptable)


ROUGE = _item("evaluation_protocol", "The paper reports summary-level ROUGE-Lsum on newline-separated sentences; the "
              "asker computed sentence-level ROUGE-L.", ["ROUGE-Lsum instead of ROUGE-L"])
SQUAD = _item("evaluation_protocol", "The official script normalizes answers (lower case, articles, punctuation) "
              "before matching.", ["answer normalization before exact match"])
FSCORE = _item("evaluation_protocol", "The F-score distance threshold in the code differed from the paper's.",
               ["F-score distance threshold"])
SPLIT = _item("data", "The default test manifest combines test-clean and test-other.", ["wrong test split"])
TRAIN = _item("data", "The paper's numbers come from a model trained on LOLv1 and tested on LOLv2-real.",
              ["trained on a different dataset than the paper"])


@pytest.mark.parametrize(("item", "answer", "hit"), [
    (ROUGE, "1. The authors used rougeLsum, which splits the summary into sentences on newlines", True),
    (ROUGE, "1. Stemming and tokenization options of the ROUGE package", False),
    (SQUAD, "1. Answer strings are not normalized (case, articles) before comparison", True),
    (SQUAD, "1. Max sequence length differs\n2. Tokenizer version", False),
    (FSCORE, "1. The threshold used for the F-score is larger in the code than in the paper", True),
    (FSCORE, "1. 代码里 F-score 的距离阈值和论文不一样", True),
    (SPLIT, "1. You are scoring on the union of test-clean and test-other", True),
    (TRAIN, "1. The LOLv2 model was trained on LOLv1 images and only tested on LOLv2-real", True),
    (TRAIN, "1. Training-set mismatch: the authors may have trained on another dataset", True),
])
def test_concepts_real_answers_need(item: EvalItem, answer: str, hit: bool) -> None:
    assert LexicalGrader().grade(item, answer).hit is hit


def test_a_broader_concept_named_on_its_own_stays_a_target() -> None:
    item = _item("evaluation_protocol", "The paper reports ROUGE-Lsum with newline-separated sentences.",
                 ["rougeLsum with sentences split by newlines", "ROUGE implementation/variant"])
    assert LexicalGrader().grade(item, "1. The ROUGE package implementation differs").hit
