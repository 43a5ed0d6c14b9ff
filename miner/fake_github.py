"""A loopback fake GitHub (REST v3 + GraphQL) serving a corpus of :class:`Thread`s.

In-process: :func:`serve_fake_github` / :class:`FakeGitHubThread`. In its own process
(so its CPU does not share the client's GIL): ``python -m miner.fake_github --corpus
threads.jsonl [--meta repos.json] [--tokens-file F] [--latency-ms 100] [--port 0]``
prints its base URL on the first line of stdout and serves until SIGTERM, SIGINT or
the end of stdin (see :class:`miner.fake_process.FakeGitHubProcess`). With ``--workers N``
it validates, costs and executes GraphQL queries in N forked worker processes, as GitHub
serves concurrent queries on many machines (budgets, faults and statistics stay in the
serving process; the corpus is then read-only).

Used by the tests and by the offline demo. It speaks GitHub's wire format closely
enough that the production clients (gql's AIOHTTPTransport, PyGithub) run unchanged:

* GraphQL at ``/api/graphql``: every query is parsed and validated against GitHub's
  public schema (:mod:`miner.github_schema`), costed with GitHub's formula, charged to
  the token's budget, then executed for real over resolvers on the corpus (by
  :mod:`miner.fake_executor`, which gives graphql-core's answers, faster). Invalid
  queries get GitHub-style ``errors`` (HTTP 200); an exhausted budget gets
  ``errors[].type == "RATE_LIMITED"``.
* REST at ``/api/v3``: ``/repos/{o}/{n}``, ``/issues`` (state, since, sort, direction,
  per_page, page, ``Link`` headers; pull requests carry a ``pull_request`` key),
  ``/issues/{n}``, ``/issues/{n}/comments``, ``/pulls``, ``/rate_limit``.
* Rate-limit headers on every answer; ``401 Bad credentials`` for unknown tokens when a
  token set is configured; seeded, injectable faults (:class:`Faults`); ``/__stats``.

Cursors are keyset cursors (sort key + number, base64), as on GitHub, so a thread
updated during a pass moves instead of shifting the pages after it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import hashlib
import json
import math
import multiprocessing
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from aiohttp import web
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

from miner.fake_executor import execute_fast
from miner.github_schema import QueryRejected, check_query, github_schema
from reprodiag.config import Secret
from reprodiag.schema import Comment, Thread

ISSUE_REASONS = {"COMPLETED", "DUPLICATE", "NOT_PLANNED", "REOPENED"}
DISCUSSION_REASONS = {"DUPLICATE", "OUTDATED", "REOPENED", "RESOLVED"}
ASSOCIATIONS = {"COLLABORATOR", "CONTRIBUTOR", "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR", "MANNEQUIN", "MEMBER",
                "NONE", "OWNER"}


@dataclass
class Faults:
    """Seeded fault injection. Probabilities are per request (GraphQL and REST alike).

    ``heavy_502_nodes``: a GraphQL query asking for more nodes than this answers 502
    (GitHub's timeout on heavy queries). ``retry_after_s``: the secondary limit's
    ``retry-after`` header (None: no header, as GitHub sometimes does). ``budget``:
    GraphQL points per token per ``window_s`` seconds (REST: ``rest_budget`` requests).
    ``fail_first``: the first N requests answer 502. ``forward_only``: connections ignore
    ``last``/``before`` (a server that cannot page backwards answers the first items).
    """

    seed: int = 0
    p_502: float = 0.0
    p_secondary: float = 0.0
    p_reset: float = 0.0
    p_truncated: float = 0.0
    heavy_502_nodes: int | None = None
    retry_after_s: int | None = 1
    secondary_status: int = 403
    budget: int | None = None
    rest_budget: int | None = None
    window_s: float = 3600.0
    forward_only: bool = False
    fail_first: int = 0


@dataclass
class _Budget:
    limit: int
    remaining: int
    reset_at: float


@dataclass
class _Stats:
    requests: dict[str, int] = field(default_factory=dict)
    points: dict[str, int] = field(default_factory=dict)
    graphql_requests: int = 0
    rest_requests: int = 0
    invalid_queries: int = 0
    rate_limited: int = 0
    #: CPU seconds (of the serving thread) spent parsing, validating, costing, executing and encoding GraphQL.
    graphql_cpu_s: float = 0.0
    #: GraphQL requests being served at once (now and the most seen), in all and per token label.
    inflight: dict[str, int] = field(default_factory=dict)
    max_inflight: int = 0
    max_inflight_per_token: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)


@lru_cache(maxsize=1 << 16)  # the fake's resolvers format the same timestamps again and again
def _iso(d: datetime | None) -> str | None:
    if d is None:
        return None
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cursor(key: Any) -> str:
    return base64.b64encode(("cursor:v2:" + json.dumps(key)).encode()).decode()


def _uncursor(cur: str) -> Any:
    try:
        raw = base64.b64decode(cur.encode(), validate=True).decode()
        if not raw.startswith("cursor:v2:"):
            raise ValueError
        return json.loads(raw[len("cursor:v2:"):])
    except (ValueError, UnicodeDecodeError):
        raise GraphQLError(f"`{cur}` does not appear to be a valid cursor.") from None


class _GhError(Exception):
    def __init__(self, gh_type: str, message: str) -> None:
        super().__init__(message)
        self.gh_type = gh_type


@lru_cache(maxsize=1 << 16)
def _node_id(prefix: str, raw: str) -> str:
    return prefix + "_" + base64.urlsafe_b64encode(hashlib.sha1(raw.encode()).digest()[:9]).decode()


def _rest_id(raw: str) -> int:
    return int(hashlib.sha1(raw.encode()).hexdigest()[:10], 16)


class FakeState:
    """The served corpus, budgets and statistics. Mutate it with :meth:`put_thread` between runs."""

    def __init__(self, threads: Sequence[Thread], repos_meta: dict[str, dict[str, Any]] | None,
                 tokens: Sequence[str | Secret] | None, faults: Faults | None, latency_ms: float) -> None:
        self.threads: dict[tuple[str, str, int], Thread] = {}
        self._lists: dict[tuple[str, str], dict[int, Thread]] = {}
        self._nodes: dict[str, tuple[Comment, Thread]] | None = None
        self.meta: dict[str, dict[str, Any]] = {}
        self.aliases: dict[str, str] = {}
        self.lock = threading.RLock()
        for t in threads:
            self.put_thread(t)
        for name, m in (repos_meta or {}).items():
            self.meta[name.lower()] = {"name": name, **m}
            for old in m.get("renamed_from", []) or []:
                self.aliases[old.lower()] = name.lower()
        toks = [t.get() if isinstance(t, Secret) else t for t in tokens] if tokens is not None else None
        self.tokens: dict[str, str] | None = (
            {t: f"token #{i}" for i, t in enumerate(toks, start=1)} if toks is not None else None)
        self.faults = faults or Faults()
        self.rng = random.Random(self.faults.seed)
        self.latency_s = latency_ms / 1000.0
        self.budgets: dict[str, _Budget] = {}
        self.rest_budgets: dict[str, _Budget] = {}
        self.stats = _Stats()
        self.served = 0

    # ------------------------------------------------------------------ corpus

    def put_thread(self, t: Thread) -> None:
        """Add or replace a thread (tests use it to change a thread between two syncs)."""
        with self.lock:
            self.threads[(t.repo.lower(), t.kind, t.number)] = t
            self._lists.setdefault((t.repo.lower(), t.kind), {})[t.number] = t
            self._nodes = None
            self.meta.setdefault(t.repo.lower(), {"name": t.repo})

    def repo_name(self, owner: str, name: str) -> str | None:
        key = f"{owner}/{name}".lower()
        key = self.aliases.get(key, key)
        m = self.meta.get(key)
        if m is None or m.get("missing"):
            return None
        return key

    def repo_threads(self, key: str, kind: str) -> list[Thread]:
        with self.lock:
            return list(self._lists.get((key, kind), {}).values())

    def comment_node(self, node_id: str) -> tuple[Comment, Thread] | None:
        """A comment or reply by node id (index rebuilt after :meth:`put_thread`)."""
        with self.lock:
            if self._nodes is None:
                self._nodes = {}
                for t in self.threads.values():
                    for c in t.comments:
                        self._nodes[c.id] = (c, t)
                        for r in c.replies:
                            self._nodes[r.id] = (r, t)
            return self._nodes.get(node_id)

    def get(self, key: str, kind: str, number: int) -> Thread | None:
        with self.lock:
            return self.threads.get((key, kind, number))

    # ------------------------------------------------------------------ auth & budget

    def token_label(self, auth: str | None) -> str | None:
        """The stats label of the request's token; None when a token set is configured and it is unknown."""
        tok = None
        if auth:
            parts = auth.split(None, 1)
            tok = parts[1].strip() if len(parts) == 2 else parts[0].strip()
        if self.tokens is None:
            return "anonymous" if not tok else "token:" + hashlib.sha256(tok.encode()).hexdigest()[:8]
        return self.tokens.get(tok or "")

    def budget(self, label: str, rest: bool = False) -> _Budget:
        table = self.rest_budgets if rest else self.budgets
        limit = (self.faults.rest_budget if rest else self.faults.budget) or 5000
        now = time.time()
        b = table.get(label)
        if b is None or now >= b.reset_at:
            b = _Budget(limit, limit, now + self.faults.window_s)
            table[label] = b
        return b

    def count(self, label: str, points: int = 0) -> None:
        self.stats.requests[label] = self.stats.requests.get(label, 0) + 1
        self.stats.points[label] = self.stats.points.get(label, 0) + points

    def fault(self) -> str | None:
        """Pick an injected fault for this request (or None)."""
        f = self.faults
        with self.lock:
            self.served += 1
            if self.served <= f.fail_first:
                kind: str | None = "502"
            else:
                r = self.rng.random()
                kind = None
                for name, p in (("502", f.p_502), ("secondary", f.p_secondary), ("reset", f.p_reset),
                                ("truncated", f.p_truncated)):
                    if r < p:
                        kind = name
                        break
                    r -= p
            if kind:
                self.stats.faults[kind] = self.stats.faults.get(kind, 0) + 1
            return kind

    def stats_doc(self) -> dict[str, Any]:
        s = self.stats
        return {"requests": s.requests, "points": s.points, "graphql_requests": s.graphql_requests,
                "rest_requests": s.rest_requests, "invalid_queries": s.invalid_queries,
                "rate_limited": s.rate_limited, "faults": s.faults, "graphql_cpu_s": round(s.graphql_cpu_s, 4),
                "max_inflight": s.max_inflight, "max_inflight_per_token": s.max_inflight_per_token,
                "total_requests": sum(s.requests.values()), "total_points": sum(s.points.values())}


# ---------------------------------------------------------------------- GraphQL objects


def _page(items: list[Any], keys: list[Any], args: dict[str, Any], to_node: Any) -> dict[str, Any]:
    """A connection over ``items`` (already in order) with keyset cursors from ``keys``; nodes built lazily."""
    first, last, after, before = args.get("first"), args.get("last"), args.get("after"), args.get("before")
    lo, hi = 0, len(items)
    if after:
        k = _uncursor(after)
        lo = next((i for i, kk in enumerate(keys) if kk > k), len(items))
    if before:
        k = _uncursor(before)
        hi = next((i for i, kk in enumerate(keys) if kk >= k), len(items))
    window = list(range(lo, max(lo, hi)))
    if first is not None:
        window = window[:first]
    elif last is not None:
        window = window[-last:]
    has_next = bool(window) and window[-1] < len(items) - 1
    has_prev = bool(window) and window[0] > 0
    return {
        "totalCount": len(items),
        "pageInfo": {"hasNextPage": has_next, "hasPreviousPage": has_prev,
                     "startCursor": _cursor(keys[window[0]]) if window else None,
                     "endCursor": _cursor(keys[window[-1]]) if window else None},
        "nodes": lambda info, **a: [to_node(items[i]) for i in window],
        "edges": lambda info, **a: [{"cursor": _cursor(keys[i]), "node": to_node(items[i])} for i in window],
    }


def _actor(login: str | None) -> dict[str, Any] | None:
    return {"__typename": "User", "login": login, "id": _node_id("U", login)} if login else None


def _assoc(a: str) -> str:
    return a if a in ASSOCIATIONS else "NONE"


def _reactions(n: int) -> Any:
    return lambda info, **a: {"totalCount": n, "nodes": [], "edges": [],
                              "pageInfo": {"hasNextPage": False, "hasPreviousPage": False}}


def _labels(names: list[str]) -> Any:
    return lambda info, **a: _page(names, list(range(len(names))), a,
                                   lambda s: {"__typename": "Label", "name": s, "id": _node_id("LA", s)})


class _Graph:
    """Resolvers over the corpus (dicts whose callables graphql-core's default resolver calls)."""

    def __init__(self, state: FakeState) -> None:
        self.s = state

    def _args(self, a: dict[str, Any]) -> dict[str, Any]:
        if self.s.faults.forward_only:
            out = {k: v for k, v in a.items() if k not in ("last", "before")}
            out.setdefault("first", 100)
            return out
        return a

    def comment(self, c: Comment, t: Thread) -> dict[str, Any]:
        base = {
            "id": c.id, "body": c.body, "createdAt": _iso(c.created_at), "updatedAt": _iso(c.created_at),
            "authorAssociation": _assoc(c.author_association), "author": _actor(c.author),
            "reactions": _reactions(c.reactions), "url": f"{t.url}#comment-{c.id}", "databaseId": _rest_id(c.id),
        }
        if t.kind == "discussion":
            base["__typename"] = "DiscussionComment"
            base["isAnswer"] = c.is_answer
            replies = c.replies
            base["replies"] = lambda info, **a: _page(replies, list(range(len(replies))), a,
                                                      lambda r: self.comment(r, t))
        else:
            base["__typename"] = "IssueComment"
        return base

    def thread(self, t: Thread) -> dict[str, Any]:
        comments = t.comments
        d: dict[str, Any] = {
            "id": _node_id({"issue": "I", "pull_request": "PR", "discussion": "D"}[t.kind], t.id),
            "number": t.number, "url": t.url or f"https://github.com/{t.repo}/issues/{t.number}",
            "title": t.title, "body": t.body, "createdAt": _iso(t.created_at), "updatedAt": _iso(t.updated_at),
            "closedAt": _iso(t.closed_at), "closed": t.state == "closed",
            "authorAssociation": _assoc(t.author_association), "author": _actor(t.author),
            "labels": _labels(list(t.labels)), "reactions": _reactions(t.reactions),
            "comments": lambda info, **a: _page(comments, list(range(len(comments))), self._args(a),
                                                lambda c: self.comment(c, t)),
        }
        reason = (t.state_reason or "").upper()
        if t.kind == "issue":
            d["__typename"] = "Issue"
            d["state"] = "CLOSED" if t.state == "closed" else "OPEN"
            d["stateReason"] = reason if reason in ISSUE_REASONS else None
        elif t.kind == "pull_request":
            d["__typename"] = "PullRequest"
            d["state"] = "CLOSED" if t.state == "closed" else "OPEN"
        else:
            d["__typename"] = "Discussion"
            d["stateReason"] = reason if reason in DISCUSSION_REASONS else None
            d["category"] = {"__typename": "DiscussionCategory", "name": t.category or "General",
                             "id": _node_id("DIC", t.category or "General")}
            d["answer"] = ({"__typename": "DiscussionComment", "id": t.answer_id} if t.answer_id else None)
        return d

    def repository(self, info: Any, owner: str, name: str, **_: Any) -> dict[str, Any]:
        key = self.s.repo_name(owner, name)
        if key is None:
            raise _GhError("NOT_FOUND", f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        m = self.s.meta[key]
        has_issues = bool(m.get("has_issues", True))
        has_disc = bool(m.get("has_discussions", True))

        def listing(kind: str, enabled: bool) -> Any:
            def resolve(info: Any, **a: Any) -> dict[str, Any]:
                items = self.s.repo_threads(key, kind) if enabled else []
                since = (a.get("filterBy") or {}).get("since")
                if since:
                    cut = datetime.fromisoformat(since.replace("Z", "+00:00"))
                    items = [t for t in items if t.updated_at >= cut]
                states = a.get("states")
                if states:
                    want = {s.lower() for s in states}
                    items = [t for t in items if t.state in want or (t.state == "closed" and "merged" in want)]
                order = a.get("orderBy") or {"field": "CREATED_AT", "direction": "ASC"}
                fld = {"UPDATED_AT": "updated_at", "CREATED_AT": "created_at"}.get(order.get("field"), "created_at")
                desc = order.get("direction") == "DESC"

                def sort_key(t: Thread) -> list[Any]:
                    ts = getattr(t, fld).timestamp()
                    return [-ts, -t.number] if desc else [ts, t.number]

                items.sort(key=sort_key)
                return _page(items, [sort_key(t) for t in items], a, self.thread)
            return resolve

        def single(kind: str, enabled: bool) -> Any:
            def resolve(info: Any, number: int, **_: Any) -> dict[str, Any] | None:
                t = self.s.get(key, kind, number) if enabled else None
                if t is None:
                    label = {"issue": "Issue", "pull_request": "PullRequest", "discussion": "Discussion"}[kind]
                    raise _GhError("NOT_FOUND", f"Could not resolve to a{'n' if kind == 'issue' else ''} {label} "
                                                f"with the number of {number}.")
                return self.thread(t)
            return resolve

        return {
            "__typename": "Repository", "id": _node_id("R", key), "nameWithOwner": m["name"],
            "name": m["name"].split("/")[1], "stargazerCount": int(m.get("stars", 0)),
            "isArchived": bool(m.get("archived", False)), "hasIssuesEnabled": has_issues,
            "hasDiscussionsEnabled": has_disc, "url": f"https://github.com/{m['name']}",
            "issues": listing("issue", has_issues), "pullRequests": listing("pull_request", True),
            "discussions": listing("discussion", has_disc),
            "issue": single("issue", has_issues), "pullRequest": single("pull_request", True),
            "discussion": single("discussion", has_disc),
        }

    def node(self, info: Any, id: str, **_: Any) -> dict[str, Any] | None:  # noqa: A002 - GraphQL name
        found = self.s.comment_node(id)
        if found is not None:
            return self.comment(*found)
        raise _GhError("NOT_FOUND", f"Could not resolve to a node with the global id of '{id}'")


# ---------------------------------------------------------------------- HTTP layer


def _rate_headers(b: _Budget, used: int, resource: str) -> dict[str, str]:
    return {"x-ratelimit-limit": str(b.limit), "x-ratelimit-remaining": str(max(0, b.remaining)),
            "x-ratelimit-reset": str(int(math.ceil(b.reset_at))), "x-ratelimit-used": str(used),
            "x-ratelimit-resource": resource}


class FakeGitHub:
    """The aiohttp application. ``await start()`` binds 127.0.0.1 on a free port; ``url`` is the base."""

    def __init__(self, threads: Sequence[Thread], repos_meta: dict[str, dict[str, Any]] | None = None, *,
                 tokens: Sequence[str | Secret] | None = None, faults: Faults | None = None,
                 latency_ms: float = 0, workers: int = 0) -> None:
        self.state = FakeState(threads, repos_meta, tokens, faults, latency_ms)
        self.graph = _Graph(self.state)
        self.url = ""
        self._runner: web.AppRunner | None = None
        #: GraphQL worker processes (0: execute in the serving thread; the corpus may then change).
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_get("/__stats", self._stats)
        app.router.add_post("/api/graphql", self._graphql)
        app.router.add_post("/graphql", self._graphql)
        app.router.add_get("/api/v3/rate_limit", self._rest(self._rate_limit))
        app.router.add_get("/api/v3/repos/{owner}/{name}", self._rest(self._repo))
        app.router.add_get("/api/v3/repos/{owner}/{name}/issues", self._rest(self._issues))
        app.router.add_get("/api/v3/repos/{owner}/{name}/issues/{number:\\d+}", self._rest(self._issue))
        app.router.add_get("/api/v3/repos/{owner}/{name}/issues/{number:\\d+}/comments", self._rest(self._comments))
        app.router.add_get("/api/v3/repos/{owner}/{name}/pulls", self._rest(self._pulls))
        return app

    async def start(self, port: int = 0) -> str:
        if self.workers > 0 and self._pool is None:
            global _WORKER_GRAPH
            github_schema()
            _WORKER_GRAPH = self.graph  # inherited by the forked workers
            gc.collect()
            gc.freeze()  # the corpus and schema stay shared with the workers (no copy-on-write from the GC)
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_worker_init)
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(self._pool, _warm) for _ in range(self.workers)))
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        site = web.SockSite(self._runner, sock)
        await site.start()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return self.url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    # -------------------------------------------------------------- common

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.state.stats_doc())

    async def _preamble(self, request: web.Request) -> tuple[str | None, web.StreamResponse | None]:
        """Latency, auth and injected faults shared by REST and GraphQL."""
        if self.state.latency_s:
            await asyncio.sleep(self.state.latency_s)
        label = self.state.token_label(request.headers.get("Authorization"))
        if label is None:
            return None, web.json_response(
                {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}, status=401)
        kind = self.state.fault()
        if kind is None:
            return label, None
        self.state.count(label)
        if kind == "502":
            return label, web.Response(status=502, text="<html><body><h1>502 Bad Gateway</h1></body></html>",
                                       content_type="text/html")
        if kind == "secondary":
            headers = {"x-ratelimit-remaining": "4000"}
            if self.state.faults.retry_after_s is not None:
                headers["retry-after"] = str(self.state.faults.retry_after_s)
            return label, web.json_response(
                {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
                            "again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits"},
                status=self.state.faults.secondary_status, headers=headers)
        if kind == "reset":
            if request.transport is not None:
                request.transport.abort()
            return label, web.Response(status=500)
        # truncated: announce a longer body than we send, then drop the connection
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.content_length = 4096
        await resp.prepare(request)
        await resp.write(b'{"data": {"rateLimit": {"cost": 1, "rem')
        if request.transport is not None:
            request.transport.abort()
        return label, resp

    # -------------------------------------------------------------- GraphQL

    async def _graphql(self, request: web.Request) -> web.StreamResponse:
        st = self.state.stats
        who = self.state.token_label(request.headers.get("Authorization")) or "unknown"
        st.inflight[who] = st.inflight.get(who, 0) + 1
        st.max_inflight = max(st.max_inflight, sum(st.inflight.values()))
        st.max_inflight_per_token[who] = max(st.max_inflight_per_token.get(who, 0), st.inflight[who])
        try:
            return await self._graphql_request(request)
        finally:
            st.inflight[who] -= 1

    async def _graphql_request(self, request: web.Request) -> web.StreamResponse:
        label, early = await self._preamble(request)
        if early is not None:
            return early
        assert label is not None
        self.state.stats.graphql_requests += 1
        try:
            body = await request.json()
            query = body["query"]
            variables = body.get("variables") or {}
            if not isinstance(query, str) or not isinstance(variables, dict):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            self.state.count(label)
            return web.json_response({"message": "Problems parsing JSON"}, status=400)
        b = self.state.budget(label)
        if self._pool is not None:
            worked = await asyncio.get_running_loop().run_in_executor(self._pool, _work, query, variables)
            self.state.stats.graphql_cpu_s += worked.cpu_s
            if worked.rejected is not None:
                return self._rejected(label, b, worked.rejected)
            charged = self._charge(label, b, query, worked.points, worked.nodes)
            if isinstance(charged, web.StreamResponse):
                return charged
            return web.Response(text=worked.answer(charged), content_type="application/json",
                                headers=_rate_headers(b, b.limit - b.remaining, "graphql"))
        cpu0 = time.thread_time()
        try:
            priced = self._price(label, b, query, variables)
        finally:
            self.state.stats.graphql_cpu_s += time.thread_time() - cpu0
        if isinstance(priced, web.StreamResponse):
            return priced
        doc, rate = priced
        headers = _rate_headers(b, b.limit - b.remaining, "graphql")
        cpu0 = time.thread_time()
        try:
            text = _execute_text(self.graph, doc, variables, rate)
        finally:
            self.state.stats.graphql_cpu_s += time.thread_time() - cpu0
        return web.Response(text=text, content_type="application/json", headers=headers)

    def _price(self, label: str, b: _Budget, query: str,
               variables: dict[str, Any]) -> web.StreamResponse | tuple[DocumentNode, dict[str, Any]]:
        """Validate, cost and charge one GraphQL query: an error answer, or the document and its ``rateLimit``."""
        try:
            doc, cost = check_query(query, variables)
        except QueryRejected as exc:
            return self._rejected(label, b, str(exc))
        charged = self._charge(label, b, query, cost.points, cost.nodes)
        if isinstance(charged, web.StreamResponse):
            return charged
        return doc, charged

    def _rejected(self, label: str, b: _Budget, message: str) -> web.StreamResponse:
        self.state.count(label)
        self.state.stats.invalid_queries += 1
        return web.json_response({"errors": [{"message": message, "type": "INVALID_QUERY"}]},
                                 headers=_rate_headers(b, b.limit - b.remaining, "graphql"))

    def _charge(self, label: str, b: _Budget, query: str, points: int,
                nodes: int) -> web.StreamResponse | dict[str, Any]:
        """Charge a valid query (or answer 502 for a heavy one, RATE_LIMITED past the budget): its ``rateLimit``."""
        heavy = self.state.faults.heavy_502_nodes
        if heavy is not None and nodes > heavy:
            self.state.count(label)
            self.state.stats.faults["heavy_502"] = self.state.stats.faults.get("heavy_502", 0) + 1
            return web.Response(status=502, text="<html><body>502: query timed out</body></html>",
                                content_type="text/html")
        if b.remaining < points:
            self.state.count(label)
            self.state.stats.rate_limited += 1
            return web.json_response(
                {"errors": [{"type": "RATE_LIMITED",
                             "message": "API rate limit already exceeded for user ID 1."}]},
                headers=_rate_headers(b, b.limit - b.remaining, "graphql"))
        b.remaining -= points
        self.state.count(label, points)
        self.state.stats.queries.append(query)
        del self.state.stats.queries[:-50]
        return {"cost": points, "remaining": b.remaining, "limit": b.limit, "used": b.limit - b.remaining,
                "nodeCount": nodes, "resetAt": _iso(datetime.fromtimestamp(b.reset_at, UTC))}

    # -------------------------------------------------------------- REST

    def _rest(self, handler: Any) -> Any:
        async def wrapped(request: web.Request) -> web.StreamResponse:
            label, early = await self._preamble(request)
            if early is not None:
                return early
            assert label is not None
            self.state.stats.rest_requests += 1
            b = self.state.budget(label, rest=True)
            self.state.count(label)
            if b.remaining <= 0:
                return web.json_response(
                    {"message": "API rate limit exceeded for user ID 1."}, status=403,
                    headers=_rate_headers(b, b.limit, "core"))
            b.remaining -= 1
            resp = await handler(request)
            resp.headers.update(_rate_headers(b, b.limit - b.remaining, "core"))
            return resp
        return wrapped

    def _repo_key(self, request: web.Request) -> str | None:
        return self.state.repo_name(request.match_info["owner"], request.match_info["name"])

    @staticmethod
    def _not_found() -> web.Response:
        return web.json_response({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"},
                                 status=404)

    async def _rate_limit(self, request: web.Request) -> web.Response:
        label = self.state.token_label(request.headers.get("Authorization")) or "anonymous"
        core, gql_b = self.state.budget(label, rest=True), self.state.budget(label)

        def doc(b: _Budget) -> dict[str, int]:
            return {"limit": b.limit, "remaining": b.remaining, "reset": int(b.reset_at),
                    "used": b.limit - b.remaining}

        return web.json_response({"resources": {"core": doc(core), "graphql": doc(gql_b)}, "rate": doc(core)})

    def _repo_doc(self, request: web.Request, key: str) -> dict[str, Any]:
        m = self.state.meta[key]
        owner, name = m["name"].split("/")
        api = f"{self._base(request)}/api/v3/repos/{m['name']}"
        return {
            "id": _rest_id(key), "node_id": _node_id("R", key), "name": name, "full_name": m["name"],
            "owner": {"login": owner, "id": _rest_id(owner), "type": "User"}, "private": False,
            "html_url": f"https://github.com/{m['name']}", "url": api,
            "stargazers_count": int(m.get("stars", 0)), "archived": bool(m.get("archived", False)),
            "has_issues": bool(m.get("has_issues", True)), "has_discussions": bool(m.get("has_discussions", True)),
            "open_issues_count": 0, "default_branch": "main",
        }

    @staticmethod
    def _base(request: web.Request) -> str:
        return f"{request.scheme}://{request.host}"

    async def _repo(self, request: web.Request) -> web.Response:
        key = self._repo_key(request)
        if key is None:
            return self._not_found()
        return web.json_response(self._repo_doc(request, key))

    def _issue_doc(self, request: web.Request, t: Thread) -> dict[str, Any]:
        api = f"{self._base(request)}/api/v3/repos/{t.repo}/issues/{t.number}"
        doc = {
            "id": _rest_id(t.id), "node_id": _node_id("PR" if t.kind == "pull_request" else "I", t.id),
            "number": t.number, "title": t.title, "body": t.body or None,
            "user": {"login": t.author, "id": _rest_id(t.author), "type": "User"} if t.author else None,
            "labels": [{"name": n, "id": _rest_id(n)} for n in t.labels], "state": t.state,
            "state_reason": t.state_reason if t.kind == "issue" else None, "locked": False,
            "comments": len(t.comments), "created_at": _iso(t.created_at), "updated_at": _iso(t.updated_at),
            "closed_at": _iso(t.closed_at), "author_association": _assoc(t.author_association),
            "reactions": {"total_count": t.reactions, "url": api + "/reactions"},
            "html_url": t.url or f"https://github.com/{t.repo}/issues/{t.number}", "url": api,
            "comments_url": api + "/comments", "repository_url": f"{self._base(request)}/api/v3/repos/{t.repo}",
        }
        if t.kind == "pull_request":
            doc["pull_request"] = {"url": f"{self._base(request)}/api/v3/repos/{t.repo}/pulls/{t.number}",
                                   "html_url": t.url, "merged_at": None}
        return doc

    @staticmethod
    def _paging(request: web.Request, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        try:
            per_page = max(1, min(100, int(request.query.get("per_page", "30"))))
            page = max(1, int(request.query.get("page", "1")))
        except ValueError:
            per_page, page = 30, 1
        pages = max(1, math.ceil(len(items) / per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []
        url = request.url

        def link(p: int, rel: str) -> str:
            return f'<{url.update_query(page=str(p), per_page=str(per_page))}>; rel="{rel}"'

        if page < pages:
            links += [link(page + 1, "next"), link(pages, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return chunk, ({"Link": ", ".join(links)} if links else {})

    async def _issues(self, request: web.Request) -> web.Response:
        key = self._repo_key(request)
        if key is None:
            return self._not_found()
        m = self.state.meta[key]
        items = self.state.repo_threads(key, "pull_request")
        if m.get("has_issues", True):
            items += self.state.repo_threads(key, "issue")
        else:
            return web.json_response({"message": "Issues are disabled for this repo"}, status=410)
        q = request.query
        state = q.get("state", "open")
        if state != "all":
            items = [t for t in items if t.state == state]
        if q.get("since"):
            try:
                cut = datetime.fromisoformat(q["since"].replace("Z", "+00:00"))
            except ValueError:
                return web.json_response({"message": "Validation Failed"}, status=422)
            if cut.tzinfo is None:
                cut = cut.replace(tzinfo=UTC)
            items = [t for t in items if t.updated_at >= cut]
        fld = {"updated": "updated_at", "comments": "created_at"}.get(q.get("sort", "created"), "created_at")
        items.sort(key=lambda t: (getattr(t, fld), t.number), reverse=q.get("direction", "desc") == "desc")
        chunk, headers = self._paging(request, items)
        return web.json_response([self._issue_doc(request, t) for t in chunk], headers=headers)

    def _find(self, key: str, number: int) -> Thread | None:
        return self.state.get(key, "issue", number) or self.state.get(key, "pull_request", number)

    async def _issue(self, request: web.Request) -> web.Response:
        key = self._repo_key(request)
        t = self._find(key, int(request.match_info["number"])) if key else None
        if t is None:
            return self._not_found()
        return web.json_response(self._issue_doc(request, t))

    async def _comments(self, request: web.Request) -> web.Response:
        key = self._repo_key(request)
        t = self._find(key, int(request.match_info["number"])) if key else None
        if t is None:
            return self._not_found()
        base = self._base(request)
        docs = [{
            "id": _rest_id(c.id), "node_id": c.id, "body": c.body or None,
            "user": {"login": c.author, "id": _rest_id(c.author), "type": "User"} if c.author else None,
            "created_at": _iso(c.created_at), "updated_at": _iso(c.created_at),
            "author_association": _assoc(c.author_association),
            "reactions": {"total_count": c.reactions},
            "html_url": f"{t.url}#issuecomment-{_rest_id(c.id)}",
            "url": f"{base}/api/v3/repos/{t.repo}/issues/comments/{_rest_id(c.id)}",
        } for c in t.comments]
        chunk, headers = self._paging(request, docs)
        return web.json_response(chunk, headers=headers)

    async def _pulls(self, request: web.Request) -> web.Response:
        key = self._repo_key(request)
        if key is None:
            return self._not_found()
        items = sorted(self.state.repo_threads(key, "pull_request"), key=lambda t: t.number, reverse=True)
        chunk, headers = self._paging(request, items)
        docs = [{"number": t.number, "title": t.title, "state": t.state, "node_id": _node_id("PR", t.id),
                 "url": f"{self._base(request)}/api/v3/repos/{t.repo}/pulls/{t.number}"} for t in chunk]
        return web.json_response(docs, headers=headers)


def _execute_text(graph: _Graph, doc: DocumentNode, variables: dict[str, Any], rate: dict[str, Any]) -> str:
    """Execute a validated document over the corpus; the JSON answer.

    Executed by :func:`miner.fake_executor.execute_fast` (graphql-core's answer, computed
    faster); resolvers get ``info=None``.
    """
    return json.dumps(_execute(graph, doc, variables, rate))


def _execute(graph: _Graph, doc: DocumentNode, variables: dict[str, Any], rate: dict[str, Any]) -> dict[str, Any]:
    root = {"repository": graph.repository, "node": graph.node, "rateLimit": lambda info, **a: rate}
    result = execute_fast(github_schema(), doc, root_value=root, variable_values=variables)
    out: dict[str, Any] = {"data": result.data}
    if result.errors:
        out["errors"] = [_gh_error(e) for e in result.errors]
    return out


#: The corpus resolvers of the worker processes (set in the server before it forks them).
_WORKER_GRAPH: _Graph | None = None


def _worker_init() -> None:
    """A worker's answers are trees of fresh dicts freed by reference counting: collect cycles rarely."""
    gc.set_threshold(100_000, 50, 100)


def _warm() -> None:
    """Started in each worker at server start, so no client query waits for a fork."""


@dataclass(frozen=True)
class _Worked:
    """A worker's answer to one query: ``rejected`` (invalid) or its cost and answer text.

    ``rates``: for each ``rateLimit`` object in ``text`` (executed with placeholder budget
    figures), its exact JSON text and its response keys mapped to field names, so the
    server can put in the figures of the moment it charges the query."""

    rejected: str | None = None
    points: int = 0
    nodes: int = 0
    text: str = ""
    rates: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    cpu_s: float = 0.0

    def answer(self, rate: dict[str, Any]) -> str:
        out = self.text
        for old, keys in self.rates:
            doc = json.loads(old)
            for key, name in keys:
                if name in rate:
                    doc[key] = rate[name]
            out = out.replace(old, json.dumps(doc), 1)
        return out


def _rate_fields(doc: DocumentNode) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """Response keys of the root ``rateLimit`` fields and, for each, its (response key, field name) pairs."""
    frags = {d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}
    out: list[tuple[str, tuple[tuple[str, str], ...]]] = []

    def leaves(sel: SelectionSetNode | None, acc: list[tuple[str, str]], seen: frozenset[str]) -> None:
        for s in sel.selections if sel else ():
            if isinstance(s, FieldNode):
                acc.append(((s.alias or s.name).value, s.name.value))
            elif isinstance(s, InlineFragmentNode):
                leaves(s.selection_set, acc, seen)
            elif isinstance(s, FragmentSpreadNode) and s.name.value in frags and s.name.value not in seen:
                leaves(frags[s.name.value].selection_set, acc, seen | {s.name.value})

    def walk(sel: SelectionSetNode | None, seen: frozenset[str]) -> None:
        for s in sel.selections if sel else ():
            if isinstance(s, FieldNode) and s.name.value == "rateLimit":
                acc: list[tuple[str, str]] = []
                leaves(s.selection_set, acc, frozenset())
                out.append(((s.alias or s.name).value, tuple(acc)))
            elif isinstance(s, InlineFragmentNode):
                walk(s.selection_set, seen)
            elif isinstance(s, FragmentSpreadNode) and s.name.value in frags and s.name.value not in seen:
                walk(frags[s.name.value].selection_set, seen | {s.name.value})

    for d in doc.definitions:
        if isinstance(d, OperationDefinitionNode):
            walk(d.selection_set, frozenset())
    return out


def _work(query: str, variables: dict[str, Any]) -> _Worked:
    """In a worker process: validate, cost and execute ``query`` (budget figures are placeholders)."""
    cpu0 = time.thread_time()
    try:
        doc, cost = check_query(query, variables)
    except QueryRejected as exc:
        return _Worked(rejected=str(exc), cpu_s=time.thread_time() - cpu0)
    assert _WORKER_GRAPH is not None
    rate = {"cost": cost.points, "remaining": 0, "limit": 0, "used": 0, "nodeCount": cost.nodes,
            "resetAt": "1970-01-01T00:00:00Z"}
    out = _execute(_WORKER_GRAPH, doc, variables, rate)
    data = out["data"]
    rates = []
    for key, keys in _rate_fields(doc) if isinstance(data, dict) and "rateLimit" in query else ():
        if isinstance(data.get(key), dict):
            rates.append((json.dumps(data[key]), keys))
    return _Worked(points=cost.points, nodes=cost.nodes, text=json.dumps(out), rates=tuple(rates),
                   cpu_s=time.thread_time() - cpu0)


def _gh_error(e: GraphQLError) -> dict[str, Any]:
    doc: dict[str, Any] = {"message": e.message}
    if e.path:
        doc["path"] = list(e.path)
    if e.locations:
        doc["locations"] = [{"line": loc.line, "column": loc.column} for loc in e.locations]
    orig = e.original_error
    if isinstance(orig, _GhError):
        doc["type"] = orig.gh_type
    return doc


@asynccontextmanager
async def fake_github(threads: Sequence[Thread], repos_meta: dict[str, dict[str, Any]] | None = None, *,
                      tokens: Sequence[str | Secret] | None = None, faults: Faults | None = None,
                      latency_ms: float = 0) -> AsyncIterator[FakeGitHub]:
    """Async variant: run the fake on the current event loop; yields the server (``.url``, ``.state``)."""
    srv = FakeGitHub(threads, repos_meta, tokens=tokens, faults=faults, latency_ms=latency_ms)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.close()


class FakeGitHubThread:
    """The fake on its own event loop in a daemon thread (for synchronous callers)."""

    def __init__(self, threads: Sequence[Thread], repos_meta: dict[str, dict[str, Any]] | None = None, *,
                 tokens: Sequence[str | Secret] | None = None, faults: Faults | None = None,
                 latency_ms: float = 0) -> None:
        self.server = FakeGitHub(threads, repos_meta, tokens=tokens, faults=faults, latency_ms=latency_ms)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-github", daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def state(self) -> FakeState:
        return self.server.state

    def __enter__(self) -> FakeGitHubThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.server.close(), self._loop).result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()


@contextmanager
def serve_fake_github(threads: Sequence[Thread], repos_meta: dict[str, dict[str, Any]] | None = None, *,
                      tokens: Sequence[str | Secret] | None = None, faults: Faults | None = None,
                      latency_ms: float = 0) -> Iterator[str]:
    """Serve ``threads`` on 127.0.0.1 (random free port) in a background thread; yields the base URL.

    ``repos_meta`` maps ``owner/name`` to ``stars``, ``archived``, ``has_issues``,
    ``has_discussions``, ``renamed_from`` (list of old names), ``missing`` (answer 404).
    ``tokens``: accepted tokens (None: any). Pass the URL as ``--api-url``.
    """
    with FakeGitHubThread(threads, repos_meta, tokens=tokens, faults=faults, latency_ms=latency_ms) as srv:
        yield srv.url


# ---------------------------------------------------------------------- python -m miner.fake_github


def _load_corpus(path: Path) -> list[Thread]:
    from reprodiag.schema import SchemaError, parse_thread

    threads = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"error: cannot read corpus {path}: {exc}") from None
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            threads.append(parse_thread(json.loads(line)))
        except (json.JSONDecodeError, SchemaError) as exc:
            raise SystemExit(f"error: {path} line {no}: {' '.join(str(exc).split())[:200]}") from None
    return threads


def _load_json(path: Path | None, what: str) -> Any:
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SystemExit(f"error: cannot read {what} {path}: {' '.join(str(exc).split())[:200]}") from None


async def _serve_forever(srv: FakeGitHub, port: int) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    url = await srv.start(port)
    print(url, flush=True)

    def watch_stdin() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(stop.set)

    if not sys.stdin.isatty():
        threading.Thread(target=watch_stdin, daemon=True).start()
    await stop.wait()
    await srv.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a corpus file on 127.0.0.1 until SIGTERM/SIGINT/stdin EOF; the URL is stdout's first line."""
    ap = argparse.ArgumentParser(prog="python -m miner.fake_github",
                                 description="Loopback fake GitHub (GraphQL + REST) serving a thread corpus.")
    ap.add_argument("--corpus", type=Path, required=True, help="threads, one JSON object per line")
    ap.add_argument("--meta", type=Path, help="JSON object: owner/name -> {stars, has_issues, renamed_from, ...}")
    ap.add_argument("--tokens-file", type=Path, help="accepted tokens, one per line (default: any token)")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="delay before every answer")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--workers", type=int, default=0,
                    help="GraphQL worker processes (default 0: execute in the serving process)")
    args = ap.parse_args(argv)
    if args.workers < 0:
        raise SystemExit("error: --workers must be 0 or more")
    threads = _load_corpus(args.corpus)
    meta = _load_json(args.meta, "--meta")
    if meta is not None and not isinstance(meta, dict):
        raise SystemExit("error: --meta must hold a JSON object mapping owner/name to settings")
    tokens = None
    if args.tokens_file is not None:
        try:
            tokens = [ln.strip() for ln in args.tokens_file.read_text(encoding="utf-8").splitlines() if ln.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise SystemExit(f"error: cannot read --tokens-file: {exc.__class__.__name__}") from None
    srv = FakeGitHub(threads, meta, tokens=tokens, latency_ms=args.latency_ms, workers=args.workers)
    github_schema()  # built before the URL is printed, so no client's first query pays for it
    asyncio.run(_serve_forever(srv, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
