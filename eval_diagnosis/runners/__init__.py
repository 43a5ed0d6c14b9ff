"""Model runners: ``make_runner(spec, items)`` for every ``--model`` spec."""

from __future__ import annotations

from eval_diagnosis.runners.base import Runner
from reprodiag.schema import EvalItem


def make_runner(spec: str, items: list[EvalItem]) -> Runner:
    """A runner for ``spec``; ``items`` is the eval set (the prior baseline learns from it, leave-one-out)."""
    if spec == "baseline:prior":
        from eval_diagnosis.runners.baseline_prior import PriorBaseline

        return PriorBaseline(items)
    if spec == "baseline:rules":
        from eval_diagnosis.runners.baseline_rules import RulesBaseline

        return RulesBaseline()
    if spec.startswith("baseline:"):
        from reprodiag.errors import UserError

        raise UserError(f"unknown baseline {spec!r}; choose baseline:prior or baseline:rules")
    from eval_diagnosis.providers import make_chat
    from eval_diagnosis.runners.llm import LLMRunner

    return LLMRunner(make_chat(spec))


__all__ = ["Runner", "make_runner"]
