"""Model runners: ``make_runner(spec, items)`` for every ``--model`` spec (API models, baselines, local
checkpoints)."""

from __future__ import annotations

from eval_diagnosis.runners.base import Runner
from reprodiag.schema import EvalItem


def make_runner(spec: str, items: list[EvalItem], *, max_new_tokens: int | None = None) -> Runner:
    """A runner for ``spec``; ``items`` is the eval set (the prior baseline learns from it, leave-one-out).
    ``hf:PATH`` is a local checkpoint (:mod:`eval_diagnosis.runners.hf`; ``max_new_tokens`` caps its answers,
    default :data:`~eval_diagnosis.runners.hf.MAX_NEW_TOKENS`)."""
    if spec.startswith("hf:"):
        from eval_diagnosis.runners.hf import MAX_NEW_TOKENS, HFRunner

        return HFRunner(spec, max_new_tokens=max_new_tokens or MAX_NEW_TOKENS)
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
