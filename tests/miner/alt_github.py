"""A second, independent GitHub mock (GraphQL + REST on 127.0.0.1) with switchable personalities.

Written apart from :mod:`miner.fake_github` (own resolvers, own cursors, own paging rules) so the
miner is checked against choices that real GitHub or another reasonable mock may make:

* opaque offset cursors (``base64("cursor:v2:" + offset)``), ``hasPreviousPage``/``hasNextPage``
  from the slice's position, GitHub's pagination errors (no ``first``/``last`` on a connection whose
  items are selected, more than 100, both at once), NOT_FOUND errors with GitHub's message/type/path,
  Bot authors whose GraphQL ``login`` lacks REST's ``[bot]`` suffix, ghost users (``author: null``);
* REST with ``Link`` headers, ``per_page`` capped (100, or less), 301 redirects for renamed
  repositories and 410 for disabled issues.

Personalities (constructor flags of :class:`AltGitHub`): ``order_ignored`` (``orderBy`` ignored: lists
in number order, ascending or with ``default_desc`` descending), ``since_ignored``, ``tail`` ("ok" | "ignored": ``last`` read as ``first`` |
"field_error": an error on that field | "rejected": the whole query refused), ``null_totals``
(``totalCount`` null everywhere; the schema is relaxed to allow it), ``rate_headers`` (off: no
``x-ratelimit-*`` headers), ``disabled_error`` (a disabled feature's connection is an error instead of
an empty list), ``rest_page_cap`` (REST ``per_page`` cap), ``rest_no_state_reason`` (REST issues
without ``state_reason``, as on old Enterprise servers), ``p_502``/``p_secondary``/``latency_ms`` (seeded
GraphQL faults, never charged, and a delay per answer).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    SelectionSetNode,
    VariableNode,
    build_schema,
    execute,
    parse,
    validate,
)

from miner.github_schema import github_schema
from reprodiag.schema import Comment, Thread


class GhError(Exception):
    """A GitHub-typed GraphQL error (``type`` is GitHub's top-level error key)."""

    def __init__(self, gh_type: str, message: str) -> None:
        super().__init__(message)
        self.gh_type = gh_type


@lru_cache(maxsize=1)
def _relaxed_schema() -> GraphQLSchema:
    """GitHub's schema with every ``totalCount: Int!`` made nullable (the ``null_totals`` personality)."""
    from graphql import print_schema

    sdl = print_schema(github_schema())
    schema = build_schema(sdl.replace("totalCount: Int!", "totalCount: Int"), assume_valid_sdl=True)
    schema._validation_errors = []
    return schema


def _iso(d: datetime | None) -> str | None:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ") if d else None


def encode_cursor(offset: int) -> str:
    return base64.b64encode(f"cursor:v2:{offset}".encode()).decode()


def decode_cursor(cur: str) -> int:
    try:
        raw = base64.b64decode(cur.encode(), validate=True).decode()
        if not raw.startswith("cursor:v2:"):
            raise ValueError(raw)
        return int(raw[len("cursor:v2:"):])
    except ValueError:
        raise GhError("INVALID_CURSOR_ARGUMENTS", f"`{cur}` does not appear to be a valid cursor.") from None


def _items_selected(info: Any) -> bool:
    """The connection field being resolved selects ``nodes`` or ``edges`` (through fragments too)."""

    def walk(sel: SelectionSetNode | None) -> bool:
        for s in (sel.selections if sel else ()):
            if isinstance(s, FieldNode) and s.name.value in ("nodes", "edges"):
                return True
            if isinstance(s, InlineFragmentNode) and walk(s.selection_set):
                return True
            if isinstance(s, FragmentSpreadNode) and walk(info.fragments[s.name.value].selection_set):
                return True
        return False

    return any(walk(f.selection_set) for f in info.field_nodes)


@dataclass
class Personality:
    order_ignored: bool = False
    #: Lists without (or ignoring) ``orderBy`` come newest-created first (GitHub REST's default), else oldest.
    default_desc: bool = False
    since_ignored: bool = False
    tail: str = "ok"
    null_totals: bool = False
    rate_headers: bool = True
    disabled_error: bool = False
    rest_page_cap: int = 100
    rest_no_state_reason: bool = False
    #: api.github.com's layout: ``/graphql`` and ``/repos/...`` at the root (no ``/api/v3``, ``/api/graphql``).
    root_layout: bool = False
    #: ``after`` ignored (a broken server: every page is the first one again, with the same cursors).
    after_ignored: bool = False
    #: Every request refused with 403 "Resource not accessible by integration" (not a rate limit).
    forbidden: bool = False
    #: ``node(id:)``: "ok", "null" (not implemented: always null, no error), "not_found" (always NOT_FOUND),
    #: "rejected" (a query using it is refused as a whole).
    node: str = "ok"
    #: ``issue``/``pullRequest``/``discussion(number:)``: "ok", "null" (not implemented), "not_found".
    single: str = "ok"
    #: GraphQL faults drawn per request from ``fault_seed``: HTTP 502 (an HTML page) and secondary rate limits
    #: (403, ``retry-after: 0``), neither charged; ``latency_ms`` before every GraphQL answer.
    p_502: float = 0.0
    p_secondary: float = 0.0
    fault_seed: int = 0
    latency_ms: float = 0.0


@dataclass
class AltStats:
    graphql: int = 0
    rest: int = 0
    #: REST GETs of a single issue or comment (PyGithub's lazy completion; the miner should need none).
    completions: int = 0
    points: int = 0
    #: Requests answered with an injected fault (502 or secondary limit).
    faults: int = 0
    queries: list[str] = field(default_factory=list)
    rest_paths: list[str] = field(default_factory=list)


@dataclass
class AltRepo:
    """One repository as the mock serves it; ``old_names`` resolve to it (a rename)."""

    name: str
    db_id: int
    has_issues: bool = True
    has_discussions: bool = True
    old_names: list[str] = field(default_factory=list)
    threads: dict[tuple[str, int], Thread] = field(default_factory=dict)


def _is_bot(login: str | None) -> bool:
    return bool(login) and login.endswith("[bot]")  # type: ignore[union-attr]


def _gql_actor(login: str | None) -> dict[str, Any] | None:
    """GitHub's GraphQL ``Bot.login`` has no ``[bot]`` suffix (REST's ``user.login`` has it)."""
    if login is None:
        return None
    if _is_bot(login):
        return {"__typename": "Bot", "login": login[: -len("[bot]")]}
    return {"__typename": "User", "login": login}


def _rest_user(login: str | None) -> dict[str, Any] | None:
    if login is None:
        return None
    return {"login": login, "id": abs(hash(login)) % 10**8, "type": "Bot" if _is_bot(login) else "User"}


class AltState:
    """The data and the GraphQL resolvers (dict/callable values resolved by graphql-core's default resolver)."""

    def __init__(self, repos: Sequence[AltRepo], personality: Personality, tokens: Sequence[str]) -> None:
        self.p = personality
        self.tokens = list(tokens)
        self.repos: dict[str, AltRepo] = {}
        self.by_id: dict[int, AltRepo] = {}
        for r in repos:
            self.add_repo(r)
        self.stats = AltStats()
        self.lock = threading.Lock()
        self.remaining = {t: 5000 for t in self.tokens}
        self.rng = random.Random(personality.fault_seed)
        #: Called with the 1-based number of each GraphQL query before it runs (to change data mid-run).
        self.before_query: Callable[[int], None] | None = None

    def add_repo(self, r: AltRepo) -> None:
        self.by_id[r.db_id] = r
        for n in [r.name, *r.old_names]:
            self.repos[n.lower()] = r

    def put_thread(self, t: Thread) -> None:
        """Add or replace a thread (its repository must exist under ``t.repo``)."""
        self.repos[t.repo.lower()].threads[(t.kind, t.number)] = t

    def find(self, full: str) -> AltRepo | None:
        return self.repos.get(full.lower())

    # ------------------------------------------------------------------ GraphQL resolvers

    def _total(self, n: int) -> int | None:
        return None if self.p.null_totals else n

    def _connection(self, info: Any, items: list[Any], to_node: Callable[[Any], dict[str, Any]],
                    args: dict[str, Any], name: str) -> dict[str, Any]:
        first, last = args.get("first"), args.get("last")
        after, before = args.get("after"), args.get("before")
        if first is not None and last is not None:
            raise GhError("ARGUMENT_ERROR",
                          f"Passing both `first` and `last` to paginate the `{name}` connection is not supported.")
        if (last is not None or before is not None) and self.p.tail == "field_error":
            raise GhError("ARGUMENT_ERROR", f"Backward pagination of the `{name}` connection is not supported.")
        if self.p.tail == "ignored" and last is not None:
            first, last, before = last, None, None
        for n, word in ((first, "first"), (last, "last")):
            if n is not None and not 0 <= n <= 100:
                raise GhError("EXCESSIVE_PAGINATION", f"Requesting {n} records on the `{name}` connection "
                              f"exceeds the `{word}` limit of 100 records.")
        if first is None and last is None and _items_selected(info):
            raise GhError("MISSING_PAGINATION_BOUNDARIES", f"You must provide a `first` or `last` value to "
                          f"properly paginate the `{name}` connection.")
        lo, hi = 0, len(items)
        if after is not None and not self.p.after_ignored:
            lo = max(lo, decode_cursor(after) + 1)
        if before is not None:
            hi = min(hi, decode_cursor(before))
        hi = max(lo, hi)
        if first is not None:
            hi = min(hi, lo + first)
        elif last is not None:
            lo = max(lo, hi - last)
        window = list(range(lo, hi))
        nodes = [to_node(items[i]) for i in window]
        return {
            "totalCount": self._total(len(items)),
            "nodes": nodes,
            "edges": [{"cursor": encode_cursor(i), "node": n} for i, n in zip(window, nodes, strict=True)],
            "pageInfo": {"hasNextPage": hi < len(items), "hasPreviousPage": lo > 0,
                         "startCursor": encode_cursor(lo) if window else None,
                         "endCursor": encode_cursor(hi - 1) if window else None},
        }

    def _reactions(self, n: int) -> Callable[..., dict[str, Any]]:
        return lambda info, **a: {"totalCount": self._total(n), "nodes": []}

    def _comment(self, c: Comment, t: Thread) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": c.id, "body": c.body, "createdAt": _iso(c.created_at), "authorAssociation": c.author_association,
            "author": _gql_actor(c.author), "reactions": self._reactions(c.reactions),
        }
        if t.kind == "discussion":
            d["__typename"] = "DiscussionComment"
            d["isAnswer"] = c.is_answer
            d["replies"] = lambda info, **a: self._connection(
                info, c.replies, lambda r: self._comment(r, t), a, "replies")
        else:
            d["__typename"] = "IssueComment"
        return d

    def _thread(self, t: Thread) -> dict[str, Any]:
        d: dict[str, Any] = {
            "number": t.number, "url": t.url, "title": t.title, "body": t.body, "createdAt": _iso(t.created_at),
            "updatedAt": _iso(t.updated_at), "closedAt": _iso(t.closed_at),
            "authorAssociation": t.author_association, "author": _gql_actor(t.author),
            "reactions": self._reactions(t.reactions),
            "labels": lambda info, **a: self._connection(info, t.labels, lambda s: {"name": s}, a, "labels"),
            "comments": lambda info, **a: self._connection(info, t.comments, lambda c: self._comment(c, t), a,
                                                           "comments"),
        }
        if t.kind == "discussion":
            d.update(__typename="Discussion", closed=t.state == "closed",
                     stateReason=t.state_reason.upper() if t.state_reason else None,
                     category={"name": t.category or "General"},
                     answer={"id": t.answer_id} if t.answer_id else None)
        elif t.kind == "pull_request":
            d.update(__typename="PullRequest", state="CLOSED" if t.state == "closed" else "OPEN")
        else:
            d.update(__typename="Issue", state=t.state.upper(),
                     stateReason=t.state_reason.upper() if t.state_reason else None)
        return d

    def _ordered(self, threads: list[Thread], kind: str, args: dict[str, Any]) -> list[Thread]:
        order = args.get("orderBy")
        out = sorted(threads, key=lambda t: t.number, reverse=self.p.default_desc)
        if order and not self.p.order_ignored:
            key = {"UPDATED_AT": lambda t: (t.updated_at, t.number),
                   "CREATED_AT": lambda t: (t.created_at, t.number),
                   "COMMENTS": lambda t: (len(t.comments), t.number)}[order["field"]]
            out = sorted(out, key=key, reverse=order.get("direction") == "DESC")
        since = (args.get("filterBy") or {}).get("since")
        if since and not self.p.since_ignored:
            cut = datetime.fromisoformat(since.replace("Z", "+00:00"))
            out = [t for t in out if t.updated_at >= cut]
        return out

    def repository(self, info: Any, owner: str, name: str, **_: Any) -> dict[str, Any]:
        repo = self.find(f"{owner}/{name}")
        if repo is None:
            raise GhError("NOT_FOUND", f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        enabled = {"issue": repo.has_issues, "pull_request": True, "discussion": repo.has_discussions}
        lists = {"issue": "issues", "pull_request": "pullRequests", "discussion": "discussions"}
        types = {"issue": "an Issue", "pull_request": "a PullRequest", "discussion": "a Discussion"}
        d: dict[str, Any] = {"nameWithOwner": repo.name, "hasIssuesEnabled": repo.has_issues,
                             "hasDiscussionsEnabled": repo.has_discussions, "stargazerCount": 42,
                             "isArchived": False}

        def listing(kind: str) -> Callable[..., dict[str, Any]]:
            def resolve(info: Any, **a: Any) -> dict[str, Any]:
                if not enabled[kind]:
                    if self.p.disabled_error:
                        raise GhError("FORBIDDEN", f"{lists[kind].capitalize()} are disabled for this repository.")
                    return self._connection(info, [], self._thread, a, lists[kind])
                threads = [t for (k, _n), t in repo.threads.items() if k == kind]
                return self._connection(info, self._ordered(threads, kind, a), self._thread, a, lists[kind])
            return resolve

        def single(kind: str) -> Callable[..., dict[str, Any] | None]:
            def resolve(info: Any, number: int, **_: Any) -> dict[str, Any] | None:
                if self.p.single == "null":
                    return None
                t = repo.threads.get((kind, number)) if enabled[kind] and self.p.single == "ok" else None
                if t is None:
                    raise GhError("NOT_FOUND", f"Could not resolve to {types[kind]} with the number of {number}.")
                return self._thread(t)
            return resolve

        for kind in lists:
            d[lists[kind]] = listing(kind)
        d["issue"], d["pullRequest"], d["discussion"] = single("issue"), single("pull_request"), single("discussion")
        return d

    def node(self, info: Any, id: str, **_: Any) -> dict[str, Any] | None:  # noqa: A002 - GraphQL name
        if self.p.node == "null":
            return None
        if self.p.node == "not_found":
            raise GhError("NOT_FOUND", f"Could not resolve to a node with the global id of '{id}'")
        for repo in list(self.by_id.values()):
            for t in repo.threads.values():
                for c in t.comments:
                    if c.id == id:
                        return self._comment(c, t)
        raise GhError("NOT_FOUND", f"Could not resolve to a node with the global id of '{id}'")


def _cost(doc: Any, fragments: dict[str, Any]) -> int:
    """Requests GitHub's formula counts (one per parent node of every paginated connection), as points."""
    total = 0

    def arg(f: FieldNode, name: str) -> int | None:
        for a in f.arguments or ():
            if a.name.value == name and isinstance(a.value, IntValueNode):
                return int(a.value.value)
            if a.name.value == name and isinstance(a.value, VariableNode):
                return 100
        return None

    def walk(sel: SelectionSetNode | None, mult: int) -> None:
        nonlocal total
        for s in (sel.selections if sel else ()):
            if isinstance(s, FieldNode):
                n = arg(s, "first") or arg(s, "last")
                if n:
                    total += mult * math.ceil(n / 100)
                walk(s.selection_set, mult * n if n else mult)
            elif isinstance(s, InlineFragmentNode):
                walk(s.selection_set, mult)
            elif isinstance(s, FragmentSpreadNode):
                walk(fragments[s.name.value].selection_set, mult)

    for d in doc.definitions:
        if d.kind == "operation_definition":
            walk(d.selection_set, 1)
    return max(1, math.floor(total / 100 + 0.5))


def _gh_error(e: GraphQLError) -> dict[str, Any]:
    out: dict[str, Any] = {"message": e.message}
    orig = e.original_error
    if isinstance(orig, GhError):
        out["type"] = orig.gh_type
    if e.path is not None:
        out["path"] = list(e.path)
    if e.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in e.locations]
    return out


