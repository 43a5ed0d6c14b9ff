"""Chat clients for the model specs ``openai:MODEL``, ``anthropic:MODEL`` and
``openai-compatible:MODEL@URL`` (vLLM, Ollama), on the official SDKs.

Keys come from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` (an openai-compatible server may need none);
base URLs from the SDKs' own ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` unless the spec names one.
Provider errors are re-raised as :class:`ProviderError` whose message never holds the key.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from reprodiag.config import Secret, api_key
from reprodiag.errors import UserError

MAX_TOKENS = 1024


class ProviderError(RuntimeError):
    """A provider call failed (after the SDK's own retries). One line, no secret."""


class ChatClient(Protocol):
    """One method: a system + user turn in, the assistant's text out (may be empty)."""

    spec: str

    def complete(self, system: str, user: str) -> str: ...


def _scrub(msg: str, key: Secret | None) -> str:
    msg = " ".join(str(msg).split())[:300]
    if key is not None and key.get():
        msg = msg.replace(key.get(), "***")
    return msg


@dataclass
class OpenAIChat:
    spec: str
    model: str
    key: Secret | None
    base_url: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        import openai

        self._openai = openai
        self._policy = None
        self._lock = threading.Lock()
        self._client = openai.OpenAI(api_key=self.key.get() if self.key else "EMPTY", base_url=self.base_url,
                                     timeout=self.timeout_s, max_retries=self.max_retries)

    def complete(self, system: str, user: str) -> str:
        from extract.openai_params import ParamPolicy

        if self._policy is None:
            self._policy = ParamPolicy(self.model, MAX_TOKENS)
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        for _ in range(3):
            try:
                resp = self._client.chat.completions.create(model=self.model, messages=msgs, **self._policy.params())
                break
            except self._openai.BadRequestError as exc:
                with self._lock:
                    retry = self._policy.drop_from(str(getattr(exc, "message", "") or exc))
                if not retry:
                    raise ProviderError(f"{self.spec}: BadRequestError (HTTP 400): {_scrub(str(exc), self.key)}") from None
            except Exception as exc:  # noqa: BLE001 - every SDK failure becomes one ProviderError
                status = getattr(exc, "status_code", None)
                raise ProviderError(f"{self.spec}: {type(exc).__name__}"
                                    + (f" (HTTP {status})" if status else "") + f": {_scrub(str(exc), self.key)}") from None
        else:
            raise ProviderError(f"{self.spec}: request refused after dropping unsupported parameters")
        return self._answer(resp)

    def _answer(self, resp: Any) -> str:
        if not getattr(resp, "choices", None):
            return ""
        return resp.choices[0].message.content or ""


@dataclass
class AnthropicChat:
    spec: str
    model: str
    key: Secret
    base_url: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        import anthropic

        self._client = anthropic.Anthropic(api_key=self.key.get(), base_url=self.base_url, timeout=self.timeout_s,
                                           max_retries=self.max_retries)

    def complete(self, system: str, user: str) -> str:
        try:
            resp = self._client.messages.create(model=self.model, max_tokens=MAX_TOKENS,
                                                system=system, messages=[{"role": "user", "content": user}])
        except Exception as exc:  # noqa: BLE001
            status = getattr(exc, "status_code", None)
            raise ProviderError(f"{self.spec}: {type(exc).__name__}"
                                + (f" (HTTP {status})" if status else "") + f": {_scrub(str(exc), self.key)}") from None
        return "".join(getattr(b, "text", "") or "" for b in (resp.content or []))


def make_chat(spec: str, env: dict[str, str] | None = None) -> ChatClient:
    """A chat client for a provider spec; UserError for unknown providers or a missing key."""
    env = dict(os.environ) if env is None else env
    provider, _, rest = spec.partition(":")
    if not rest:
        raise UserError(f"model spec {spec!r} must look like provider:MODEL "
                        "(openai:, anthropic:, openai-compatible:MODEL@URL, hf:PATH, baseline:prior, baseline:rules)")
    if provider == "openai":
        return OpenAIChat(spec, rest, api_key("OPENAI_API_KEY", env), env.get("OPENAI_BASE_URL") or None)
    if provider == "anthropic":
        return AnthropicChat(spec, rest, api_key("ANTHROPIC_API_KEY", env), env.get("ANTHROPIC_BASE_URL") or None)
    if provider == "openai-compatible":
        model, sep, url = rest.rpartition("@")
        if not sep or not model or not url.startswith(("http://", "https://")):
            raise UserError(f"model spec {spec!r} must look like openai-compatible:MODEL@http://host:port/v1")
        return OpenAIChat(spec, model, api_key("OPENAI_API_KEY", env, required=False), url)
    raise UserError(f"unknown model provider {provider!r} in {spec!r}; "
                    "use openai:, anthropic:, openai-compatible:MODEL@URL, hf:PATH, baseline:prior or baseline:rules")
