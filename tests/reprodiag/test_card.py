"""The dataset card names the reader of every split, and states a reader's measured figures only where its
records are in the build."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from reprodiag.card import CardFacts, dataset_card

FIGURES = {"offline": "offline reader (rules and learned models, no LLM): error type 0.59",
           "llm": "LLM reader (prompt extract-v3): error type 0.84"}


def _facts(extractors: Counter[str]) -> CardFacts:
    return CardFacts(funnel={"sft rows": 3}, sizes={"sft": {"train": 3}}, tiers=Counter(current=3),
                     resolution=Counter(resolved=3), eval_types=Counter(), shortfall={}, per_type_min=1,
                     per_type_max=2, seed=0, eval_repos=0, verified=0, extractors=extractors)


def test_rules_records_bring_the_offline_limits() -> None:
    f = replace(_facts(Counter(rules=5, openai=2)), readers={"sft": Counter(offline=3), "eval": Counter(offline=2)},
                reader_figures=FIGURES, eval_from="offline")
    card = dataset_card(f)
    assert "records by extractor: openai: 2, rules: 5" in card
    assert "| sft | offline: 3 |" in card and "- offline reader (rules" in card
    assert "**2 eval item(s) come from the offline reader**" in card
    assert "- LLM reader" not in card  # only the readers present are described


def test_an_llm_only_build_does_not_claim_the_offline_limits() -> None:
    f = replace(_facts(Counter(anthropic=4)), readers={"sft": Counter(llm=4), "eval": Counter(llm=1)},
                reader_models={"llm": Counter({"anthropic:claude-haiku-4-5": 4})}, reader_figures=FIGURES)
    card = dataset_card(f)
    assert "records by extractor: anthropic: 4" in card
    assert "- offline reader (" not in card and "come from the offline reader" not in card
    assert "anthropic:claude-haiku-4-5 (4)" in card and "- LLM reader" in card
    assert "Eval items come from LLM-read records only" in card