class AltGitHub:
    """The aiohttp application; GraphQL at ``/api/graphql`` and ``/graphql``, REST under ``/api/v3``."""

    def __init__(self, repos: Sequence[AltRepo], *, tokens: Sequence[str] = ("alt-token-1",),
                 personality: Personality | None = None) -> None:
        self.state = AltState(repos, personality or Personality(), tokens)
        self.p = self.state.p
        self.schema = _relaxed_schema() if self.p.null_totals else github_schema()
        self.rest = "" if self.p.root_layout else "/api/v3"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/graphql" if self.p.root_layout else "/api/graphql", self._graphql)
        for prefix in (self.rest + "/repos/{owner}/{name}", self.rest + "/repositories/{rid:\\d+}"):
            app.router.add_get(prefix, self._repo)
            app.router.add_get(prefix + "/issues", self._issues)
            app.router.add_get(prefix + "/issues/{number:\\d+}", self._issue)
            app.router.add_get(prefix + "/issues/{number:\\d+}/comments", self._comments)
        app.router.add_get(self.rest + "/repos/{owner}/{name}/issues/comments/{cid}", self._completion)
        return app

    # ------------------------------------------------------------------ common

    def _forbidden(self) -> web.Response | None:
        if not self.p.forbidden:
            return None
        return web.json_response({"message": "Resource not accessible by integration",
                                  "documentation_url": "https://docs.github.com/rest"}, status=403)

    def _token(self, request: web.Request) -> str | None:
        auth = request.headers.get("Authorization", "")
        m = re.match(r"(?i)(?:bearer|token)\s+(\S+)$", auth)
        return m.group(1) if m and m.group(1) in self.state.tokens else None

    def _rate(self, tok: str, cost: int) -> dict[str, str]:
        with self.state.lock:
            self.state.remaining[tok] = max(0, self.state.remaining[tok] - cost)
            left = self.state.remaining[tok]
        if not self.p.rate_headers:
            return {}
        return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": str(left),
                "x-ratelimit-reset": str(int(time.time()) + 3600), "x-ratelimit-used": str(5000 - left)}

    @staticmethod
    def _unauthorized() -> web.Response:
        return web.json_response({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
                                 status=401)

    # ------------------------------------------------------------------ GraphQL

    async def _graphql(self, request: web.Request) -> web.Response:
        tok = self._token(request)
        if tok is None:
            return self._unauthorized()
        if self.p.latency_ms:
            await asyncio.sleep(self.p.latency_ms / 1000)
        with self.state.lock:
            draw = self.state.rng.random()
        if draw < self.p.p_502:
            self.state.stats.faults += 1
            return web.Response(status=502, text="<html><body><h1>502 Bad Gateway</h1></body></html>",
                                content_type="text/html")
        if draw < self.p.p_502 + self.p.p_secondary:
            self.state.stats.faults += 1
            return web.json_response({"message": "You have exceeded a secondary rate limit. Please wait a few "
                                                 "minutes before you try again.",
                                      "documentation_url": "https://docs.github.com/graphql/overview/rate-limits"},
                                     status=403, headers={"retry-after": "0"})
        if self._forbidden() is not None:
            return self._forbidden()  # type: ignore[return-value]
        body = await request.json()
        text = body.get("query") or ""
        with self.state.lock:
            self.state.stats.graphql += 1
            self.state.stats.queries.append(text)
            n = self.state.stats.graphql
        if self.state.before_query is not None:
            self.state.before_query(n)
        try:
            doc = parse(text)
        except GraphQLError as e:
            return web.json_response({"errors": [{"message": e.message}]})
        errs = validate(self.schema, doc)
        if errs:
            return web.json_response({"errors": [_gh_error(e) for e in errs]})
        if self.p.node == "rejected" and re.search(r"\bnode\s*\(", text):
            return web.json_response({"errors": [{"message": "Field 'node' doesn't exist on type 'Query'",
                                                  "type": "undefinedField"}]})
        if self.p.tail == "rejected" and re.search(r"\blast\s*:", text):
            return web.json_response({"errors": [{"message": "Backward pagination (`last`) is not supported.",
                                                  "type": "ARGUMENT_ERROR"}]})
        fragments = {d.name.value: d for d in doc.definitions if d.kind == "fragment_definition"}
        cost = _cost(doc, fragments)
        headers = self._rate(tok, cost)
        with self.state.lock:
            self.state.stats.points += cost
            remaining = self.state.remaining[tok]
        root = {"repository": self.state.repository, "node": self.state.node,
                "rateLimit": {"cost": cost, "remaining": remaining, "limit": 5000, "used": 5000 - remaining,
                              "nodeCount": 0, "resetAt": _iso(datetime.fromtimestamp(time.time() + 3600))}}
        res = execute(self.schema, doc, root_value=root, variable_values=body.get("variables"))
        out: dict[str, Any] = {"data": res.data}
        if res.errors:
            out["errors"] = [_gh_error(e) for e in res.errors]
        return web.json_response(out, headers=headers)

    # ------------------------------------------------------------------ REST

    def _repo_of(self, request: web.Request) -> tuple[AltRepo | None, web.Response | None]:
        """The repository of the path; a 301 to ``/repositories/<id>`` for an old name, as GitHub does."""
        mi = request.match_info
        if "rid" in mi:
            return self.state.by_id.get(int(mi["rid"])), None
        full = f"{mi['owner']}/{mi['name']}"
        repo = self.state.find(full)
        if repo is not None and repo.name.lower() != full.lower():
            rest = request.path.split(f"/repos/{mi['owner']}/{mi['name']}", 1)[1]
            loc = f"{request.scheme}://{request.host}{self.rest}/repositories/{repo.db_id}{rest}"
            if request.query_string:
                loc += "?" + request.query_string
            return None, web.json_response({"message": "Moved Permanently", "url": loc}, status=301,
                                           headers={"Location": loc})
        return repo, None

    async def _pre(self, request: web.Request) -> tuple[AltRepo | None, web.Response | None, dict[str, str]]:
        tok = self._token(request)
        if tok is None:
            return None, self._unauthorized(), {}
        if self._forbidden() is not None:
            return None, self._forbidden(), {}
        with self.state.lock:
            self.state.stats.rest += 1
            self.state.stats.rest_paths.append(request.path_qs)
        headers = self._rate(tok, 1)
        repo, redirect = self._repo_of(request)
        if redirect is not None:
            return None, redirect, headers
        if repo is None:
            return None, web.json_response({"message": "Not Found"}, status=404, headers=headers), headers
        return repo, None, headers

    def _base(self, request: web.Request, repo: AltRepo) -> str:
        return f"{request.scheme}://{request.host}{self.rest}/repos/{repo.name}"

    async def _repo(self, request: web.Request) -> web.Response:
        repo, early, headers = await self._pre(request)
        if early is not None:
            return early
        assert repo is not None
        owner, name = repo.name.split("/")
        return web.json_response({"id": repo.db_id, "node_id": f"R_{repo.db_id}", "name": name,
                                  "full_name": repo.name, "owner": {"login": owner, "type": "User"},
                                  "url": self._base(request, repo), "has_issues": repo.has_issues,
                                  "has_discussions": repo.has_discussions, "archived": False,
                                  "stargazers_count": 42}, headers=headers)

    def _issue_doc(self, request: web.Request, repo: AltRepo, t: Thread) -> dict[str, Any]:
        base = self._base(request, repo)
        d: dict[str, Any] = {
            "id": t.number * 1000 + 7, "node_id": f"I_{t.number}", "url": f"{base}/issues/{t.number}",
            "repository_url": base, "html_url": t.url, "number": t.number, "title": t.title, "body": t.body,
            "user": _rest_user(t.author), "labels": [{"name": lb, "color": "ededed"} for lb in t.labels],
            "state": t.state, "comments": len(t.comments), "created_at": _iso(t.created_at),
            "updated_at": _iso(t.updated_at), "closed_at": _iso(t.closed_at),
            "author_association": t.author_association,
            "reactions": {"url": f"{base}/issues/{t.number}/reactions", "total_count": t.reactions, "+1": 0},
        }
        if not self.p.rest_no_state_reason:
            d["state_reason"] = t.state_reason if t.kind == "issue" else None
        if t.kind == "pull_request":
            d["pull_request"] = {"url": f"{base}/pulls/{t.number}", "html_url": t.url}
        return d

    def _paged(self, request: web.Request, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        """One page (``page``/``per_page``, capped) and GitHub's ``Link`` header (absent on a single page)."""
        q = request.query
        per = max(1, min(int(q.get("per_page", "30")), self.p.rest_page_cap))
        page = max(1, int(q.get("page", "1")))
        last = max(1, math.ceil(len(items) / per))
        out = items[(page - 1) * per: page * per]
        links = []

        def url(p: int) -> str:
            params = dict(q)
            params["page"] = str(p)
            return f"{request.scheme}://{request.host}{request.path}?{urlencode(params)}"

        if page < last:
            links += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
        if page > 1:
            links += [f'<{url(1)}>; rel="first"', f'<{url(page - 1)}>; rel="prev"']
        return out, ({"Link": ", ".join(links)} if links else {})

    async def _issues(self, request: web.Request) -> web.Response:
        repo, early, headers = await self._pre(request)
        if early is not None:
            return early
        assert repo is not None
        if not repo.has_issues:
            return web.json_response({"message": "Issues are disabled for this repo"}, status=410, headers=headers)
        q = request.query
        threads = [t for (k, _n), t in repo.threads.items() if k != "discussion"]
        state = q.get("state", "open")
        if state != "all":
            threads = [t for t in threads if t.state == state]
        since = q.get("since")
        if since and not self.p.since_ignored:
            cut = datetime.fromisoformat(since.replace("Z", "+00:00"))
            threads = [t for t in threads if t.updated_at >= cut]
        sort_key = {"updated": lambda t: (t.updated_at, t.number), "comments": lambda t: (len(t.comments), t.number)}
        if self.p.order_ignored:  # newest created first, whatever was asked
            threads.sort(key=lambda t: (t.created_at, t.number), reverse=True)
        else:
            threads.sort(key=sort_key.get(q.get("sort", "created"), lambda t: (t.created_at, t.number)),
                         reverse=q.get("direction", "desc") == "desc")
        page, link = self._paged(request, threads)
        return web.json_response([self._issue_doc(request, repo, t) for t in page], headers={**headers, **link})

    async def _issue(self, request: web.Request) -> web.Response:
        repo, early, headers = await self._pre(request)
        if early is not None:
            return early
        assert repo is not None
        with self.state.lock:
            self.state.stats.completions += 1
        n = int(request.match_info["number"])
        t = repo.threads.get(("issue", n)) or repo.threads.get(("pull_request", n))
        if t is None:
            return web.json_response({"message": "Not Found"}, status=404, headers=headers)
        return web.json_response(self._issue_doc(request, repo, t), headers=headers)

    async def _comments(self, request: web.Request) -> web.Response:
        repo, early, headers = await self._pre(request)
        if early is not None:
            return early
        assert repo is not None
        n = int(request.match_info["number"])
        t = repo.threads.get(("issue", n)) or repo.threads.get(("pull_request", n))
        if t is None:
            return web.json_response({"message": "Not Found"}, status=404, headers=headers)
        base = self._base(request, repo)
        page, link = self._paged(request, t.comments)
        docs = [{"id": 9_000_000 + i, "node_id": c.id, "url": f"{base}/issues/comments/{9_000_000 + i}",
                 "html_url": f"{t.url}#issuecomment-{i}", "body": c.body, "user": _rest_user(c.author),
                 "created_at": _iso(c.created_at), "updated_at": _iso(c.created_at),
                 "author_association": c.author_association,
                 "reactions": {"total_count": c.reactions, "+1": 0}} for i, c in enumerate(page)]
        return web.json_response(docs, headers={**headers, **link})

    async def _completion(self, request: web.Request) -> web.Response:
        with self.state.lock:
            self.state.stats.completions += 1
        return web.json_response({"message": "Not Found"}, status=404)


class AltGitHubThread:
    """Run :class:`AltGitHub` on 127.0.0.1 in a background thread: ``with AltGitHubThread(...) as srv``."""

    def __init__(self, repos: Sequence[AltRepo], *, tokens: Sequence[str] = ("alt-token-1",),
                 personality: Personality | None = None) -> None:
        self.server = AltGitHub(repos, tokens=tokens, personality=personality)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.url = ""

    @property
    def state(self) -> AltState:
        return self.server.state

    async def _start(self) -> str:
        self._runner = web.AppRunner(self.server.app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}"

    def __enter__(self) -> AltGitHubThread:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def dump(obj: Any) -> str:
    """Compact JSON (for debugging a test's answer)."""
    return json.dumps(obj, default=str)[:2000]
