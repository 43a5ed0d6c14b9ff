"""The REST path (``reprodiag mine --api rest``) with PyGithub, for hosts without GraphQL.

Costs one request per 100 issues plus one per 100 comments of every commented issue
(the GraphQL path is ~50× cheaper; see ``reprodiag bench mine``). REST cannot list
discussions. Resumable: issues are read ``sort=updated&direction=asc`` with
``since``; each page of 100 is committed with a checkpoint (kind ``rest:issue``) whose
``run_high_water`` is the last ``updated_at`` committed, so a re-run continues from it.
Pages end where the ``Link`` header says (a server may cap ``per_page``); items are read as JSON
through PyGithub's requester (no lazy completion requests); a renamed repository (301, which PyGithub
follows without the query string) is detected from the items' ``repository_url`` and listed again
under its current name; threads stored with the listed ``updated_at`` cost nothing.
Retries: 5xx, resets and truncated bodies with jittered exponential backoff. Tokens come
from the same budget-aware :class:`~miner.tokens.TokenPool` as the GraphQL path (per
request, by ``x-ratelimit-remaining``); secondary limits park the token for
``retry-after`` (else ``secondary_min_wait_s``, doubling).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

import requests
from github import Auth, BadCredentialsException, Github, GithubException, UnknownObjectException
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from miner.convert import comment_from_rest, is_pull_request, parse_time, thread_from_rest
from miner.graphql_client import ClientSettings, Transient, is_rate_limit
from miner.renames import known_renames, record_rename
from miner.tokens import TokenPool, TokenState
from reprodiag.config import Secret
from reprodiag.errors import UserError
from reprodiag.schema import Comment, Thread, thread_id
from reprodiag.store import Checkpoint, Store

T = TypeVar("T")
KIND = "rest:issue"
#: Items asked per page (GitHub's maximum; a server may send fewer, its ``Link`` header says what follows).
PER_PAGE = 100
#: Missing repositories after which the api.github.com layout (``/repos`` at the root) is no longer tried.
ROOT_PROBES = 3


class _Skip(Exception):
    pass


class _Call:
    """Run one PyGithub call on the pool's best token, with our retry and rate-limit policy.

    Every call picks the token with the most budget left (learnt from ``x-ratelimit-*``
    headers of that token's previous answers); a secondary limit parks that token for
    ``retry-after`` seconds (else ``secondary_min_wait_s``, doubling) and an exhausted
    one until its reset, and the call moves on to another token.
    """

    def __init__(self, pool: TokenPool, clients: dict[str, Github], settings: ClientSettings, *,
                 root_clients: Callable[[], dict[str, Github]] | None = None) -> None:
        self.pool = pool
        self.clients = clients
        self.s = settings
        self.requests = 0
        self._root_clients = root_clients
        self._root_tries = 0
        self._root = False
        self._lock = threading.Lock()
        self._root_lock = threading.Lock()
        self._mine = threading.local()

    @property
    def mine(self) -> int:
        """Requests sent by the calling thread (one repository is mined on one thread at a time)."""
        return int(getattr(self._mine, "n", 0))

    def try_root(self, probe: Callable[[], object]) -> bool:
        """A repository was not found under the Enterprise path (``/api/v3``): is the server laid out like
        api.github.com (``/repos/...`` at its root)? Switches every client when ``probe`` then succeeds;
        given up after a few repositories missing in both layouts. True when the root layout is in use."""
        with self._root_lock:
            if self._root or self._root_clients is None or self._root_tries >= ROOT_PROBES:
                return self._root
            self._root_tries += 1
            old, self.clients = self.clients, self._root_clients()
            try:
                probe()
            except Exception:  # noqa: BLE001 - any failure: the Enterprise layout stays
                self.clients = old
                return False
            self._root = True
            return True

    def __call__(self, fn: Callable[[Github], T]) -> T:
        s = self.s
        retrying = Retrying(stop=stop_after_attempt(s.max_attempts),
                            wait=wait_exponential_jitter(initial=s.backoff_s, max=s.backoff_max_s, jitter=s.backoff_s),
                            retry=retry_if_exception_type(Transient), reraise=True)
        for attempt in retrying:
            with attempt:
                return self._once(fn)
        raise AssertionError("unreachable")  # pragma: no cover

    def _observe(self, tok: TokenState, gh: Github) -> None:
        remaining, limit = gh.requester.rate_limiting
        reset = gh.requester.rate_limiting_resettime
        self.pool.observe(tok, remaining=remaining if remaining >= 0 else None,
                          limit=limit if limit > 0 else None, reset_at=float(reset) if reset else None)

    def _once(self, fn: Callable[[Github], T]) -> T:
        secondary = 0
        while True:
            tok = self.pool.acquire_blocking()
            gh = self.clients[tok.label]
            with self._lock:
                self.requests += 1
            self._mine.n = getattr(self._mine, "n", 0) + 1
            try:
                out = fn(gh)
            except BadCredentialsException:
                raise UserError(f"GitHub answered 401 Bad credentials for {tok.label} (value not shown): "
                                "replace or remove that token") from None
            except UnknownObjectException:
                raise _NotFound("not found (404)") from None
            except GithubException as exc:
                st = exc.status
                headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
                if st == 404:  # a 404 whose body is not GitHub's JSON (PyGithub then raises the base class)
                    raise _NotFound("not found (404)") from None
                if st == 410:
                    raise _Skip("issues disabled (410)") from None
                if st == 403 and not is_rate_limit(headers, json.dumps(exc.data, default=str)):
                    raise
                if st in (403, 429) and secondary < self.s.max_secondary:
                    secondary += 1
                    if headers.get("retry-after", "").isdigit():
                        self.pool.block(tok, float(headers["retry-after"]))
                    elif headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset", "").isdigit():
                        self.pool.exhausted(tok, float(headers["x-ratelimit-reset"]))
                    else:
                        self.pool.block(tok, self.s.secondary_min_wait_s * 2 ** min(secondary - 1, 6))
                    continue
                if st >= 500:
                    raise Transient(f"HTTP {st}") from None
                raise
            except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.Timeout, ValueError) as exc:
                raise Transient(type(exc).__name__) from None
            self._observe(tok, gh)
            return out


class _NotFound(_Skip):
    """404: the repository (or, for a comment list, the issue) does not exist (any more)."""


_NEXT = re.compile(r'rel="?next"?')


def _get(call: _Call, path: str, params: dict[str, Any] | None = None) -> tuple[dict[str, str], Any]:
    """GET ``path`` (relative to the API base) through PyGithub's requester: lower-cased headers and JSON.

    Raw JSON rather than PyGithub objects: reading an attribute a server left out of a listing makes
    PyGithub fetch the whole object again (one hidden request per issue or comment)."""

    def fn(gh: Github) -> tuple[dict[str, str], Any]:
        headers, data = gh.requester.requestJsonAndCheck("GET", path, parameters=params)
        return {str(k).lower(): str(v) for k, v in (headers or {}).items()}, data

    return call(fn)


def _has_next(headers: dict[str, str], got: list[Any], per_page: int, left: int | None) -> bool:
    """Whether another page follows: the ``Link`` header's ``rel="next"`` when there is one (a server may
    cap ``per_page`` below what was asked); without one (GitHub omits it on a single page), a full page,
    or fewer items than the known total (``left`` still missing)."""
    if not got:
        return False
    link = headers.get("link")
    if link:
        return bool(_NEXT.search(link))
    return left > 0 if left is not None else len(got) >= per_page


def _comments(call: _Call, repo: str, number: int, expected: int) -> list[Comment] | None:
    """Every comment of issue ``number`` (None: the issue is gone, 404)."""
    out: list[Comment] = []
    page = 1
    while True:
        try:
            headers, got = _get(call, f"/repos/{repo}/issues/{number}/comments",
                                {"per_page": PER_PAGE, "page": page})
        except _NotFound:
            return None
        got = [c for c in got or [] if isinstance(c, dict)]
        out.extend(comment_from_rest(c) for c in got)
        if not _has_next(headers, got, PER_PAGE, expected - len(out)):
            return out
        page += 1


def _stored_updated(store: Store, repo: str, issues: list[dict[str, Any]]) -> dict[int, datetime | None]:
    """``updated_at`` of the listed issues/pull requests already stored, by number."""
    ids: dict[str, int] = {}
    for i in issues:
        n = int(i["number"])
        ids[thread_id(repo, n, "pull_request" if is_pull_request(i) else "issue")] = n
    if not ids:
        return {}
    rows = store.query(f"SELECT id, updated_at FROM threads WHERE id IN ({','.join('?' * len(ids))})", tuple(ids))
    return {ids[r[0]]: parse_time(r[1]) for r in rows}


def _repo_of(issues: list[dict[str, Any]]) -> str | None:
    """``owner/name`` as the server spells it, from the items' ``repository_url`` (None: not said)."""
    for issue in issues:
        url = issue.get("repository_url")
        if isinstance(url, str) and "/repos/" in url:
            parts = url.rstrip("/").rsplit("/repos/", 1)[1].split("/")
            if len(parts) == 2 and all(parts):
                return "/".join(parts)
    return None


