"""Shared machinery of the LLM backends: cache, retries, re-ask, concurrency, accounting, batch files.

A backend subclasses :class:`LLMExtractor` and implements ``_complete`` (one
provider call → :class:`Completion`) plus the two batch-file hooks. The SDKs'
own retries are disabled (``max_retries=0``); ours (tenacity) retry 429, 5xx,
connection errors and unreadable bodies, waiting ``retry-after`` when the
server sends it, capped at ``retry_cap_s`` seconds. An answer that is not
valid JSON, violates the schema, is truncated, or quotes words not in the
thread is re-asked ``reasks`` times with the error fed back; after that the
thread is a failure (``failures``: id → reason) and the others go on.

Cache key: (backend, model, prompt version, schema hash, thread content hash);
cached answers cost nothing on a re-run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from extract.answer import SCHEMA_HASH, LLMAnswer, to_record, ungrounded_fields
from extract.base import Extractor
from extract.pricing import Usage, cost_line
from extract.prompts import PROMPT_VERSION, build_messages, reask_message
from extract.ratelimit import estimate_tokens
from reprodiag.atomic_write import replacing
from reprodiag.errors import UserError, read_user_text
from reprodiag.jsontext import first_json_object
from reprodiag.schema import Record, Thread

MAX_OUTPUT_TOKENS = 4096


@dataclass(frozen=True)
class Completion:
    """One provider answer. ``data``: the parsed object when the provider returned one (tool use)."""

    text: str | None
    data: Any
    truncated: bool
    usage: Usage


class RetryableError(Exception):
    """A transient provider failure; ``retry_after`` seconds if the server said so."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class AnswerError(Exception):
    """The answer cannot be used (bad JSON, schema violation, truncated, ungrounded)."""


def custom_id(thread_id: str) -> str:
    """A Batch-API-safe id (``[A-Za-z0-9_-]{1,64}``) for a thread id."""
    return "rd-" + hashlib.sha256(thread_id.encode()).hexdigest()[:40]


def parse_answer(text: str | None, data: Any) -> LLMAnswer:
    obj = data
    if obj is None:
        obj = first_json_object(text)
        if obj is None:  # the strict parser's message says where it broke
            try:
                json.loads((text or "").strip())
                detail = "no JSON object in it"
            except ValueError as exc:
                detail = str(exc)
            raise AnswerError(f"answer is not valid JSON ({detail})") from None
    try:
        return LLMAnswer.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise AnswerError(f"answer violates the schema at '{loc}': {first.get('msg')}") from None


def _wait_for(retry_cap_s: float):  # noqa: ANN202 - tenacity wait callable
    def wait(state: Any) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        base = after if after is not None else min(0.5 * 2 ** (state.attempt_number - 1), 8.0)
        return max(0.0, min(base, retry_cap_s))
    return wait


