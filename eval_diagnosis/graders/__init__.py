"""Graders: ``make_grader("lexical" | "lexical-v1" | "llm:SPEC" | "llm-free:SPEC" | "lexical+llm:SPEC")``."""

from __future__ import annotations

from eval_diagnosis.graders.base import DirectionGrade, Grade, Grader
from reprodiag.errors import UserError

GRADER_SPECS = "lexical, lexical-v1, llm:PROVIDER:MODEL, llm-free:PROVIDER:MODEL or lexical+llm:PROVIDER:MODEL"


def make_grader(spec: str) -> Grader:
    if spec == "lexical":
        from eval_diagnosis.graders.concept import ConceptGrader

        return ConceptGrader()
    if spec == "lexical-v1":
        from eval_diagnosis.graders.lexical import WordOverlapGrader

        return WordOverlapGrader()
    if spec.startswith("lexical+llm:"):
        from eval_diagnosis.graders.cascade import CascadeGrader
        from eval_diagnosis.graders.concept import ConceptGrader
        from eval_diagnosis.graders.llm import LLMGrader
        from eval_diagnosis.providers import make_chat

        return CascadeGrader(ConceptGrader(), LLMGrader(make_chat(spec[len("lexical+llm:"):])))
    for prefix, reference in (("llm:", True), ("llm-free:", False)):
        if spec.startswith(prefix):
            from eval_diagnosis.graders.llm import LLMGrader
            from eval_diagnosis.providers import make_chat

            return LLMGrader(make_chat(spec[len(prefix):]), reference=reference)
    raise UserError(f"unknown grader {spec!r}; choose {GRADER_SPECS}")


__all__ = ["DirectionGrade", "Grade", "Grader", "make_grader"]
