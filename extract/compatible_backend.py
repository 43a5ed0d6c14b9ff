"""OpenAI-compatible servers (vLLM, Ollama, llama.cpp server, LM Studio) via ``--base-url``.

Keyless unless ``OPENAI_API_KEY`` is set. Asks for the strict JSON schema
(vLLM and llama.cpp turn it into guided decoding); a server that rejects
``json_schema`` with HTTP 400 is asked again in JSON mode (``json_object``) with
the schema in the prompt, and keeps that mode for the rest of the run.
"""

from __future__ import annotations

import json
from typing import Any

from extract.answer import ANSWER_SCHEMA
from extract.llm import Completion
from extract.openai_backend import OpenAIExtractor
from reprodiag.errors import UserError


class CompatibleExtractor(OpenAIExtractor):
    backend = "openai-compatible"
    default_model = None
    key_required = False

    def __init__(self, model: str | None = None, *, base_url: str | None = None, **kw: Any) -> None:
        if not base_url:
            raise UserError("--base-url is required for the openai-compatible backend (e.g. http://localhost:8000/v1)")
        if not base_url.startswith(("http://", "https://")):
            raise UserError(f"--base-url must start with http:// or https://, got {base_url!r}")
        super().__init__(model, base_url=base_url, **kw)
        self.json_mode = False

    def _params(self, system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        p = super()._params(system, messages)
        if "max_completion_tokens" in p:  # local servers (vLLM, Ollama, llama.cpp) all know max_tokens
            p["max_tokens"] = p.pop("max_completion_tokens")
        if self.json_mode:
            p["response_format"] = {"type": "json_object"}
            p["messages"][0] = {"role": "system", "content": system + "\nJSON schema of the answer:\n"
                                + json.dumps(ANSWER_SCHEMA)}
        return p

    async def _bad_request(self, exc: Any, system: str, messages: list[dict[str, Any]]) -> Completion:
        if exc.status_code == 400 and self.policy.drop_from(str(getattr(exc, "message", "") or exc)):
            return await self._complete(system, messages)
        if exc.status_code == 400 and not self.json_mode:
            self.json_mode = True
            return await self._complete(system, messages)
        return await super()._bad_request(exc, system, messages)
