"""GitHub GraphQL over gql's AIOHTTPTransport, with the token pool, retries and limits.

* 502/503/504, connection resets, timeouts and truncated bodies are retried with
  jittered exponential backoff (tenacity); a 502/504 on a ``heavy`` query is raised as
  :class:`GatewayError` at once so the caller can halve its page size instead.
* Secondary limits (403/429): wait ``retry-after`` seconds, else until
  ``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0, else at least
  ``secondary_min_wait_s`` doubling on each repeat; then retry (not counted as an attempt).
* Primary limit: ``errors[].type`` ``RATE_LIMITED``/``RATE_LIMIT`` (HTTP 200) parks the
  token until its reset; the pool moves on to another token or sleeps.
* 401 is a :class:`UserError` naming the token by position ("token #2"), never its value.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp
from gql import Client, GraphQLRequest
from gql.transport.aiohttp import AIOHTTPTransport
from gql.transport.exceptions import (
    TransportConnectionFailed,
    TransportError,
    TransportProtocolError,
    TransportQueryError,
    TransportServerError,
)
from graphql import DocumentNode, ExecutionResult, parse
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from miner.tokens import TokenPool, TokenState
from reprodiag.errors import UserError

_HEADERS_KEY = "_http_headers"


@dataclass(frozen=True)
class ClientSettings:
    """Retry and limit knobs. Times in seconds; ``max_attempts`` counts transient failures per request."""

    #: Requests in flight per token (N tokens carry N times as many; GitHub allows 100 per user or app).
    concurrency: int = 8
    floor: int = 50
    max_attempts: int = 7
    backoff_s: float = 1.0
    backoff_max_s: float = 60.0
    secondary_min_wait_s: float = 60.0
    max_secondary: int = 30
    timeout_s: float = 120.0
    #: Repositories mined at the same time (their work shares packed queries); 1: one after another.
    repos_at_once: int = 64
    #: A heavy query answered 502/504 is asked this many more times before the caller is told to ask for
    #: less: GitHub's gateway also fails now and then on light queries, and each "ask for less" costs.
    gateway_retries: int = 2


class Transient(Exception):
    """A failure worth retrying (5xx, reset, timeout, truncated body)."""


class GatewayError(Exception):
    """502/504 on a heavy query: the caller should ask for less."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status} from GitHub GraphQL")
        self.status = status


class GraphQLFailure(Exception):
    """GitHub answered with errors that retrying will not fix. One-line message."""


class GitHubHTTPError(TransportServerError):
    """A non-2xx answer with its headers kept (gql's own error drops them)."""

    def __init__(self, status: int, headers: dict[str, str], text: str) -> None:
        super().__init__(f"HTTP {status}: {' '.join(text.split())[:200]}", status)
        self.status = status
        self.headers = headers
        self.text = text


class _GitHubTransport(AIOHTTPTransport):
    """AIOHTTPTransport that keeps status and headers of every answer (needed for rate limits)."""

    async def _prepare_result(self, response: aiohttp.ClientResponse) -> ExecutionResult:
        headers = {k.lower(): v for k, v in response.headers.items()}
        try:
            raw = await response.read()
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
            raise TransportConnectionFailed(f"truncated body: {type(exc).__name__}") from None
        if response.status >= 400:
            raise GitHubHTTPError(response.status, headers, raw.decode("utf-8", "replace"))
        try:
            result = json.loads(raw)
        except ValueError:
            raise TransportProtocolError("GitHub answered with a body that is not JSON (truncated?)") from None
        if not isinstance(result, dict) or ("data" not in result and "errors" not in result):
            raise TransportProtocolError('no "data" or "errors" in the GraphQL answer')
        ext = dict(result.get("extensions") or {})
        ext[_HEADERS_KEY] = headers
        return ExecutionResult(data=result.get("data"), errors=result.get("errors"), extensions=ext)


class _TextRequest(GraphQLRequest):
    """A request sent as the query text we built (gql would otherwise parse it and print it back,
    which costs ~100 ms of graphql-core per packed query). The document is parsed only if gql asks."""

    def __init__(self, query: str, variables: dict[str, Any] | None) -> None:  # noqa: D107
        self.query = query
        self._doc: DocumentNode | None = None
        self.variable_values = variables or None
        self.operation_name = None
        self.extensions = None

    @property  # type: ignore[override]
    def document(self) -> DocumentNode:
        if self._doc is None:
            self._doc = parse(self.query)
        return self._doc

    @document.setter
    def document(self, value: DocumentNode) -> None:
        self._doc = value

    @property
    def payload(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"query": self.query}
        if self.variable_values:
            doc["variables"] = self.variable_values
        return doc


