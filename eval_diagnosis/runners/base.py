"""The runner contract: ``answer(item) -> str`` (the model's free-text diagnosis)."""

from __future__ import annotations

from typing import Protocol

from reprodiag.schema import EvalItem


class Runner(Protocol):
    """``spec`` names the model in outputs; ``cacheable``: answers may be cached in the workspace;
    ``answer`` raises :class:`eval_diagnosis.providers.ProviderError` when the provider fails."""

    spec: str
    cacheable: bool

    def answer(self, item: EvalItem) -> str: ...
