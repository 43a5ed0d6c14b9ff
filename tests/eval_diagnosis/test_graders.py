"""Graders: lexical (offline) and LLM judges against the fake provider servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_diagnosis.graders import make_grader
from eval_diagnosis.graders.concept import ConceptGrader as LexicalGrader
from eval_diagnosis.io import load_labels
from eval_diagnosis.pipeline import run_agreement
from reprodiag.errors import UserError
from reprodiag.schema import EvalItem
from tests.fakes.llm_server import Reply

LABELS = Path(__file__).resolve().parents[2] / "eval_diagnosis" / "data" / "grader_labels.jsonl"

ITEM = EvalItem(id="i1", error_type="hyperparameter", symptom="BLEU 25.8, paper 27.3",
                gold_root_cause="Warmup was 400 steps instead of the 4000 warmup steps of the paper.",
                acceptable_directions=["learning-rate warmup steps"])


def test_shipped_labels_cover_the_hard_cases() -> None:
    labels = load_labels(LABELS)
    assert len(labels) >= 60
    cats = {lab.category for lab in labels}
    assert {"paraphrase", "wrong_type", "vague", "lists_everything", "chinese", "empty", "garbage"} <= cats
    assert sum(lab.hit for lab in labels) and sum(not lab.hit for lab in labels)


def test_lexical_agrees_with_human_labels() -> None:
    res = run_agreement(LABELS, LexicalGrader())
    assert res["accuracy"] >= 0.85 and res["kappa"] >= 0.7, res["disagreements"]


def test_hit_rank_false_positives_and_justification() -> None:
    g = LexicalGrader().grade(ITEM, "1. Seed variance\n2. Warm-up too short: 400 vs 4000 steps\n3. dropout")
    assert g.hit and g.hit_rank == 2 and g.false_positives == 2
    assert [d.matched for d in g.directions] == [False, True, False]
    assert g.justified == 1


def test_misses_are_explained() -> None:
    gr = LexicalGrader()
    assert gr.grade(ITEM, "").reason == "miss: empty answer"
    assert "garbage" in gr.grade(ITEM, "#### ???").reason
    vague = gr.grade(ITEM, "1. Check your hyperparameters")
    assert not vague.hit and vague.false_positives == 1
    everything = gr.grade(ITEM, "1. warmup\n2. data preprocessing\n3. BLEU script\n4. PyTorch version\n5. seed")
    assert not everything.hit and "hedge" in everything.reason and everything.false_positives == 5


def test_item_without_acceptable_directions_uses_the_root_cause() -> None:
    item = ITEM.model_copy(update={"acceptable_directions": []})
    g = LexicalGrader().grade(item, "1. The warmup schedule is too short")
    assert g.hit or g.uncertain  # offline, a paraphrase below the hit threshold goes to the judge


def test_unknown_grader_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown grader"):
        make_grader("regex")


def test_llm_judge_with_reference(openai_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.script(Reply.of_text('Sure: {"verdicts": [{"n": 2, "reasoning": "ramp-up is warmup", "match": true}, '
                                       '{"n": 1, "reasoning": "seeds are not it", "match": false}], "reason": "x"}'))
    grader = make_grader("llm:openai:judge-1")
    g = grader.grade(ITEM, "1. seed\n2. the ramp-up phase of the optimiser is short")
    assert g.hit and g.hit_rank == 2 and g.false_positives == 1 and grader.name == "llm:openai:judge-1"
    prompt = openai_server.requests[-1].prompt_text
    assert "4000 warmup steps" in prompt and "ramp-up" in prompt and "keep their numbers" in prompt
    assert '"reasoning"' in openai_server.requests[-1].json["messages"][0]["content"]  # reasoning before verdict


def test_llm_judge_garbage_reply_is_an_error_not_a_crash(openai_server,  # noqa: ANN001
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.default = Reply.of_text("I think it is fine")
    g = make_grader("llm:openai:judge-1").grade(ITEM, "1. warmup")
    assert g.error and not g.hit
    assert len(openai_server.api_requests("/v1/chat/completions")) == 2  # retried once


def test_reference_free_judge_on_anthropic(anthropic_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
    anthropic_server.script(Reply.of_text(json.dumps({"matches": [True], "reason": "plausible"})))
    g = make_grader("llm-free:anthropic:claude-x").grade(ITEM, "1. warmup length")
    assert g.hit
    prompt = anthropic_server.requests[-1].prompt_text
    assert "4000 warmup steps" not in prompt  # no reference given to the judge


def test_negated_directions_do_not_hit() -> None:
    gr = LexicalGrader()
    assert not gr.grade(ITEM, "1. It is not the warmup, you already match it; more likely the random seed").hit
    short = gr.grade(ITEM, "1. The warmup is not long enough for this batch size")
    assert short.hit or short.uncertain


def test_auto_grades_with_the_cascade_when_a_key_is_there() -> None:
    from eval_diagnosis.graders import resolve_grader

    assert resolve_grader("auto", {}) == "lexical"  # no key: the offline grader, an estimate
    assert resolve_grader("auto", {"ANTHROPIC_API_KEY": "k"}) == "lexical+llm:anthropic:claude-haiku-4-5"
    assert resolve_grader("auto", {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}) == "lexical+llm:openai:gpt-5-mini"
    assert resolve_grader("auto", {"OPENAI_API_KEY": "  "}) == "lexical"
    assert resolve_grader("lexical", {"OPENAI_API_KEY": "k"}) == "lexical"  # an explicit choice stands