def error_type(e: dict[str, Any]) -> str:
    """A GraphQL error's GitHub type: the top-level ``type`` GitHub sends, else ``extensions.type`` or
    ``extensions.code`` (where other servers put it); "" when none is said."""
    ext = e.get("extensions") if isinstance(e.get("extensions"), dict) else {}
    for value in (e.get("type"), ext.get("type"), ext.get("code")):
        if isinstance(value, str) and value:
            return value.upper()
    return ""


def is_rate_limit(headers: dict[str, str], text: str) -> bool:
    """A 403 that is a rate limit (primary or secondary) rather than a refusal (no access, SSO, scopes):
    GitHub then sends ``retry-after``, ``x-ratelimit-remaining: 0``, or says "rate limit"/"abuse"."""
    low = text.lower()
    return ("retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"
            or "rate limit" in low or "abuse" in low)


def _epoch(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None


@dataclass
class Answer:
    """One GraphQL answer: ``data``, GitHub ``errors`` (partial results), and the points it cost."""

    data: dict[str, Any]
    errors: list[dict[str, Any]] = field(default_factory=list)
    cost: int = 0


class GraphQLClient:
    """Use as ``async with GraphQLClient(url, pool, settings) as gh: await gh.query(q, vars)``."""

    def __init__(self, url: str, pool: TokenPool, settings: ClientSettings | None = None, *,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        self.url = url
        self.pool = pool
        self.settings = settings or ClientSettings()
        self.sleep = sleep or pool.sleep
        self._transport = _GitHubTransport(url=url, timeout=int(self.settings.timeout_s))
        self._client = Client(transport=self._transport, fetch_schema_from_transport=False,
                              execute_timeout=self.settings.timeout_s)
        self._session: Any = None
        if pool.per_token is None:
            pool.per_token = self.settings.concurrency
        #: Requests in flight at most: ``concurrency`` per token.
        self.capacity = self.settings.concurrency * len(pool.states)
        self._sem = asyncio.Semaphore(self.capacity)
        self.requests = 0
        self.points = 0
        self.retries = 0
        #: heavy queries asked again after one 502/504 (before the caller is told to ask for less)
        self.gateway_retries = 0
        self.secondary_hits = 0
        self.rate_limited = 0
        self._tried_root = False

    async def __aenter__(self) -> GraphQLClient:
        self._session = await self._client.connect_async(reconnecting=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.close_async()

    async def query(self, query: str, variables: dict[str, Any] | None = None, *, heavy: bool = False) -> Answer:
        """Run one query to completion (retrying transient failures); GitHub errors come back in ``errors``.

        A 502/504 on a ``heavy`` query is asked again (``settings.gateway_retries`` times, after a backoff)
        before :class:`GatewayError` tells the caller to ask for less: GitHub's gateway also fails now and then
        on queries it answers a moment later, and each "ask for less" costs smaller queries for a while."""
        tries = 0
        while True:
            try:
                return await self._query(query, variables, heavy=heavy)
            except GatewayError:
                if not heavy or tries >= self.settings.gateway_retries:
                    raise
                tries += 1
                self.retries += 1
                self.gateway_retries += 1
                await self.sleep(self.settings.backoff_s * tries)

    async def _query(self, query: str, variables: dict[str, Any] | None = None, *, heavy: bool = False) -> Answer:
        request = _TextRequest(query, variables)
        s = self.settings
        retrying = AsyncRetrying(
            stop=stop_after_attempt(s.max_attempts),
            wait=wait_exponential_jitter(initial=s.backoff_s, max=s.backoff_max_s, jitter=s.backoff_s),
            retry=retry_if_exception_type(Transient), reraise=True, sleep=self.sleep)
        try:
            async for attempt in retrying:
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        self.retries += 1
                    return await self._once(request, heavy)
        except Transient as exc:
            raise GraphQLFailure(f"GitHub GraphQL kept failing after {s.max_attempts} attempts: {exc}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _once(self, request: _TextRequest, heavy: bool) -> Answer:
        s = self.settings
        secondary = 0
        while True:
            async with self._sem:
                tok = await self.pool.acquire()
                try:
                    headers: dict[str, str] = {}
                    used = self.url
                    try:
                        self.requests += 1
                        res = await self._session.execute(
                            request, get_execution_result=True,
                            extra_args={"headers": {"Authorization": f"bearer {tok.secret.get()}"}})
                        data, errors = res.data, []
                        headers = (res.extensions or {}).get(_HEADERS_KEY, {})
                    except TransportQueryError as exc:
                        data, errors = exc.data, list(exc.errors or [])
                        headers = (exc.extensions or {}).get(_HEADERS_KEY, {})
                    except GitHubHTTPError as exc:
                        if exc.status == 404 and (used != self.url or self._fallback()):
                            continue  # asked at the Enterprise path; the server has GitHub.com's layout
                        self._http_error(exc, tok, heavy, secondary)
                        secondary += 1
                        if secondary > s.max_secondary:
                            raise GraphQLFailure(f"GitHub kept answering {exc.status} (secondary rate limit)") from None
                        continue
                    except (TransportConnectionFailed, TransportProtocolError, TransportServerError,
                            TimeoutError, aiohttp.ClientError) as exc:
                        raise Transient(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
                    except TransportError as exc:
                        raise Transient(f"{type(exc).__name__}") from None
                finally:
                    self.pool.release(tok)
            rate = (data or {}).get("rateLimit") if isinstance(data, dict) else None
            self._observe(tok, headers, rate)
            limited = [e for e in errors if error_type(e) in ("RATE_LIMITED", "RATE_LIMIT")]
            if limited:
                self.rate_limited += 1
                self.pool.exhausted(tok, _epoch(headers.get("x-ratelimit-reset")))
                continue
            if data is None:
                msg = "; ".join(str(e.get("message", "")) for e in errors[:2]) or "empty answer"
                raise GraphQLFailure(f"GitHub GraphQL error: {' '.join(msg.split())[:300]}")
            cost = int(rate.get("cost") or 0) if isinstance(rate, dict) else 0
            self.points += cost
            return Answer(data=data, errors=errors, cost=cost)

    def _observe(self, tok: TokenState, headers: dict[str, str], rate: dict[str, Any] | None) -> None:
        remaining = limit = reset = cost = None
        if headers.get("x-ratelimit-remaining", "").isdigit():
            remaining = int(headers["x-ratelimit-remaining"])
        if headers.get("x-ratelimit-limit", "").isdigit():
            limit = int(headers["x-ratelimit-limit"])
        reset = _epoch(headers.get("x-ratelimit-reset"))
        if isinstance(rate, dict):
            if isinstance(rate.get("remaining"), int):
                remaining = rate["remaining"]
            if isinstance(rate.get("limit"), int):
                limit = rate["limit"]
            reset = _epoch(rate.get("resetAt")) or reset
            cost = rate.get("cost") if isinstance(rate.get("cost"), int) else None
        self.pool.observe(tok, remaining=remaining, limit=limit, reset_at=reset, cost=cost)

    def _fallback(self) -> bool:
        """``/api/graphql`` (Enterprise layout) is not there: try ``/graphql`` at the same base once
        (api.github.com's layout, which a server at a plain ``http://host`` may use). True to retry."""
        if self._tried_root or not self.url.rstrip("/").endswith("/api/graphql"):
            return False
        self._tried_root = True
        self.url = self.url.rstrip("/")[: -len("/api/graphql")] + "/graphql"
        self._transport.url = self.url
        return True

    def _http_error(self, exc: GitHubHTTPError, tok: TokenState, heavy: bool, secondary: int) -> None:
        """Decide what an HTTP error means: park the token (rate limits) and return, or raise."""
        s = self.settings
        st, h = exc.status, exc.headers
        if st == 401:
            raise UserError(f"GitHub answered 401 Bad credentials for {tok.label} (value not shown): "
                            "replace or remove that token")
        if st == 403 and not is_rate_limit(h, exc.text):
            raise GraphQLFailure(f"GitHub GraphQL answered HTTP 403: {' '.join(exc.text.split())[:200]}")
        if st in (403, 429):
            self.secondary_hits += 1
            retry_after = _epoch(h.get("retry-after"))
            if retry_after is not None:
                wait = retry_after
            elif h.get("x-ratelimit-remaining") == "0" and _epoch(h.get("x-ratelimit-reset")):
                self.pool.exhausted(tok, _epoch(h.get("x-ratelimit-reset")))
                return
            else:
                wait = s.secondary_min_wait_s * (2 ** min(secondary, 6))
            self.pool.block(tok, wait)
            return
        if st in (502, 504) and heavy:
            raise GatewayError(st)
        if st >= 500:
            raise Transient(f"HTTP {st}")
        if st == 404:
            raise UserError(f"no GitHub GraphQL endpoint at {self.url} (HTTP 404); check --api-url or use --api rest")
        raise GraphQLFailure(f"GitHub GraphQL answered HTTP {st}: {' '.join(exc.text.split())[:200]}")
