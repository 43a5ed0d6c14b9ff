"""A pool of GitHub tokens that spends the one with the most budget left.

Budgets are learnt from every answer (``x-ratelimit-remaining``/``x-ratelimit-reset``
headers and GraphQL ``rateLimit { remaining resetAt }``). A token is spendable while its
remaining budget is above ``floor`` (or its window has reset) and it is not blocked by a
secondary limit. When no token is spendable the pool sleeps until the earliest token
frees up, reporting the wait through ``on_wait(seconds, reset_epoch)``.

``per_token`` caps the requests in flight on one token (GitHub's secondary limits are
per user or app: at most 100 concurrent requests); :meth:`TokenPool.acquire` then waits
for a :meth:`TokenPool.release` when every spendable token is at its cap, so N tokens
carry N times the concurrent requests of one.

To scale, use GitHub App installation tokens (5,000+ points per hour per installation,
up to 12,500 on large organisations); never pool other people's personal tokens.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from reprodiag.config import Secret

#: GitHub's default budget for a personal token (points per hour; also REST requests per hour).
DEFAULT_LIMIT = 5000


@dataclass
class TokenState:
    """Mutable budget view of one token (times are epoch seconds)."""

    secret: Secret
    remaining: int = DEFAULT_LIMIT
    limit: int = DEFAULT_LIMIT
    reset_at: float = 0.0
    blocked_until: float = 0.0
    secondary_hits: int = 0
    requests: int = 0
    points: int = 0
    inflight: int = 0

    @property
    def label(self) -> str:
        return self.secret.label


class TokenPool:
    """Choose tokens by remaining budget; ``clock``/``sleep`` are injectable for tests."""

    def __init__(self, tokens: list[Secret], *, floor: int = 50,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 on_wait: Callable[[float, float], None] | None = None, per_token: int | None = None) -> None:
        if not tokens:
            raise ValueError("TokenPool needs at least one token")
        if per_token is not None and per_token < 1:
            raise ValueError("per_token must be at least 1")
        self.per_token = per_token
        self._freed: asyncio.Event | None = None
        self.states = [TokenState(t) for t in tokens]
        self.floor = floor
        self.clock = clock
        self.sleep = sleep
        self.on_wait = on_wait
        self.waited_s = 0.0
        self.waits = 0
        self._lock = threading.Lock()

    def _spendable(self, t: TokenState, now: float) -> bool:
        if t.blocked_until > now:
            return False
        if t.remaining <= self.floor and t.reset_at > now:
            return False
        return True

    def _free_at(self, t: TokenState) -> float:
        at = t.blocked_until
        if t.remaining <= self.floor:
            at = max(at, t.reset_at)
        return at

    def _pick(self, cost: int, track: bool = False) -> tuple[TokenState | None, float, float]:
        """The spendable token with most budget left (reserving ``cost``), else how long to wait and until when.

        With ``track`` the token's in-flight count goes up (and tokens at ``per_token`` are passed over);
        a wait of 0 with no token means: every spendable token is at its cap, wait for a release."""
        with self._lock:
            now = self.clock()
            for t in self.states:
                if t.reset_at and t.reset_at <= now and t.remaining < t.limit:
                    t.remaining = t.limit
            ready = [t for t in self.states if self._spendable(t, now)]
            if ready and track and self.per_token is not None:
                free = [t for t in ready if t.inflight < self.per_token]
                if not free:
                    return None, 0.0, now
                ready = free
            if ready:
                best = max(ready, key=lambda t: t.remaining)
                best.remaining -= cost
                if track:
                    best.inflight += 1
                return best, 0.0, now
            until = min(self._free_at(t) for t in self.states)
            wait = max(0.01, until - now + 0.05)
            self.waited_s += wait
            self.waits += 1
        if self.on_wait is not None:
            self.on_wait(wait, until)
        return None, wait, until

    async def acquire(self, cost: int = 1) -> TokenState:
        """The spendable token with most budget left (reserving ``cost``); sleeps (async) if none.

        The token counts as in flight until :meth:`release`."""
        while True:
            tok, wait, _until = self._pick(cost, track=True)
            if tok is not None:
                return tok
            if wait == 0.0:  # every spendable token is at its in-flight cap
                if self._freed is None:
                    self._freed = asyncio.Event()
                self._freed.clear()
                await self._freed.wait()
                continue
            await self.sleep(wait)

    def release(self, t: TokenState) -> None:
        """The request acquired with ``t`` is over (answered or failed)."""
        with self._lock:
            t.inflight = max(0, t.inflight - 1)
        if self._freed is not None:
            self._freed.set()

    def acquire_blocking(self, cost: int = 1) -> TokenState:
        """Thread-safe, blocking variant of :meth:`acquire` for worker threads (the REST path)."""
        while True:
            tok, wait, _until = self._pick(cost)
            if tok is not None:
                return tok
            time.sleep(wait)

    def observe(self, t: TokenState, *, remaining: int | None = None, limit: int | None = None,
                reset_at: float | None = None, cost: int | None = None) -> None:
        """Record what an answer said about the token's budget."""
        if limit is not None:
            t.limit = limit
        if remaining is not None:
            t.remaining = remaining
        if reset_at is not None:
            t.reset_at = reset_at
        if cost is not None:
            t.points += cost
        t.requests += 1

    def exhausted(self, t: TokenState, reset_at: float | None) -> None:
        """The primary limit is spent: park the token until ``reset_at`` (or a minute)."""
        t.remaining = 0
        t.reset_at = reset_at if reset_at and reset_at > self.clock() else self.clock() + 60

    def block(self, t: TokenState, seconds: float) -> None:
        """A secondary limit: do not use the token for ``seconds``."""
        t.secondary_hits += 1
        t.blocked_until = max(t.blocked_until, self.clock() + seconds)

    @property
    def requests(self) -> int:
        return sum(t.requests for t in self.states)

    @property
    def points(self) -> int:
        return sum(t.points for t in self.states)
