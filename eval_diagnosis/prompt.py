"""The prompt a model under test sees for one eval item (versioned: the version is part of cache keys)."""

from __future__ import annotations

import hashlib

from reprodiag.schema import EvalItem

PROMPT_VERSION = "diag-v1"

SYSTEM = (
    "You are an experienced machine-learning researcher helping someone whose reproduction of a paper's "
    "result falls short of the reported number. Diagnose where the gap most likely comes from."
)

DEFAULT_QUESTION = (
    "List the most likely diagnosis directions for this gap, most likely first, one per numbered line, "
    "each with a short justification. No fix is needed."
)


def user_prompt(item: EvalItem) -> str:
    """The user turn: environment, paper, symptom, what was tried, then the question."""
    parts = []
    if item.paper:
        parts.append(f"Paper / repository: {item.paper}")
    if item.environment:
        parts.append(f"Environment: {item.environment}")
    parts.append(f"Symptom: {item.symptom or '(not stated)'}")
    if item.tried:
        parts.append(f"What was tried: {item.tried}")
    parts.append("")
    parts.append(item.question or DEFAULT_QUESTION)
    return "\n".join(parts)


def messages(item: EvalItem) -> tuple[str, str]:
    """``(system, user)`` for ``item``."""
    return SYSTEM, user_prompt(item)


def answer_custom_id(spec: str, item: EvalItem) -> str:
    """The Batch API custom id of ``spec``'s answer to ``item``: the same model, prompt version and prompt text
    give the same id (Anthropic's pattern: at most 64 of ``[A-Za-z0-9_-]``); a changed prompt, a new id."""
    system, user = messages(item)
    h = hashlib.sha256("\x1f".join((PROMPT_VERSION, spec, system, user)).encode("utf-8")).hexdigest()
    return f"ans-{h[:48]}"
