"""The dataset card's limitations follow the build's extractors: the offline extractor's measured limits are
stated only where its records are in the build."""

from __future__ import annotations

from collections import Counter

from reprodiag.card import CardFacts, dataset_card


def _facts(extractors: Counter[str]) -> CardFacts:
    return CardFacts(funnel={"sft rows": 3}, sizes={"sft": {"train": 3}}, tiers=Counter(current=3),
                     resolution=Counter(resolved=3), eval_types=Counter(), shortfall={}, per_type_min=1,
                     per_type_max=2, seed=0, eval_repos=0, verified=0, extractors=extractors)


def test_rules_records_bring_the_offline_limits() -> None:
    card = dataset_card(_facts(Counter(rules=5, openai=2)))
    assert "records by extractor: openai: 2, rules: 5" in card
    assert "about 40% of its eval items" in card and "bench extract --backend" in card


def test_an_llm_only_build_does_not_claim_the_offline_limits() -> None:
    card = dataset_card(_facts(Counter(anthropic=4)))
    assert "records by extractor: anthropic: 4" in card
    assert "rules extractor" not in card and "about 40%" not in card