def _mine_one(store: Store, requested: str, call: _Call, include_prs: bool,
              renames: dict[str, str]) -> dict[str, Any]:
    before = call.mine
    name = renames.get(requested.lower(), requested)
    try:
        repo, current = name, name
        for _attempt in range(3):
            cp = store.get_checkpoint(repo, KIND) or Checkpoint(repo, KIND)
            since_s = cp.high_water if cp.complete else (cp.run_high_water or cp.high_water)
            params: dict[str, Any] = {"state": "all", "sort": "updated", "direction": "asc", "per_page": PER_PAGE}
            if since_s:
                params["since"] = since_s
            path = f"/repos/{repo}/issues"
            try:
                headers, issues = _get(call, path, {**params, "page": 1})
            except _NotFound:
                if not call.try_root(lambda p=path, q=params: _get(call, p, {**q, "page": 1})):
                    raise
                headers, issues = _get(call, path, {**params, "page": 1})
            issues = [i for i in issues or [] if isinstance(i, dict)]
            # a renamed repository answers with a 301 that PyGithub follows *without the query string* (open
            # issues only, default order and page size): its current name is in the items; list again under it
            current = _repo_of(issues) or repo
            if not issues and not cp.complete:
                # nothing listed on a first pass: a renamed repository with no open issue looks the same
                _h, info = _get(call, f"/repos/{repo}")
                full = info.get("full_name") if isinstance(info, dict) else None
                current = full if isinstance(full, str) and full.count("/") == 1 else repo
            if current.lower() == repo.lower():
                break
            repo = current
        if current.lower() != repo.lower():
            raise _Skip(f"GitHub keeps answering for another repository ({current})")
        repo = current
        renamed = record_rename(store, requested, repo)
        page_no, n_threads = 1, 0
        #: newest ``updated_at`` of the pass; resumable (``run_high_water``) while the server sorts as asked
        newest, last, ordered = (cp.run_high_water if not cp.complete else None), None, True
        while True:
            if page_no > 1:
                headers, issues = _get(call, f"/repos/{repo}/issues", {**params, "page": page_no})
                issues = [i for i in issues or [] if isinstance(i, dict)]
            threads: list[Thread] = []
            stored = _stored_updated(store, repo, issues)
            for issue in issues:
                t = issue.get("updated_at")
                if isinstance(t, str):
                    ordered = ordered and (last is None or parse_time(t) >= parse_time(last))  # type: ignore[operator]
                    last = t
                    newest = t if newest is None or parse_time(t) >= parse_time(newest) else newest  # type: ignore[operator]
                if is_pull_request(issue) and not include_prs:
                    continue
                if isinstance(t, str) and stored.get(int(issue["number"])) == parse_time(t):
                    continue  # stored as it is now (``since`` is inclusive; a server may ignore it): no requests
                comments: list[Comment] | None = []
                expected = issue.get("comments")
                if not isinstance(expected, int) or expected > 0:
                    comments = _comments(call, repo, int(issue["number"]), expected if isinstance(expected, int)
                                         else 0)
                if comments is None:  # deleted since it was listed
                    continue
                threads.append(thread_from_rest(repo, issue, comments))
            done = not _has_next(headers, issues, PER_PAGE, None)
            hw = newest if newest and (not cp.high_water or parse_time(newest) >= parse_time(cp.high_water)) \
                else cp.high_water  # type: ignore[operator]
            new = Checkpoint(repo, KIND, cursor=None, high_water=hw if done else cp.high_water,
                             run_high_water=None if done or not ordered else newest, complete=done)
            with store.transaction():
                store.upsert_threads(threads)
                store.set_checkpoint(new)
            n_threads += len(threads)
            if done:
                break
            page_no += 1
    except _Skip as exc:
        store.set_repo_status(requested if isinstance(exc, _NotFound) else name, "skipped",
                              requests=call.mine - before, last_error=str(exc))
        return {"skipped": 1}
    except Transient as exc:
        store.set_repo_status(name, "failed", requests=call.mine - before, last_error=f"REST kept failing: {exc}")
        return {"failed": 1}
    except GithubException as exc:
        store.set_repo_status(name, "failed", requests=call.mine - before, last_error=f"HTTP {exc.status}")
        return {"failed": 1}
    n = store.count("threads", "repo=?", (repo,))
    store.set_repo_status(repo, "done", threads=n, requests=call.mine - before)
    return {"done": 1, "fetched": n_threads, "renamed": int(renamed)}


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def mine_rest(store: Store, repos: list[str], *, url: str, tokens: list[Secret], include_prs: bool,
              settings: ClientSettings) -> dict[str, int]:
    """Mine ``repos`` over REST, ``settings.concurrency`` repositories at a time, every request on the
    token with the most budget left (a shared :class:`TokenPool`)."""
    counts = {"repos": len(repos), "done": 0, "failed": 0, "skipped": 0, "requests": 0, "fetched": 0, "renamed": 0}
    for r in repos:
        store.set_repo_status(r, "pending", threads=None)
    pool = TokenPool(tokens, floor=settings.floor)

    def make(base: str) -> dict[str, Github]:
        return {t.label: Github(base_url=base, auth=Auth.Token(t.get()), per_page=100, retry=None, lazy=True,
                                timeout=int(settings.timeout_s), seconds_between_requests=None) for t in tokens}

    clients = make(url)
    if len(clients) != len(tokens):
        raise UserError("two GitHub tokens share a label; give each token its own position")
    root = url.rstrip("/")[: -len("/api/v3")] if url.rstrip("/").endswith("/api/v3") else None
    call = _Call(pool, clients, settings, root_clients=(lambda: make(root)) if root else None)
    with ThreadPoolExecutor(max_workers=max(1, min(settings.concurrency, len(repos)))) as ex:
        renames = known_renames(store)
        for res in ex.map(lambda r: _mine_one(store, r, call, include_prs, renames), repos):
            for k, v in res.items():
                counts[k] = counts.get(k, 0) + v
    counts["requests"] = call.requests
    counts["budget_waits"] = pool.waits
    return counts
