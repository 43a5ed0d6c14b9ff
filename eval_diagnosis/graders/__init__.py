"""Graders: ``make_grader("lexical" | "llm:SPEC" | "llm-free:SPEC")``."""

from __future__ import annotations

from eval_diagnosis.graders.base import DirectionGrade, Grade, Grader
from reprodiag.errors import UserError


def make_grader(spec: str) -> Grader:
    if spec == "lexical":
        from eval_diagnosis.graders.lexical import LexicalGrader

        return LexicalGrader()
    for prefix, reference in (("llm:", True), ("llm-free:", False)):
        if spec.startswith(prefix):
            from eval_diagnosis.graders.llm import LLMGrader
            from eval_diagnosis.providers import make_chat

            return LLMGrader(make_chat(spec[len(prefix):]), reference=reference)
    raise UserError(f"unknown grader {spec!r}; choose lexical, llm:PROVIDER:MODEL or llm-free:PROVIDER:MODEL")


__all__ = ["DirectionGrade", "Grade", "Grader", "make_grader"]
