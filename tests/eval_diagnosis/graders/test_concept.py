"""The concept grader (``lexical``): cause concepts from the shared taxonomy, negation, hedge lists, generic
directions, Chinese answers, calibrated uncertainty, the controls, agreement with intervals, the
``lexical+llm`` cascade through the fake OpenAI server, and the agreement card in results.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eval_diagnosis.directions import CONCEPT_BY_ID, TAXONOMY_PATH, _load_taxonomy
from eval_diagnosis.graders import make_grader
from eval_diagnosis.graders.concept import ConceptGrader
from eval_diagnosis.graders.concept_features import affirmed, gold_concepts
from eval_diagnosis.pipeline import HEDGE_ANSWER, TEST_LABELS, run_agreement, run_controls
from reprodiag.errors import UserError
from reprodiag.schema import EvalItem
from tests.fakes.llm_server import Reply

LR = EvalItem(id="lr", error_type="hyperparameter", symptom="COCO box AP 35.4, model zoo 37.4",
              tried="official config with 4 GPUs",
              gold_root_cause="The config assumes 8 GPUs with 2 images each; on 4 GPUs the learning rate was not "
                              "scaled down with the halved total batch size.",
              acceptable_directions=["learning rate not scaled to the total batch size"])
BLEU = EvalItem(id="bleu", error_type="evaluation_protocol", symptom="BLEU 26.1, paper 28.4",
                gold_root_cause="The paper reports tokenized BLEU from multi-bleu.perl; the user scored "
                                "detokenized output with sacreBLEU.",
                acceptable_directions=["tokenized vs detokenized BLEU"])


@pytest.fixture(scope="module")
def grader() -> ConceptGrader:
    return ConceptGrader()


def test_taxonomy_is_a_data_file_with_types_synonyms_and_confusables() -> None:
    doc = json.loads(TAXONOMY_PATH.read_text(encoding="utf-8"))
    ids = {c["id"] for c in doc["concepts"]}
    for cid in ("bleu_tokenization", "metric_averaging", "beam", "gpu_scaling", "warmup", "epochs",
                "dataset_version", "split", "normalization", "preprocess", "changed_default", "nondeterminism",
                "precision", "seed", "multigpu"):
        assert cid in ids
    assert all(set(c["confusable_with"]) <= ids for c in doc["concepts"])
    assert any("学习率" == zh for zh, _ in doc["translations"])
    assert CONCEPT_BY_ID["warmup"].confusable_with and CONCEPT_BY_ID["seed"].types == ("seed_hardware",)


def test_malformed_taxonomy_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text('{"format": "reprodiag-taxonomy-1", "concepts": [{"id": "x", "pattern": "("}]}')
    with pytest.raises(UserError, match="malformed cause taxonomy"):
        _load_taxonomy(bad)


def test_gold_concepts_are_derived_and_subsume_broader_ones() -> None:
    got = gold_concepts(LR.gold_root_cause, LR.acceptable_directions, LR.error_type)
    assert "gpu_scaling" in got or {"lr", "batch"} <= set(got)
    assert "bleu_tokenization" in gold_concepts(BLEU.gold_root_cause, BLEU.acceptable_directions, BLEU.error_type)


def test_paraphrase_and_rank_three_are_hits(grader: ConceptGrader) -> None:
    g = grader.grade(LR, "1. The learning rate should be halved: the config was tuned for 16 images per "
                         "iteration and you feed 8.\n2. Random seed.")
    # precision first: a paraphrase the model is not sure of is not credited offline, it is left to the judge
    assert (g.hit and g.hit_rank == 1) or (g.uncertain and g.confidence is not None and g.confidence > 0.4)
    g3 = grader.grade(LR, "1. Data augmentation differs.\n2. The evaluation uses a different COCO split.\n"
                          "3. The learning rate was not scaled down for the smaller total batch on 4 GPUs.")
    assert g3.hit and g3.hit_rank == 3


def test_wrong_causes_generic_directions_and_hedges_are_misses(grader: ConceptGrader) -> None:
    assert not grader.grade(LR, "1. The PyTorch version changed a default.\n2. cuDNN nondeterminism.").hit
    assert not grader.grade(LR, "1. Check your config.\n2. Make sure you follow the README.").hit
    hedge = grader.grade(LR, HEDGE_ANSWER)
    assert not hedge.hit and "hedge" in hedge.reason


def test_negation_rules_the_cause_out(grader: ConceptGrader) -> None:
    assert affirmed("The learning rate is not the cause here; the data split is.") .strip().startswith("the data")
    neg = grader.grade(LR, "1. The learning rate is not the problem here, since it is already scaled for 4 "
                           "GPUs.\n2. The COCO annotations version may differ.")
    assert not neg.hit
    assert not grader.grade(BLEU, "1. It is not the BLEU tokenization, both use sacreBLEU.\n2. Beam size.").hit


def test_chinese_answers(grader: ConceptGrader) -> None:
    zh = grader.grade(LR, "1. 学习率没有按照总 batch size 线性缩放：配置默认 8 卡，你只用了 4 卡\n2. 数据集版本")
    assert zh.hit or zh.uncertain
    assert not grader.grade(LR, "1. 随机种子不同导致结果波动\n2. 数据预处理不同").hit


def test_grades_carry_a_calibrated_confidence(grader: ConceptGrader) -> None:
    g = grader.grade(BLEU, "1. Scored with sacreBLEU on detokenized text instead of tokenized multi-bleu.perl")
    assert g.hit and g.confidence is not None and 0.0 <= g.confidence <= 1.0 and not g.uncertain


def test_controls_on_the_shipped_test_items(grader: ConceptGrader) -> None:
    from eval_diagnosis.io import load_labels

    items = list({lab.item.id: lab.item for lab in load_labels(TEST_LABELS)}.values())
    res = run_controls(items, grader)
    assert res["shifted"]["hit_rate"] <= 0.05 and res["gold"]["hit_rate"] >= 0.95
    assert res["hedge"]["hit_rate"] == 0.0
    lo, hi = res["shifted"]["ci95"]
    assert lo <= res["shifted"]["hit_rate"] <= hi


def test_agreement_on_frozen_test_labels_has_intervals_and_meets_the_target(grader: ConceptGrader) -> None:
    res = run_agreement(TEST_LABELS, grader)
    assert res["accuracy"] >= 0.85 and res["kappa"] >= 0.7
    for k in ("accuracy", "kappa"):
        lo, hi = res["ci95"][k]
        assert lo <= res[k] <= hi and hi - lo < 0.3
    assert {"paraphrase", "rank3", "same_type_wrong", "other_type_wrong", "hedge"} <= set(res["per_category"])
    assert res["per_category"]["hedge"]["accuracy"] == 1.0


def test_cascade_sends_only_uncertain_answers_to_the_judge(openai_server, monkeypatch: pytest.MonkeyPatch,
                                                           grader: ConceptGrader) -> None:  # noqa: ANN001
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.default = Reply.of_text('{"matches": [true], "reason": "names the averaging"}')
    cascade = make_grader("lexical+llm:openai:judge-1")
    assert cascade.name == "lexical+llm:openai:judge-1"
    sure = "1. Scored with sacreBLEU on detokenized text instead of tokenized multi-bleu.perl"
    assert not grader.grade(BLEU, sure).uncertain
    g = cascade.grade(BLEU, sure)
    assert g.hit and not openai_server.api_requests("/v1/chat/completions")
    # an answer the offline grader is unsure about: the first uncertain grade among the labeled dev answers
    from eval_diagnosis.graders.training import ANSWERS_DIR
    from eval_diagnosis.io import load_labels

    unsure = next(lab for lab in load_labels(ANSWERS_DIR / "dev.jsonl") if grader.grade(lab.item, lab.answer).uncertain)
    n = len(grader.grade(unsure.item, unsure.answer).directions)
    openai_server.default = Reply.of_text('{"verdicts": [' + ", ".join(
        f'{{"n": {i}, "reasoning": "r", "match": {"true" if i == 1 else "false"}}}' for i in range(1, n + 1)) + "]}")
    j = cascade.grade(unsure.item, unsure.answer)
    assert j.hit and j.hit_rank == 1 and not j.uncertain and "judge" in j.reason
    assert 1 <= len(openai_server.api_requests("/v1/chat/completions")) <= 2  # a second pass if it disagreed


def test_results_json_states_the_graders_agreement(tmp_path: Path) -> None:
    from eval_diagnosis.pipeline import run_grade

    items = tmp_path / "eval.jsonl"
    items.write_text("".join(json.dumps(it.model_dump(mode="json")) + "\n" for it in (LR, BLEU)))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": "lr", "model": "m", "answer": "1. learning rate not scaled"}) + "\n"
                       + json.dumps({"id": "bleu", "model": "m", "answer": "1. seed"}) + "\n")
    run_grade(items, answers=answers, grader="lexical", out_dir=tmp_path / "out", agreement=None)
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    card = res["grader_agreement"]
    assert card["measured"] and card["n"] >= 200 and card["kappa"] >= 0.7 and len(card["ci95"]["kappa"]) == 2
    html = (tmp_path / "out" / "report.html").read_text()
    assert "agreement with the labels" in html and f"{card['kappa']:.2f}" in html
    assert "applied by a model reader" in html and "estimate" in html  # who labeled, and what the figure is
    assert card["controls"]["other_type"]["hit_rate"] <= 0.05


def test_judge_shuffles_directions_and_grades_again_when_it_disagrees_with_the_offline_grader(
        openai_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The judge sees the directions in a seeded shuffled order with their own numbers; when its verdict
    disagrees with the offline grader it is asked again in another order; two disagreeing passes keep the
    offline decision, marked uncertain."""
    from eval_diagnosis.graders.llm import _order

    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    answer = ("1. Random seed variance.\n2. The COCO annotation version.\n3. The learning rate was not scaled "
              "down for the smaller total batch on 4 GPUs.\n4. Image resize interpolation.")
    orders = {tuple(_order(LR, answer, 4, s)) for s in (0, 1)}
    assert len(orders) == 2 and all(sorted(o) == [0, 1, 2, 3] for o in orders)
    judge = make_grader("llm:openai:judge-1")
    no = '{"verdicts": [' + ", ".join(f'{{"n": {i}, "reasoning": "r", "match": false}}' for i in range(1, 5)) + "]}"
    yes3 = no.replace('{"n": 3, "reasoning": "r", "match": false}', '{"n": 3, "reasoning": "r", "match": true}')
    # first pass says miss (disagrees with the offline hit), second pass says hit: offline decision kept
    openai_server.script(Reply.of_text(no), Reply.of_text(yes3))
    g = judge.grade(LR, answer)
    reqs = openai_server.api_requests("/v1/chat/completions")
    assert len(reqs) == 2 and g.hit and g.hit_rank == 3 and g.uncertain
    shown = [re.findall(r"^(\d)\. ", r.prompt_text, re.M) for r in openai_server.requests[-2:]]
    assert shown[0] != shown[1]
    # a judge that agrees with the offline grader is asked once
    openai_server.script(Reply.of_text(yes3))
    g2 = judge.grade(LR, answer)
    assert g2.hit and not g2.uncertain and len(openai_server.api_requests("/v1/chat/completions")) == 3


def test_llm_judge_is_measured_with_grade_agreement(tmp_path: Path, openai_server,  # noqa: ANN001
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`reprodiag grade --agreement LABELS --grader llm:SPEC` measures the judge like the offline grader."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    lines = TEST_LABELS.read_text(encoding="utf-8").splitlines()[:12]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def judge(rec):  # noqa: ANN001, ANN202 - a judge that calls every first-shown direction a match
        n = len(re.findall(r"^\d+\. ", rec.prompt_text.split("Directions in the answer")[1], re.M))
        return Reply.of_text('{"verdicts": [' + ", ".join(
            f'{{"n": {i}, "reasoning": "r", "match": {"true" if i == 1 else "false"}}}' for i in range(1, n + 1))
            + "]}")

    openai_server.responder = judge
    res = run_agreement(labels, make_grader("llm:openai:judge-1"))
    assert res["grader"] == "llm:openai:judge-1" and res["n"] == 12
    assert 0.0 <= res["accuracy"] <= 1.0 and len(res["ci95"]["accuracy"]) == 2
    assert len(openai_server.api_requests("/v1/chat/completions")) >= 12
