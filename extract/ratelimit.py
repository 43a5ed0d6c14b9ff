"""Client-side rate limits for LLM requests: requests per minute and tokens per minute, shared by every
request of a run (locally) or of every Ray worker (one limiter actor per run, see :func:`shared_limiter`).

Two token buckets, each holding one second of its rate (at least one request, at least one request's
tokens), refilled continuously. A request reserves its share at once and waits for the deficit, so
concurrent requests queue fairly and the rate never exceeds ``rate x window + one second's burst`` over
any window. Tokens are estimated before sending (:func:`estimate_tokens`): what the providers' per-minute
token limits count is input plus the output budget, and the answers here are short.

The clock and the sleep are parameters (the real ones by default), and each limit counts what it granted
(:meth:`RateLimit.granted`), so a test checks the limiter through a fake clock and its own accounting.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

#: Output tokens a request is assumed to use against a tokens-per-minute limit (answers are ~500 tokens).
EXPECTED_OUTPUT_TOKENS = 600


def estimate_tokens(system: str, messages: list[dict[str, Any]]) -> int:
    """Input tokens (about 4 characters each) plus :data:`EXPECTED_OUTPUT_TOKENS`."""
    chars = len(system) + sum(len(str(m.get("content", ""))) for m in messages)
    return chars // 4 + EXPECTED_OUTPUT_TOKENS


class RateLimit:
    """Requests and tokens per minute (None: no limit of that kind); ``clock`` in seconds.

    ``requests``, ``tokens`` and ``waited_s`` count what :meth:`reserve` granted: requests, their tokens, and
    the seconds of waiting it imposed (summed over requests)."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        for name, v in (("--rpm", rpm), ("--tpm", tpm)):
            if v is not None and not v > 0:
                raise ValueError(f"{name} must be positive, got {v}")
        self._clock = clock
        self._buckets: list[list[float]] = []  # [rate per second, capacity, level, kind: 0 requests / 1 tokens]
        if rpm:
            self._buckets.append([rpm / 60, max(1.0, rpm / 60), max(1.0, rpm / 60), 0])
        if tpm:
            self._buckets.append([tpm / 60, max(float(EXPECTED_OUTPUT_TOKENS), tpm / 60),
                                  max(float(EXPECTED_OUTPUT_TOKENS), tpm / 60), 1])
        self._last = clock()
        self.requests = 0
        self.tokens = 0
        self.waited_s = 0.0

    def reserve(self, tokens: int) -> float:
        """Take one request of ``tokens`` tokens; the seconds to wait before sending it (0: at once)."""
        now = self._clock()
        elapsed, self._last = now - self._last, now
        wait = 0.0
        for b in self._buckets:
            rate, cap = b[0], b[1]
            b[2] = min(cap, b[2] + elapsed * rate) - (1.0 if b[3] == 0 else min(float(tokens), cap))
            if b[2] < 0:
                wait = max(wait, -b[2] / rate)
        self.requests += 1
        self.tokens += tokens
        self.waited_s += wait
        return wait

    def granted(self) -> dict[str, float]:
        """What was granted so far: ``requests``, ``tokens``, ``waited_s``."""
        return {"requests": self.requests, "tokens": self.tokens, "waited_s": self.waited_s}


Sleep = Callable[[float], Awaitable[Any]]


def local_limiter(limit: RateLimit, sleep: Sleep = asyncio.sleep) -> Callable[[int], Awaitable[None]]:
    """An awaitable limiter over one process's requests (``sleep``: how a wait is awaited)."""
    async def acquire(tokens: int) -> None:
        wait = limit.reserve(tokens)
        if wait > 0:
            await sleep(wait)
    return acquire


class _LimiterActor:
    def __init__(self, rpm: float | None, tpm: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = RateLimit(rpm, tpm, clock=clock)

    def reserve(self, tokens: int) -> float:
        return self.limit.reserve(tokens)

    def granted(self) -> dict[str, float]:
        return self.limit.granted()


def shared_limiter_name() -> str:
    """A fresh name for one run's limiter actor."""
    return f"reprodiag-ratelimit-{uuid.uuid4().hex}"


def shared_limiter(name: str, rpm: float | None, tpm: float | None,
                   sleep: Sleep = asyncio.sleep) -> Callable[[int], Awaitable[None]]:
    """On a Ray worker: the run's limiter actor ``name`` (created by the first worker that asks, shared by all
    of the run's workers), as an awaitable limiter (``sleep``: how a wait is awaited)."""
    import ray

    actor = ray.remote(_LimiterActor).options(name=name, get_if_exists=True, num_cpus=0).remote(rpm, tpm)

    async def acquire(tokens: int) -> None:
        wait = await actor.reserve.remote(tokens)
        if wait > 0:
            await sleep(wait)
    return acquire