class LLMExtractor(Extractor):
    """Base of the provider backends. ``store`` (optional) holds the answer cache."""

    backend = "llm"
    default_model: str | None = None

    def __init__(self, model: str | None = None, *, store: Any = None, concurrency: int = 8,
                 max_attempts: int = 5, retry_cap_s: float = 60.0, reasks: int = 1) -> None:
        self.model = model or self.default_model
        if not self.model:
            raise UserError(f"--model is required for the {self.backend} backend")
        self.store = store
        self.concurrency = max(1, concurrency)
        self.max_attempts = max(1, max_attempts)
        self.retry_cap_s = retry_cap_s
        self.reasks = max(0, reasks)
        self.usage = Usage()
        self.failures: dict[str, str] = {}
        self.cache_hits = 0
        #: The answers this extractor obtained from the provider (thread id → answer document), for a caller
        #: that keeps the cache itself (``extract --engine ray``: workers have no workspace).
        self.answers: dict[str, dict[str, Any]] = {}
        #: Awaited before every request with its estimated tokens (:mod:`extract.ratelimit`); None: no limit.
        self.limiter: Any = None

    # ------------------------------------------------------------------ provider hooks

    @abstractmethod
    async def _complete(self, system: str, messages: list[dict[str, Any]]) -> Completion:
        """One call; raise :class:`RetryableError` for transient failures, UserError for fatal ones."""

    @abstractmethod
    def batch_line(self, cid: str, system: str, user: str) -> dict[str, Any]:
        """One request line of the provider's batch input file."""

    @abstractmethod
    def result_answer(self, line: dict[str, Any]) -> tuple[str, Completion | None, str | None]:
        """(custom_id, completion or None, error) from one line of the provider's batch results."""

    async def _close(self) -> None:
        """Release the SDK client (called once per ``extract``)."""

    # ------------------------------------------------------------------ the run

    def cache_key(self, thread: Thread) -> str:
        return "extract:" + "|".join((self.backend, str(self.model), PROMPT_VERSION, SCHEMA_HASH,
                                      thread.content_hash()))

    def extract(self, threads: list[Thread]) -> list[Record]:
        return asyncio.run(self._extract_all(threads))

    async def _extract_all(self, threads: list[Thread]) -> list[Record]:
        sem = asyncio.Semaphore(self.concurrency)

        async def one(t: Thread) -> Record | None:
            async with sem:
                try:
                    return await self._extract_one(t)
                except (AnswerError, RetryableError) as exc:
                    self.failures[t.id] = " ".join(str(exc).split())[:300]
                    return None

        try:
            got = await asyncio.gather(*(one(t) for t in threads))
        finally:
            await self._close()
        return [r for r in got if r is not None]

    async def _extract_one(self, thread: Thread) -> Record:
        key = self.cache_key(thread)
        if self.store is not None:
            hit = self.store.cache_get(key)
            if hit is not None:
                self.cache_hits += 1
                return self._record(thread, LLMAnswer.model_validate(hit))
        system, user = build_messages(thread)
        messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
        last_error = ""
        for attempt in range(self.reasks + 1):
            comp = await self._call(system, messages)
            try:
                if comp.truncated:
                    raise AnswerError("answer was truncated (output token limit)")
                answer = parse_answer(comp.text, comp.data)
                bad = ungrounded_fields(thread, answer)
                if bad and attempt < self.reasks:
                    raise AnswerError("these fields have quotes that are not verbatim in the thread: "
                                      + ", ".join(bad))
            except AnswerError as exc:
                last_error = str(exc)
                if attempt >= self.reasks:
                    raise AnswerError(f"gave up after {attempt + 1} answer(s): {last_error}") from None
                messages = messages + [
                    {"role": "assistant", "content": comp.text if comp.text is not None else json.dumps(comp.data)},
                    {"role": "user", "content": reask_message(last_error)},
                ]
                continue
            self.answers[thread.id] = answer.model_dump(mode="json")
            if self.store is not None:
                self.store.cache_put(key, self.answers[thread.id])
            return self._record(thread, answer)
        raise AnswerError(last_error)  # pragma: no cover - loop always returns or raises

    async def _call(self, system: str, messages: list[dict[str, Any]]) -> Completion:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=_wait_for(self.retry_cap_s),
            retry=retry_if_exception(lambda e: isinstance(e, RetryableError)),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                if self.limiter is not None:
                    await self.limiter(estimate_tokens(system, messages))
                comp = await self._complete(system, messages)
                self.usage = self.usage + comp.usage
                return comp
        raise RetryableError("no attempt made")  # pragma: no cover

    def _record(self, thread: Thread, answer: LLMAnswer) -> Record:
        return to_record(thread, answer, backend=self.backend, model=self.model, prompt_version=PROMPT_VERSION)

    def cost_summary(self) -> str:
        return cost_line(self.model, self.usage)

    # ------------------------------------------------------------------ batch files

    def write_batch(self, threads: list[Thread], path: Path) -> int:
        """Write one request per thread to a Batch API input file (JSONL); returns the count."""
        n = 0
        with replacing(path) as fh:
            for t in threads:
                system, user = build_messages(t)
                fh.write(json.dumps(self.batch_line(custom_id(t.id), system, user), ensure_ascii=False) + "\n")
                n += 1
        return n

    def collect(self, threads: list[Thread], path: Path) -> list[Record]:
        """Join a Batch API results file back to ``threads`` by custom_id; bad lines become failures."""
        by_id = {custom_id(t.id): t for t in threads}
        lines = read_user_text(path, "batch results").splitlines()
        out: list[Record] = []
        for no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                if not isinstance(doc, dict):
                    raise ValueError("not an object")
            except ValueError:
                raise UserError(f"{path}:{no}: not a JSON object") from None
            cid, comp, err = self.result_answer(doc)
            thread = by_id.get(cid)
            if thread is None:
                continue
            if comp is None:
                self.failures[thread.id] = err or "batch request failed"
                continue
            self.usage = self.usage + comp.usage
            try:
                if comp.truncated:
                    raise AnswerError("answer was truncated (output token limit)")
                answer = parse_answer(comp.text, comp.data)
            except AnswerError as exc:
                self.failures[thread.id] = str(exc)
                continue
            if self.store is not None:
                self.store.cache_put(self.cache_key(thread), answer.model_dump(mode="json"))
            out.append(self._record(thread, answer))
        return out


def retry_after_of(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` headers (None if absent or not a number)."""
    if headers is None:
        return None
    for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        v = headers.get(name)
        if v is None:
            continue
        try:
            return max(0.0, float(v) / div)
        except ValueError:
            continue
    return None
