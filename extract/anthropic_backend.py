"""Anthropic backend: the Messages API with one forced tool whose input schema is :class:`LLMAnswer`'s."""

from __future__ import annotations

from typing import Any

from extract.answer import ANSWER_SCHEMA
from extract.llm import (
    MAX_OUTPUT_TOKENS,
    AnswerError,
    Completion,
    LLMExtractor,
    RetryableError,
    retry_after_of,
)
from extract.masking import mask_secrets
from extract.pricing import Usage
from reprodiag.config import api_key
from reprodiag.errors import UserError

TOOL_NAME = "record_diagnosis"
TOOL = {"name": TOOL_NAME, "description": "Record the structured diagnosis of the thread.",
        "input_schema": ANSWER_SCHEMA}


def _one_line(exc: Exception) -> str:
    return mask_secrets(" ".join(str(exc).split()))[:300]


class AnthropicExtractor(LLMExtractor):
    """``ANTHROPIC_API_KEY`` from the environment; ``base_url`` for proxies and tests."""

    backend = "anthropic"
    default_model = "claude-haiku-4-5"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, env: dict[str, str] | None = None,
                 timeout_s: float = 120.0, **kw: Any) -> None:
        super().__init__(model, **kw)
        import anthropic

        key = api_key("ANTHROPIC_API_KEY", env)
        assert key is not None

        def client() -> Any:
            return anthropic.AsyncAnthropic(api_key=key.get(), base_url=base_url, max_retries=0, timeout=timeout_s)

        self._new_client = client
        self._client = client()

    async def _close(self) -> None:
        await self._client.close()
        self._client = self._new_client()  # the next extract() (the next chunk of a run) gets an open client

    def _params(self, system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        # the fixed tool schema and system prompt come first and are marked for Anthropic's prompt cache
        # (cached order: tools, then system); only the thread (the user message) changes between requests
        return {"model": self.model, "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "messages": messages, "max_tokens": MAX_OUTPUT_TOKENS,
                "tools": [TOOL], "tool_choice": {"type": "tool", "name": TOOL_NAME}}

    async def _complete(self, system: str, messages: list[dict[str, Any]]) -> Completion:
        import anthropic

        try:
            msg = await self._client.messages.create(**self._params(system, messages))
        except (anthropic.RateLimitError, anthropic.InternalServerError) as exc:
            raise RetryableError(f"anthropic: HTTP {exc.status_code}: {_one_line(exc)}",
                                 retry_after_of(exc.response.headers)) from None
        except anthropic.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise UserError(f"anthropic: the API key was rejected (HTTP {exc.status_code})") from None
            if exc.status_code in (408, 409, 529) or exc.status_code >= 500:
                raise RetryableError(f"anthropic: HTTP {exc.status_code}",
                                     retry_after_of(exc.response.headers)) from None
            raise AnswerError(f"anthropic: request rejected (HTTP {exc.status_code}): {_one_line(exc)}") from None
        except (anthropic.APIConnectionError, anthropic.APITimeoutError) as exc:
            raise RetryableError(f"anthropic: connection failed: {_one_line(exc)}") from None
        except (ValueError, anthropic.APIResponseValidationError) as exc:
            raise RetryableError(f"anthropic: unreadable response body: {_one_line(exc)}") from None
        return _completion(msg.model_dump(mode="json"))

    def batch_line(self, cid: str, system: str, user: str) -> dict[str, Any]:
        return {"custom_id": cid, "params": self._params(system, [{"role": "user", "content": user}])}

    def result_answer(self, line: dict[str, Any]) -> tuple[str, Completion | None, str | None]:
        return result_answer(line)


def result_answer(line: dict[str, Any]) -> tuple[str, Completion | None, str | None]:
    """(custom_id, completion or None, error) from one line of an Anthropic Message Batches results file."""
    cid = str(line.get("custom_id", ""))
    result = line.get("result") or {}
    if not isinstance(result, dict) or result.get("type") != "succeeded" or not isinstance(
            result.get("message"), dict):
        kind = result.get("type") if isinstance(result, dict) else "invalid"
        return cid, None, f"batch request {kind}"
    return cid, _completion(result["message"]), None


def _completion(msg: dict[str, Any]) -> Completion:
    u = msg.get("usage") or {}
    read, write = int(u.get("cache_read_input_tokens") or 0), int(u.get("cache_creation_input_tokens") or 0)
    usage = Usage(int(u.get("input_tokens") or 0) + read + write, int(u.get("output_tokens") or 0), 1, read, write)
    truncated = msg.get("stop_reason") == "max_tokens"
    for block in msg.get("content") or []:
        if block.get("type") == "tool_use":
            return Completion(None, block.get("input"), truncated, usage)
    text = "".join(b.get("text", "") for b in msg.get("content") or [] if b.get("type") == "text")
    return Completion(text, None, truncated, usage)
