"""Recorded answers served over OpenAI's chat-completions protocol, on 127.0.0.1.

``reprodiag demo`` extracts through this server: the project's own OpenAI backend (the official SDK,
unchanged) sends each thread's request to it, and it answers with the recorded answer of a capable model
for that thread (:mod:`extract.recorded`), so the demo's records, datasets and benchmark are what a user
with a key gets, offline and free. A request is matched to its thread by the header of the thread's
rendering (repository, kind, creation date and title: the header :func:`extract.prompts.build_messages`
writes first), never by position; a request for a thread the set does not hold is answered with a 404 in
OpenAI's error format (the extractor records it as a failure, as it would a provider error).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reprodiag.schema import Thread

#: The rendering's header lines that identify a thread (:func:`extract.compaction.compact`'s header):
#: repository, kind and creation date, title. The state is left out: it changes as a thread is closed, and
#: its reason is spelled by the source ("COMPLETED" in an export, "completed" once mined).
_REPO = re.compile(r"^Repository: (.*)$", re.M)
_KIND = re.compile(r"^Kind: (\w+);.*?created: ([0-9-]+)", re.M)
_TITLE = re.compile(r"^Title: (.*)$", re.M)


def thread_key(user_message: str) -> str:
    """The identity of a rendered thread (repository, kind, creation date, title), or "" when the message
    holds no such header."""
    head = user_message[:4000]
    repo, kind, title = _REPO.search(head), _KIND.search(head), _TITLE.search(head)
    if not (repo and kind and title):
        return ""
    return "\n".join((repo.group(1).strip().lower(), kind.group(1), kind.group(2), title.group(1).strip()))


class RecordedServer:
    """Answers ``POST /v1/chat/completions`` (and ``/chat/completions``) from ``answers``: thread key →
    (answer text, prompt tokens, completion tokens). ``served`` / ``unknown`` count the requests."""

    def __init__(self, answers: dict[str, tuple[str, int, int]], model: str) -> None:
        self.answers = answers
        self.model = model
        self.served = 0
        self.unknown = 0
        self.url = ""
        self._runner: Any = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="recorded-answers", daemon=True)

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        try:
            body = await request.json()
            user = next(m for m in reversed(body["messages"]) if m.get("role") == "user")
            content = user.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            key = thread_key(str(content or ""))
        except (ValueError, KeyError, TypeError, StopIteration):
            return web.json_response({"error": {"message": "the request has no user message", "type":
                                                "invalid_request_error", "param": "messages", "code": None}},
                                     status=400)
        got = self.answers.get(key) if key else None
        if got is None:
            self.unknown += 1
            return web.json_response({"error": {"message": "no recorded answer for this thread", "type":
                                                "invalid_request_error", "param": None, "code": "not_found"}},
                                     status=404)
        self.served += 1
        text, pt, ct = got
        return web.json_response({
            "id": f"chatcmpl-recorded-{self.served:06d}", "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model") or self.model), "system_fingerprint": None,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct,
                      "prompt_tokens_details": {"cached_tokens": 0}}})

    async def _start(self) -> None:
        from aiohttp import web

        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/v1"

    def __enter__(self) -> RecordedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._runner is not None:
                asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()


def recorded_table(results: Path, threads: Sequence[Thread]) -> dict[str, tuple[str, int, int]]:
    """Thread key → (answer text, prompt tokens, completion tokens) for the ``threads`` that ``results`` (a
    Batch API results file) answers; a thread whose key another thread shares is left out (it could not be
    told apart), and so is an unusable result line."""
    from extract.llm import custom_id
    from extract.prompts import build_messages
    from extract.recorded import read_results

    got = read_results(results)
    table: dict[str, tuple[str, int, int]] = {}
    seen: dict[str, int] = {}
    for t in threads:
        key = thread_key(build_messages(t)[1])
        seen[key] = seen.get(key, 0) + 1
        comp, err = got.get(custom_id(t.id), (None, "no answer"))
        if comp is None or err:
            continue
        text = comp.text if comp.text is not None else json.dumps(comp.data, ensure_ascii=False)
        table[key] = (text, comp.usage.input_tokens, comp.usage.output_tokens)
    return {k: v for k, v in table.items() if seen[k] == 1}


@contextmanager
def serve_recorded(results: Path, threads: Sequence[Thread], *, model: str = "recorded") -> Iterator[RecordedServer]:
    """Serve the recorded answers of ``threads`` on 127.0.0.1 (a free port) in a background thread; pass
    ``server.url`` as the OpenAI backend's ``base_url``."""
    with RecordedServer(recorded_table(results, threads), model) as srv:
        yield srv
