"""Masking secrets before thread text leaves the machine (to any model provider).

Uses :func:`reprodiag.redact.mask_secrets` (the core's rules); if that module is absent, a
local fallback masks the common token shapes (GitHub, OpenAI, Anthropic, AWS,
Hugging Face, Slack, generic ``key=...`` assignments and bearer tokens).
"""

from __future__ import annotations

import re

_FALLBACK = re.compile(
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-ant-[A-Za-z0-9_-]{10,}|sk-(?:proj-)?[A-Za-z0-9_-]{16,}|"
    r"AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}|"
    r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{16,}|"
    r"(?i:(?:api[_-]?key|secret|token|password|passwd)\s*[:=]\s*)[\"']?[^\s\"']{8,}",
)


def _fallback(text: str) -> str:
    return _FALLBACK.sub("[SECRET]", text)


try:  # pragma: no cover - depends on which core modules exist
    from reprodiag.redact import mask_secrets as _core_mask  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    _core_mask = None


def mask_secrets(text: str) -> str:
    """``text`` with secrets replaced by a placeholder (idempotent)."""
    return _core_mask(text) if _core_mask is not None else _fallback(text)
