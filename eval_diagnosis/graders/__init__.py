"""Graders: ``make_grader("lexical" | "lexical-v1" | "llm:SPEC" | "llm-free:SPEC" | "lexical+llm:SPEC")``."""

from __future__ import annotations

from eval_diagnosis.graders.base import DirectionGrade, Grade, Grader
from reprodiag.errors import UserError

GRADER_SPECS = ("auto, lexical, lexical-v1, llm:PROVIDER:MODEL, llm-free:PROVIDER:MODEL or "
                "lexical+llm:PROVIDER:MODEL")


#: ``auto``: the cascade with a provider's judge when its key is set (``OPENAI_API_KEY`` first), else the
#: offline grader (an estimate).
AUTO_JUDGES = (("OPENAI_API_KEY", "lexical+llm:openai:gpt-5-mini"),
               ("ANTHROPIC_API_KEY", "lexical+llm:anthropic:claude-haiku-4-5"))


def resolve_grader(spec: str, env: dict[str, str] | None = None) -> str:
    """``spec`` itself, or for ``auto`` the cascade whose judge has a key in ``env`` (default: the process's
    environment), else ``lexical``."""
    import os

    if spec != "auto":
        return spec
    env = dict(os.environ) if env is None else env
    return next((g for key, g in AUTO_JUDGES if (env.get(key) or "").strip()), "lexical")


def make_grader(spec: str) -> Grader:
    spec = resolve_grader(spec)
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
