"""The REST path (``reprodiag mine --api rest``) with PyGithub, for hosts without GraphQL.

Costs one request per 100 issues plus one per 100 comments of every commented issue
(the GraphQL path is ~50× cheaper; see ``reprodiag bench mine``). REST cannot list
discussions. Resumable: issues are read ``sort=updated&direction=asc`` with
``since``; each page of 100 is committed with a checkpoint (kind ``rest:issue``) whose
``run_high_water`` is the last ``updated_at`` committed, so a re-run continues from it.
Retries: 5xx, resets and truncated bodies with jittered exponential backoff. Tokens come
from the same budget-aware :class:`~miner.tokens.TokenPool` as the GraphQL path (per
request, by ``x-ratelimit-remaining``); secondary limits park the token for
``retry-after`` (else ``secondary_min_wait_s``, doubling).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

import requests
from github import Auth, BadCredentialsException, Github, GithubException, UnknownObjectException
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from miner.convert import comment_from_rest, is_pull_request, parse_time, thread_from_rest
from miner.graphql_client import ClientSettings, Transient
from miner.tokens import TokenPool, TokenState
from reprodiag.config import Secret
from reprodiag.errors import UserError
from reprodiag.schema import Thread
from reprodiag.store import Checkpoint, Store

T = TypeVar("T")
KIND = "rest:issue"


class _Skip(Exception):
    pass


class _Call:
    """Run one PyGithub call on the pool's best token, with our retry and rate-limit policy.

    Every call picks the token with the most budget left (learnt from ``x-ratelimit-*``
    headers of that token's previous answers); a secondary limit parks that token for
    ``retry-after`` seconds (else ``secondary_min_wait_s``, doubling) and an exhausted
    one until its reset, and the call moves on to another token.
    """

    def __init__(self, pool: TokenPool, clients: dict[str, Github], settings: ClientSettings) -> None:
        self.pool = pool
        self.clients = clients
        self.s = settings
        self.requests = 0

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
            self.requests += 1
            try:
                out = fn(gh)
            except BadCredentialsException:
                raise UserError(f"GitHub answered 401 Bad credentials for {tok.label} (value not shown): "
                                "replace or remove that token") from None
            except UnknownObjectException:
                raise _Skip("not found (404)") from None
            except GithubException as exc:
                st = exc.status
                headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
                if st == 410:
                    raise _Skip("issues disabled (410)") from None
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


def _mine_one(store: Store, repo: str, call: _Call, include_prs: bool) -> dict[str, Any]:
    before = call.requests
    try:
        cp = store.get_checkpoint(repo, KIND) or Checkpoint(repo, KIND)
        since_s = cp.high_water if cp.complete else (cp.run_high_water or cp.high_water)
        since = parse_time(since_s)
        kwargs: dict[str, Any] = {"state": "all", "sort": "updated", "direction": "asc"}
        if since is not None:
            kwargs["since"] = since
        page_no, run_hw, n_threads = 0, cp.run_high_water if not cp.complete else None, 0
        while True:
            issues = call(lambda gh, p=page_no: gh.get_repo(repo).get_issues(**kwargs).get_page(p))
            threads: list[Thread] = []
            for issue in issues:
                if is_pull_request(issue) and not include_prs:
                    continue
                comments = []
                if issue.comments:
                    for p in range(math.ceil(issue.comments / 100) + 1):
                        got = call(lambda gh, p=p, n=issue.number: gh.get_repo(repo).get_issue(n).get_comments()
                                   .get_page(p))
                        comments.extend(comment_from_rest(c) for c in got)
                        if len(got) < 100:
                            break
                threads.append(thread_from_rest(repo, issue, comments))
            if issues:
                last = issues[-1].updated_at
                run_hw = _iso(last)
            done = len(issues) < 100
            hw = run_hw if run_hw and (not cp.high_water or parse_time(run_hw) >= parse_time(cp.high_water)) \
                else cp.high_water
            new = Checkpoint(repo, KIND, cursor=None, high_water=hw if done else cp.high_water,
                             run_high_water=None if done else run_hw, complete=done)
            with store.transaction():
                store.upsert_threads(threads)
                store.set_checkpoint(new)
            n_threads += len(threads)
            if done:
                break
            page_no += 1
    except _Skip as exc:
        store.set_repo_status(repo, "skipped", requests=call.requests - before, last_error=str(exc))
        return {"skipped": 1}
    except Transient as exc:
        store.set_repo_status(repo, "failed", requests=call.requests - before, last_error=f"REST kept failing: {exc}")
        return {"failed": 1}
    except GithubException as exc:
        store.set_repo_status(repo, "failed", requests=call.requests - before, last_error=f"HTTP {exc.status}")
        return {"failed": 1}
    n = store.count("threads", "repo=?", (repo,))
    store.set_repo_status(repo, "done", threads=n, requests=call.requests - before)
    return {"done": 1, "fetched": n_threads}


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def mine_rest(store: Store, repos: list[str], *, url: str, tokens: list[Secret], include_prs: bool,
              settings: ClientSettings) -> dict[str, int]:
    """Mine ``repos`` over REST, ``settings.concurrency`` repositories at a time, every request on the
    token with the most budget left (a shared :class:`TokenPool`)."""
    counts = {"repos": len(repos), "done": 0, "failed": 0, "skipped": 0, "requests": 0, "fetched": 0}
    for r in repos:
        store.set_repo_status(r, "pending", threads=None)
    pool = TokenPool(tokens, floor=settings.floor)
    clients = {t.label: Github(base_url=url, auth=Auth.Token(t.get()), per_page=100, retry=None, lazy=True,
                               timeout=int(settings.timeout_s), seconds_between_requests=None) for t in tokens}
    if len(clients) != len(tokens):
        raise UserError("two GitHub tokens share a label; give each token its own position")
    call = _Call(pool, clients, settings)
    with ThreadPoolExecutor(max_workers=max(1, min(settings.concurrency, len(repos)))) as ex:
        for res in ex.map(lambda r: _mine_one(store, r, call, include_prs), repos):
            for k, v in res.items():
                counts[k] = counts.get(k, 0) + v
    counts["requests"] = call.requests
    counts["budget_waits"] = pool.waits
    return counts
