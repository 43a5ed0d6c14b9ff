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


def batch_provider(spec: str) -> tuple[str, str]:
    """(Batch format, model) of a model spec that has a Batch API: ``openai:M`` and ``openai-compatible:M@URL``
    (OpenAI's batch file, which ``vllm run-batch`` also reads) or ``anthropic:M`` (Message Batches)."""
    provider, _, rest = spec.partition(":")
    if provider == "openai-compatible":
        rest = rest.rpartition("@")[0]
    if provider not in ("openai", "anthropic", "openai-compatible") or not rest:
        raise UserError(f"--batch/--collect need an API model (openai:MODEL, anthropic:MODEL or "
                        f"openai-compatible:MODEL@URL), got {spec!r}")
    return ("anthropic" if provider == "anthropic" else "openai"), rest


def chat_batch_line(fmt: str, model: str, custom_id: str, system: str, user: str) -> dict[str, Any]:
    """One Batch API request (``fmt`` ``openai`` or ``anthropic``) asking what :meth:`ChatClient.complete`
    asks: the same system and user turns, the same output cap and OpenAI parameter policy."""
    if fmt == "anthropic":
        return {"custom_id": custom_id, "params": {
            "model": model, "max_tokens": MAX_TOKENS, "system": system,
            "messages": [{"role": "user", "content": user}]}}
    from extract.openai_params import ParamPolicy

    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": {
        "model": model, "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        **ParamPolicy(model, MAX_TOKENS).params()}}


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
