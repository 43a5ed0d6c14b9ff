"""The REST path (``reprodiag mine --api rest``) with PyGithub, for hosts without GraphQL.

Costs one request per 100 issues plus one per 100 comments of every commented issue
(the GraphQL path is ~50× cheaper; see ``reprodiag bench mine``). REST cannot list
discussions. Resumable: issues are read ``sort=updated&direction=asc`` with
``since``; each page of 100 is committed with a checkpoint (kind ``rest:issue``) whose
``run_high_water`` is the last ``updated_at`` committed, so a re-run continues from it.
Retries: 5xx, resets and truncated bodies with jittered exponential backoff; secondary
limits wait ``retry-after`` (else ``secondary_min_wait_s``, doubling).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

import requests
from github import Auth, BadCredentialsException, Github, GithubException, UnknownObjectException
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from miner.convert import comment_from_rest, is_pull_request, parse_time, thread_from_rest
from miner.graphql_client import ClientSettings, Transient
from reprodiag.config import Secret
from reprodiag.errors import UserError
from reprodiag.schema import Thread
from reprodiag.store import Checkpoint, Store

T = TypeVar("T")
KIND = "rest:issue"


class _Skip(Exception):
    pass


class _Call:
    """Run one PyGithub call with our retry and rate-limit policy; counts requests."""

    def __init__(self, label: str, settings: ClientSettings) -> None:
        self.label = label
        self.s = settings
        self.requests = 0

    def __call__(self, fn: Callable[[], T]) -> T:
        s = self.s
        retrying = Retrying(stop=stop_after_attempt(s.max_attempts),
                            wait=wait_exponential_jitter(initial=s.backoff_s, max=s.backoff_max_s, jitter=s.backoff_s),
                            retry=retry_if_exception_type(Transient), reraise=True)
        for attempt in retrying:
            with attempt:
                return self._once(fn)
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, fn: Callable[[], T]) -> T:
        secondary = 0
        while True:
            self.requests += 1
            try:
                return fn()
            except BadCredentialsException:
                raise UserError(f"GitHub answered 401 Bad credentials for {self.label} (value not shown): "
                                "replace or remove that token") from None
            except UnknownObjectException:
                raise _Skip("not found (404)") from None
            except GithubException as exc:
                st = exc.status
                headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
                if st == 410:
                    raise _Skip("issues disabled (410)") from None
                if st in (403, 429) and secondary < s_max(self.s):
                    secondary += 1
                    if headers.get("retry-after", "").isdigit():
                        wait = float(headers["retry-after"])
                    elif headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset", "").isdigit():
                        wait = max(0.0, float(headers["x-ratelimit-reset"]) - time.time()) + 1
                    else:
                        wait = self.s.secondary_min_wait_s * 2 ** min(secondary - 1, 6)
                    time.sleep(wait)
                    continue
                if st >= 500:
                    raise Transient(f"HTTP {st}") from None
                raise
            except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.Timeout, ValueError) as exc:
                raise Transient(type(exc).__name__) from None


def s_max(settings: ClientSettings) -> int:
    return settings.max_secondary


def _mine_one(store: Store, repo: str, token: Secret, url: str, include_prs: bool,
              settings: ClientSettings) -> dict[str, Any]:
    gh = Github(base_url=url, auth=Auth.Token(token.get()), per_page=100, retry=None,
                timeout=int(settings.timeout_s), seconds_between_requests=None)
    call = _Call(token.label, settings)
    try:
        r = call(lambda: gh.get_repo(repo))
        cp = store.get_checkpoint(repo, KIND) or Checkpoint(repo, KIND)
        since_s = cp.high_water if cp.complete else (cp.run_high_water or cp.high_water)
        since = parse_time(since_s)
        kwargs: dict[str, Any] = {"state": "all", "sort": "updated", "direction": "asc"}
        if since is not None:
            kwargs["since"] = since
        listing = r.get_issues(**kwargs)
        page_no, run_hw, n_threads = 0, cp.run_high_water if not cp.complete else None, 0
        while True:
            issues = call(lambda p=page_no: listing.get_page(p))
            threads: list[Thread] = []
            for issue in issues:
                if is_pull_request(issue) and not include_prs:
                    continue
                comments = []
                if issue.comments:
                    clist = issue.get_comments()
                    for p in range(math.ceil(issue.comments / 100) + 1):
                        got = call(lambda p=p, cl=clist: cl.get_page(p))
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
        store.set_repo_status(repo, "skipped", requests=call.requests, last_error=str(exc))
        return {"skipped": 1, "requests": call.requests}
    except Transient as exc:
        store.set_repo_status(repo, "failed", requests=call.requests, last_error=f"REST kept failing: {exc}")
        return {"failed": 1, "requests": call.requests}
    except GithubException as exc:
        store.set_repo_status(repo, "failed", requests=call.requests, last_error=f"HTTP {exc.status}")
        return {"failed": 1, "requests": call.requests}
    n = store.count("threads", "repo=?", (repo,))
    store.set_repo_status(repo, "done", threads=n, requests=call.requests)
    return {"done": 1, "requests": call.requests, "fetched": n_threads}


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def mine_rest(store: Store, repos: list[str], *, url: str, tokens: list[Secret], include_prs: bool,
              settings: ClientSettings) -> dict[str, int]:
    """Mine ``repos`` over REST, ``settings.concurrency`` repositories at a time (tokens round-robin)."""
    counts = {"repos": len(repos), "done": 0, "failed": 0, "skipped": 0, "requests": 0, "fetched": 0}
    for r in repos:
        store.set_repo_status(r, "pending", threads=None)
    with ThreadPoolExecutor(max_workers=max(1, min(settings.concurrency, len(repos)))) as ex:
        futs = [ex.submit(_mine_one, store, r, tokens[i % len(tokens)], url, include_prs, settings)
                for i, r in enumerate(repos)]
        for f in futs:
            for k, v in f.result().items():
                counts[k] = counts.get(k, 0) + v
    return counts
