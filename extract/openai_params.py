"""OpenAI chat-completion parameters by model family (shared by the extractor, the eval runner and the judge).

Reasoning models (the o-series and the gpt-5 family) refuse ``max_tokens`` (they take
``max_completion_tokens``, which every current model accepts) and any non-default ``temperature`` /
``top_p``; they accept ``reasoning_effort``. A 400 that names an unsupported parameter or value is retried
once without it and the parameter stays dropped for the rest of the run (so an unknown new model works);
:class:`ParamPolicy` remembers what was dropped, for the run summary."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_REASONING = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5)(?![\w.-]*-chat)", re.I)
_UNSUPPORTED = re.compile(r"Unsupported (?:parameter|value):\s*'([A-Za-z_]+)'|'([A-Za-z_]+)' is not supported "
                          r"with this model|Unrecognized request argument supplied:\s*([A-Za-z_]+)", re.I)
SAMPLING = ("temperature", "top_p")


def is_reasoning_model(model: str | None) -> bool:
    return bool(model) and bool(_REASONING.match(str(model)))


def unsupported_param(message: str) -> str | None:
    """The parameter a 400 names as unsupported ("Unsupported parameter: 'max_tokens' ..."), or None."""
    m = _UNSUPPORTED.search(message or "")
    return next((g for g in m.groups() if g), None) if m else None


EFFORTS = ("low", "medium", "high")


def default_effort() -> str:
    """``$REPRODIAG_REASONING_EFFORT`` (set by ``--reasoning-effort``), else ``low``."""
    import os

    v = os.environ.get("REPRODIAG_REASONING_EFFORT", "low").strip().lower()
    return v if v in EFFORTS else "low"


@dataclass
class ParamPolicy:
    """What to send to one model. ``reasoning_effort``: low / medium / high (reasoning models only; default
    :func:`default_effort`)."""

    model: str
    max_tokens: int
    temperature: float | None = 0.0
    reasoning_effort: str | None = field(default_factory=default_effort)
    dropped: set[str] = field(default_factory=set)

    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"max_completion_tokens": self.max_tokens}
        reasoning = is_reasoning_model(self.model)
        if self.temperature is not None and not reasoning:
            p["temperature"] = self.temperature
        if reasoning and self.reasoning_effort:
            p["reasoning_effort"] = self.reasoning_effort
        for k in self.dropped:
            p.pop(k, None)
        if "max_completion_tokens" in self.dropped:  # an older server that only knows max_tokens
            p["max_tokens"] = self.max_tokens
        return p

    def drop_from(self, message: str) -> bool:
        """Remember the parameter a 400 names; True when there was one not dropped yet (retry once)."""
        name = unsupported_param(message)
        if name is None or name in self.dropped or name not in self.params():
            return False
        self.dropped.add(name)
        return True

    def summary(self) -> str:
        return f"dropped for {self.model}: {', '.join(sorted(self.dropped))}" if self.dropped else ""
