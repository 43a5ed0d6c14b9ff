"""OpenAI backend: chat completions with structured outputs (strict JSON schema from :class:`LLMAnswer`)."""

from __future__ import annotations

import json
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

RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "diagnosis_record", "strict": True,
                                                          "schema": ANSWER_SCHEMA}}


def _one_line(exc: Exception) -> str:
    return mask_secrets(" ".join(str(exc).split()))[:300]


class OpenAIExtractor(LLMExtractor):
    """``OPENAI_API_KEY`` from the environment; ``base_url`` for proxies and tests."""

    backend = "openai"
    default_model = "gpt-5-mini"
    key_name = "OPENAI_API_KEY"
    key_required = True

    def __init__(self, model: str | None = None, *, base_url: str | None = None, env: dict[str, str] | None = None,
                 timeout_s: float = 120.0, reasoning_effort: str | None = None, **kw: Any) -> None:
        super().__init__(model, **kw)
        import openai

        key = api_key(self.key_name, env, required=self.key_required)

        def client() -> Any:
            return openai.AsyncOpenAI(api_key=key.get() if key else "not-needed", base_url=base_url,
                                      max_retries=0, timeout=timeout_s)

        self._new_client = client
        self._client = client()
        self.response_format: dict[str, Any] = RESPONSE_FORMAT
        from extract.openai_params import ParamPolicy

        self.policy = ParamPolicy(self.model or "", MAX_OUTPUT_TOKENS)
        if reasoning_effort is not None:
            self.policy.reasoning_effort = reasoning_effort

    async def _close(self) -> None:
        await self._client.close()
        self._client = self._new_client()  # the next extract() (the next chunk of a run) gets an open client

    def _params(self, system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": self.model, "messages": [{"role": "system", "content": system}, *messages],
                "response_format": self.response_format, **self.policy.params()}

    async def _complete(self, system: str, messages: list[dict[str, Any]]) -> Completion:
        import openai

        try:
            resp = await self._client.chat.completions.create(**self._params(system, messages))
        except (openai.RateLimitError, openai.InternalServerError) as exc:
            raise RetryableError(f"{self.backend}: HTTP {exc.status_code}: {_one_line(exc)}",
                                 retry_after_of(exc.response.headers)) from None
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise UserError(f"{self.backend}: the API key was rejected (HTTP {exc.status_code})") from None
            if exc.status_code in (408, 409) or exc.status_code >= 500:
                raise RetryableError(f"{self.backend}: HTTP {exc.status_code}",
                                     retry_after_of(exc.response.headers)) from None
            return await self._bad_request(exc, system, messages)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise RetryableError(f"{self.backend}: connection failed: {_one_line(exc)}") from None
        except (ValueError, openai.APIResponseValidationError) as exc:
            raise RetryableError(f"{self.backend}: unreadable response body: {_one_line(exc)}") from None
        if not resp.choices:
            raise AnswerError("answer has no choices")
        choice = resp.choices[0]
        u = resp.usage
        details = getattr(u, "prompt_tokens_details", None) if u else None
        usage = Usage(u.prompt_tokens if u else 0, u.completion_tokens if u else 0, 1,
                      int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0)
        msg = choice.message
        text = msg.content
        if text is None and msg.tool_calls:
            text = msg.tool_calls[0].function.arguments
        if text is None and getattr(msg, "refusal", None):
            raise AnswerError(f"model refused: {str(msg.refusal)[:200]}")
        return Completion(text, None, choice.finish_reason == "length", usage)

    async def _bad_request(self, exc: Any, system: str, messages: list[dict[str, Any]]) -> Completion:
        if exc.status_code == 400 and self.policy.drop_from(str(getattr(exc, "message", "") or exc)):
            return await self._complete(system, messages)  # the parameter stays dropped for the run
        raise AnswerError(f"{self.backend}: request rejected (HTTP {exc.status_code}): {_one_line(exc)}")

    def cost_summary(self) -> str:
        dropped = self.policy.summary()
        return super().cost_summary() + (f"; {dropped}" if dropped else "")

    def batch_line(self, cid: str, system: str, user: str) -> dict[str, Any]:
        return {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
                "body": self._params(system, [{"role": "user", "content": user}])}

    def result_answer(self, line: dict[str, Any]) -> tuple[str, Completion | None, str | None]:
        return result_answer(line)


def result_answer(line: dict[str, Any]) -> tuple[str, Completion | None, str | None]:
    """(custom_id, completion or None, error) from one line of an OpenAI Batch results file."""
    cid = str(line.get("custom_id", ""))
    resp = line.get("response") or {}
    body = resp.get("body") if isinstance(resp, dict) else None
    if line.get("error") or not isinstance(body, dict) or resp.get("status_code", 200) != 200:
        err = line.get("error") or (body or {}).get("error") if isinstance(body, dict) else line.get("error")
        return cid, None, f"batch request failed: {json.dumps(err)[:200]}"
    try:
        choice = body["choices"][0]
        u = body.get("usage") or {}
        cached = int(((u.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
        return cid, Completion(choice["message"].get("content"), None, choice.get("finish_reason") == "length",
                               Usage(u.get("prompt_tokens", 0), u.get("completion_tokens", 0), 1, cached)), None
    except (KeyError, IndexError, TypeError, AttributeError):
        return cid, None, "batch result has no choices"
