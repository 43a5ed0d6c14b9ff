"""``reprodiag mine``: incremental, resumable sync of issues, pull requests and discussions.

Per (repository, kind) a :class:`~reprodiag.store.Checkpoint` holds the cursor of the
last committed page and the ``updatedAt`` high-water mark. Each page of complete
threads (overflowing comment lists already fetched) is committed **in one transaction
with the checkpoint that points past it**, so a process killed at any instant resumes
exactly where it stopped, without duplicates or gaps.

* Issues: ``orderBy: UPDATED_AT ASC`` and ``filterBy: {since: high_water}``; the high
  water of a pass is the newest ``updatedAt`` seen (keyset cursors: a thread updated
  during the pass moves to the end and is seen again).
* Pull requests and discussions have no ``since``: ``orderBy: UPDATED_AT DESC`` and stop
  at the first node older than the high-water mark; the pass's high water is the first
  node of its first page. An unchanged repository re-syncs for 1 point per kind.
* A 502/504 on a page halves the page size (74 → 37 → 18 → 9 → 5); what worked is kept
  in ``Checkpoint.page_size`` for that repository.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from miner import queries as Q
from miner.convert import comment_from_gql, parse_time, thread_from_gql
from miner.graphql_client import Answer, ClientSettings, GatewayError, GraphQLClient, GraphQLFailure
from miner.repo_names import parse_repo
from miner.tokens import TokenPool
from reprodiag import console as out
from reprodiag.config import ApiUrls, Secret, github_tokens
from reprodiag.errors import UserError
from reprodiag.schema import StageReport, Thread, thread_id
from reprodiag.store import Checkpoint, Store, UpsertCounts

_GONE = {"NOT_FOUND": "not found (404)", "FORBIDDEN": "forbidden", "UNAUTHORIZED": "no access"}


@dataclass
class _Tally:
    """Per-repository accounting."""

    points: int = 0
    requests: int = 0
    halvings: int = 0
    upserts: UpsertCounts = field(default_factory=UpsertCounts)
    disabled: list[str] = field(default_factory=list)


class RepoGone(Exception):
    """The repository cannot be mined (404/410/disabled): recorded as skipped."""


@dataclass
class _CommentDraft:
    node: dict[str, Any]
    replies: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _ThreadDraft:
    node: dict[str, Any]
    comments: list[_CommentDraft] = field(default_factory=list)


def _later(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if parse_time(a) >= parse_time(b) else b  # type: ignore[operator]


class RepoMiner:
    """Mines one repository at a time over a shared :class:`GraphQLClient`."""

    def __init__(self, store: Store, client: GraphQLClient) -> None:
        self.store = store
        self.gh = client

    async def _ask(self, tally: _Tally, query: str, variables: dict[str, Any] | None = None, *,
                   heavy: bool = False) -> Answer:
        ans = await self.gh.query(query, variables, heavy=heavy)
        tally.points += ans.cost
        tally.requests += 1
        return ans

    # ------------------------------------------------------------------ one kind

    async def sync_kind(self, repo: str, kind: str, tally: _Tally) -> None:
        owner, name = repo.split("/")
        query, conn_field, flag, default_ps = {
            "issue": (Q.ISSUES, "issues", "hasIssuesEnabled", Q.ISSUE_PAGE),
            "pull_request": (Q.PULLS, "pullRequests", None, Q.PR_PAGE),
            "discussion": (Q.DISCUSSIONS, "discussions", "hasDiscussionsEnabled", Q.DISCUSSION_PAGE),
        }[kind]
        since_mode = kind == "issue"
        cp = self.store.get_checkpoint(repo, kind) or Checkpoint(repo, kind)
        hw = cp.high_water
        if cp.complete:
            cursor, run_hw = None, None
        else:
            cursor, run_hw = cp.cursor, cp.run_high_water
        ps = min(cp.page_size or default_ps, default_ps)
        while True:
            variables: dict[str, Any] = {"owner": owner, "name": name, "first": ps, "after": cursor}
            if since_mode:
                variables["since"] = hw
            try:
                ans = await self._ask(tally, query, variables, heavy=ps > Q.MIN_PAGE)
            except GatewayError:
                ps = max(Q.MIN_PAGE, ps // 2)
                tally.halvings += 1
                continue
            data = ans.data.get("repository")
            if data is None:
                types = [e.get("type") for e in ans.errors]
                reason = next((_GONE[t] for t in types if t in _GONE), None)
                msg = "; ".join(str(e.get("message")) for e in ans.errors[:1])
                raise RepoGone(reason or f"repository unavailable: {msg}"[:200])
            if flag and data.get(flag) is False:
                tally.disabled.append({"issue": "issues disabled", "discussion": "discussions disabled"}[kind])
                return
            conn = data[conn_field]
            nodes = conn.get("nodes") or []
            stop = False
            if since_mode:
                keep = nodes
                for n in nodes:
                    run_hw = _later(run_hw, n["updatedAt"])
            else:
                if cursor is None and nodes:
                    run_hw = nodes[0]["updatedAt"]
                if hw:
                    cut = parse_time(hw)
                    keep = [n for n in nodes if parse_time(n["updatedAt"]) >= cut]
                    stop = len(keep) < len(nodes)
                else:
                    keep = nodes
            threads = await self._complete(repo, kind, keep, tally)
            info = conn.get("pageInfo") or {}
            done = stop or not info.get("hasNextPage")
            end = info.get("endCursor") or cursor
            new = Checkpoint(repo, kind, cursor=None if done else end,
                             high_water=_later(hw, run_hw) if done else hw,
                             run_high_water=None if done else run_hw, complete=done, page_size=ps)
            with self.store.transaction():
                tally.upserts = tally.upserts + self.store.upsert_threads(threads)
                self.store.set_checkpoint(new)
            if done:
                return
            cursor = end

    # ------------------------------------------------------------------ completing threads

    def _unchanged(self, repo: str, kind: str, node: dict[str, Any]) -> bool:
        """The stored copy has the same ``updatedAt`` (GitHub bumps it on every new comment)."""
        rows = self.store.query("SELECT updated_at FROM threads WHERE id=?",
                                (thread_id(repo, node["number"], kind),))
        return bool(rows) and parse_time(rows[0][0]) == parse_time(node["updatedAt"])

    async def _complete(self, repo: str, kind: str, nodes: list[dict[str, Any]], tally: _Tally) -> list[Thread]:
        """Complete threads for ``nodes``, skipping those stored unchanged (no follow-up cost)."""
        drafts = []
        for n in nodes:
            if self._unchanged(repo, kind, n):
                tally.upserts = tally.upserts + UpsertCounts(unchanged=1)
                continue
            d = _ThreadDraft(n)
            conn = n.get("comments") or {}
            for c in conn.get("nodes") or []:
                d.comments.append(_CommentDraft(c, list(((c.get("replies") or {}).get("nodes")) or [])))
            drafts.append(d)
        if kind == "discussion":
            await self._complete_discussions(repo, drafts, tally)
        else:
            await self._complete_issues(repo, kind, drafts, tally)
        out_threads = []
        for d in drafts:
            comments = [comment_from_gql(c.node, [comment_from_gql(r) for r in c.replies]) for c in d.comments]
            out_threads.append(thread_from_gql(repo, kind, d.node, comments))
        return out_threads

    async def _batched(self, tally: _Tally, wants: list[Any], per_query: int,
                       build: Callable[[list[Any]], str], variables: dict[str, Any] | None,
                       take: Callable[[Any, dict[str, Any] | None], None], prefix: str) -> None:
        """Run aliased follow-up queries; a 502/504 splits the batch in two."""

        async def run(chunk: list[Any]) -> None:
            try:
                ans = await self._ask(tally, build(chunk), variables, heavy=len(chunk) > 1)
            except GatewayError:
                tally.halvings += 1
                half = len(chunk) // 2
                await asyncio.gather(run(chunk[:half]), run(chunk[half:]))
                return
            root = ans.data.get("repository", ans.data) if variables else ans.data
            if root is None:
                raise GraphQLFailure("repository vanished during follow-up queries")
            for i, want in enumerate(chunk):
                take(want, root.get(f"{prefix}{i}"))

        chunks = [wants[i:i + per_query] for i in range(0, len(wants), per_query)]
        await asyncio.gather(*(run(c) for c in chunks))

    async def _complete_issues(self, repo: str, kind: str, drafts: list[_ThreadDraft], tally: _Tally) -> None:
        owner, name = repo.split("/")
        pending: dict[int, str] = {}
        by_number = {d.node["number"]: d for d in drafts}
        for d in drafts:
            info = (d.node.get("comments") or {}).get("pageInfo") or {}
            if info.get("hasNextPage") and info.get("endCursor"):
                pending[d.node["number"]] = info["endCursor"]
        while pending:
            wants = [(kind, num, cur) for num, cur in sorted(pending.items())]
            pending.clear()

            def take(want: tuple[str, int, str], obj: dict[str, Any] | None) -> None:
                if obj is None:
                    raise GraphQLFailure(f"{repo}#{want[1]} vanished while fetching its comments")
                conn = obj["comments"]
                by_number[want[1]].comments.extend(_CommentDraft(c) for c in conn.get("nodes") or [])
                info = conn.get("pageInfo") or {}
                if info.get("hasNextPage") and info.get("endCursor"):
                    pending[want[1]] = info["endCursor"]

            await self._batched(tally, wants, Q.ISSUE_ALIASES_PER_QUERY,
                                lambda chunk: Q.issue_comments_query(owner, name, chunk),
                                {"owner": owner, "name": name}, take, "c")

    async def _complete_discussions(self, repo: str, drafts: list[_ThreadDraft], tally: _Tally) -> None:
        owner, name = repo.split("/")
        by_number = {d.node["number"]: d for d in drafts}
        comment_pending: dict[int, str] = {}
        reply_pending: dict[str, tuple[_CommentDraft, str | None]] = {}

        def note_replies(c: _CommentDraft) -> None:
            if int((c.node.get("replies") or {}).get("totalCount") or 0) > len(c.replies):
                reply_pending[c.node["id"]] = (c, None)

        for d in drafts:
            info = (d.node.get("comments") or {}).get("pageInfo") or {}
            if info.get("hasNextPage") and info.get("endCursor"):
                comment_pending[d.node["number"]] = info["endCursor"]
            for c in d.comments:
                note_replies(c)
        while comment_pending:
            wants = sorted(comment_pending.items())
            comment_pending.clear()

            def take(want: tuple[int, str], obj: dict[str, Any] | None) -> None:
                if obj is None:
                    raise GraphQLFailure(f"{repo}#d{want[0]} vanished while fetching its comments")
                conn = obj["comments"]
                for c in conn.get("nodes") or []:
                    cd = _CommentDraft(c, list(((c.get("replies") or {}).get("nodes")) or []))
                    by_number[want[0]].comments.append(cd)
                    note_replies(cd)
                info = conn.get("pageInfo") or {}
                if info.get("hasNextPage") and info.get("endCursor"):
                    comment_pending[want[0]] = info["endCursor"]

            await self._batched(tally, wants, Q.DISCUSSION_ALIASES_PER_QUERY,
                                lambda chunk: Q.discussion_comments_query(owner, name, chunk),
                                {"owner": owner, "name": name}, take, "d")
        while reply_pending:
            items = sorted(reply_pending.items())
            reply_pending.clear()

            def take_replies(want: tuple[str, tuple[_CommentDraft, str | None]], obj: dict[str, Any] | None) -> None:
                if obj is None:
                    raise GraphQLFailure(f"comment {want[0]} vanished while fetching its replies")
                conn = obj["replies"]
                c = want[1][0]
                c.replies.extend(conn.get("nodes") or [])
                info = conn.get("pageInfo") or {}
                if info.get("hasNextPage") and info.get("endCursor"):
                    reply_pending[want[0]] = (c, info["endCursor"])

            await self._batched(tally, items, Q.REPLY_ALIASES_PER_QUERY,
                                lambda chunk: Q.replies_query([(cid, cur) for cid, (_c, cur) in chunk]),
                                None, take_replies, "n")

    # ------------------------------------------------------------------ one repository

    async def mine_repo(self, repo: str, kinds: Sequence[str]) -> _Tally:
        tally = _Tally()
        for kind in kinds:
            await self.sync_kind(repo, kind, tally)
        return tally


# ---------------------------------------------------------------------- selection & tokens


def _resolve_tokens(tokens: list[Secret] | None, token_file: Path | None) -> list[Secret]:
    toks = list(tokens) if tokens else github_tokens(token_file)
    if not toks:
        raise UserError("no GitHub token: set GITHUB_TOKEN (or GITHUB_TOKENS=a,b or --token-file); "
                        "GitHub App installation tokens are the documented way to scale")
    return toks


def _select(store: Store, repos: list[str] | None) -> tuple[list[str], list[str]]:
    """Repositories to mine and the notes about rejected names."""
    notes: list[str] = []
    if repos:
        chosen: dict[str, str] = {}
        for raw in repos:
            p = parse_repo(raw)
            if p.name is None:
                notes.append(f"ignored repository {raw!r}: {p.reason}")
            else:
                chosen.setdefault(p.name.lower(), p.name)
        if not chosen:
            raise UserError("no usable repository in --repos (expected owner/name or a GitHub URL)")
        return list(chosen.values()), notes
    indexed = [r["repo"] for r in store.repos()]
    if not indexed:
        raise UserError("no repositories to mine: run `reprodiag index` first or pass --repos owner/name")
    return indexed, notes


def _kinds(include_prs: bool, include_discussions: bool) -> list[str]:
    return ["issue"] + (["pull_request"] if include_prs else []) + (["discussion"] if include_discussions else [])


# ---------------------------------------------------------------------- entry points


async def mine_async(store: Store, repos: list[str], *, url: str, tokens: list[Secret], kinds: Sequence[str],
                     settings: ClientSettings,
                     sleep: Callable[[float], Awaitable[None]] | None = None) -> dict[str, int]:
    """Mine ``repos`` with the GraphQL path; returns counters for the report."""
    counts = {"repos": len(repos), "done": 0, "failed": 0, "skipped": 0, "inserted": 0, "updated": 0,
              "unchanged": 0, "points": 0, "requests": 0, "page_halvings": 0}
    with out.progress_bar() as prog:
        task = prog.add_task("mining", total=len(repos), status="")

        def on_wait(seconds: float, until: float) -> None:
            when = datetime.fromtimestamp(until).strftime("%H:%M:%S")
            prog.update(task, status=f"rate limit: waiting {seconds:.0f}s (reset {when})")

        pool_kw: dict[str, Any] = {"floor": settings.floor, "on_wait": on_wait}
        if sleep is not None:
            pool_kw["sleep"] = sleep
        pool = TokenPool(tokens, **pool_kw)
        queue: asyncio.Queue[str] = asyncio.Queue()
        for r in repos:
            store.set_repo_status(r, "pending", threads=None)
            queue.put_nowait(r)
        async with GraphQLClient(url, pool, settings) as gh:
            miner = RepoMiner(store, gh)

            async def worker() -> None:
                while True:
                    try:
                        repo = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    tally = _Tally()
                    try:
                        tally = await miner.mine_repo(repo, kinds)
                    except RepoGone as exc:
                        store.set_repo_status(repo, "skipped", points=tally.points, last_error=str(exc))
                        counts["skipped"] += 1
                    except GraphQLFailure as exc:
                        store.set_repo_status(repo, "failed", points=tally.points, last_error=str(exc)[:300])
                        counts["failed"] += 1
                    else:
                        n = store.count("threads", "repo=?", (repo,))
                        wanted = [k for k in kinds if k != "pull_request"]
                        all_off = wanted and len(tally.disabled) >= len(wanted) and n == 0
                        status = "skipped" if all_off else "done"
                        store.set_repo_status(repo, status, threads=n, points=tally.points,
                                              requests=tally.requests,
                                              last_error="; ".join(tally.disabled) or None)
                        counts[status] += 1
                        counts["inserted"] += tally.upserts.inserted
                        counts["updated"] += tally.upserts.updated
                        counts["unchanged"] += tally.upserts.unchanged
                        counts["page_halvings"] += tally.halvings
                    prog.advance(task)
                    prog.update(task, status=f"{gh.points} pts")

            workers = max(1, min(settings.concurrency, len(repos)))
            await asyncio.gather(*(worker() for _ in range(workers)))
        counts.update(points=gh.points, requests=gh.requests, retries=gh.retries,
                      secondary_limits=gh.secondary_hits, rate_limited=gh.rate_limited,
                      waited_s=int(pool.waited_s))
    return counts


def run_mine(store: Store, *, repos: list[str] | None, api: str, api_url: str | None, token_file: Path | None,
             include_prs: bool, include_discussions: bool, concurrency: int, tokens: list[Secret] | None = None,
             settings: ClientSettings | None = None) -> StageReport:
    """Mine every indexed repository (or ``repos``); resumable and incremental.

    ``tokens`` wins over ``GITHUB_TOKENS``/``GITHUB_TOKEN``/``token_file``. ``api`` is
    ``graphql`` (default, issues + PRs + discussions) or ``rest`` (PyGithub; no discussions).
    """
    if api not in ("graphql", "rest"):
        raise UserError(f"--api must be graphql or rest, got {api!r}")
    if concurrency < 1:
        raise UserError("--concurrency must be at least 1")
    urls = ApiUrls.from_base(api_url)
    toks = _resolve_tokens(tokens, token_file)
    chosen, notes = _select(store, repos)
    settings = replace(settings or ClientSettings(), concurrency=concurrency)
    run_id = store.start_run("mine", {"api": api, "repos": len(chosen), "include_prs": include_prs,
                                      "include_discussions": include_discussions})
    try:
        if api == "rest":
            from miner.rest import mine_rest

            counts = mine_rest(store, chosen, url=urls.rest, tokens=toks, include_prs=include_prs,
                               settings=settings)
            if include_discussions:
                notes.append("REST cannot fetch discussions (GraphQL only): discussions were not mined")
        else:
            counts = asyncio.run(mine_async(store, chosen, url=urls.graphql, tokens=toks,
                                            kinds=_kinds(include_prs, include_discussions), settings=settings))
    except BaseException:
        store.finish_run(run_id, {}, status="failed")
        raise
    store.finish_run(run_id, counts)
    counts["threads_total"] = store.count("threads")
    if counts.get("failed"):
        notes.append(f"{counts['failed']} repositories failed: see `reprodiag mine --status`; re-run to retry")
    return StageReport(stage="mine", counts=counts, notes=notes)


def mine_status(store: Store) -> StageReport:
    """The per-repository status table (pending/done/failed/skipped, threads, points, last error)."""
    rows = store.repo_status()
    counts: dict[str, int] = {"repos": len(rows)}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    counts["threads"] = sum(r["threads"] or 0 for r in rows)
    counts["points"] = sum(r["points"] or 0 for r in rows)
    notes = [
        f"{r['repo']}: {r['status']}, {r['threads']} threads, {r['points']} pts"
        + (f", {r['last_error']}" if r["last_error"] else "")
        for r in rows
    ]
    indexed = {r["repo"] for r in store.repos()}
    missing = len(indexed - {r["repo"] for r in rows})
    if missing:
        counts["not_started"] = missing
    return StageReport(stage="mine --status", counts=counts, notes=notes)


def estimate(store: Store, *, repos: list[str] | None, include_prs: bool, api: str, tokens_n: int | None,
             token_file: Path | None, api_url: str | None = None, tokens: list[Secret] | None = None,
             threads_per_point: float = 50.0) -> StageReport:
    """Expected points/requests and hours before spending anything.

    Counts come from the index (``reprodiag index --min-stars`` stores issue, PR and
    discussion totals). For repositories without counts one cheap ``totalCount`` query
    per repository is sent (1 point each) when a token is available; otherwise they are
    listed as unknown. GraphQL: ``threads / threads_per_point`` points (measured by
    ``reprodiag bench mine``); REST: one request per 100 issues plus one per issue with
    comments (taken as all issues). Hours assume 5,000 points (or requests) per token per hour.
    """
    chosen, notes = _select(store, repos)
    meta = {r["repo"]: r["meta"] for r in store.repos()}
    totals = {"issues": 0, "pull_requests": 0, "discussions": 0}
    unknown = [r for r in chosen if "issues_count" not in meta.get(r, {})]
    if unknown:
        toks = list(tokens) if tokens else github_tokens(token_file)
        if toks:
            asyncio.run(_fetch_counts(store, unknown, ApiUrls.from_base(api_url).graphql, toks))
            meta = {r["repo"]: r["meta"] for r in store.repos()}
            unknown = [r for r in chosen if "issues_count" not in meta.get(r, {})]
    for r in chosen:
        m = meta.get(r, {})
        totals["issues"] += int(m.get("issues_count") or 0)
        totals["pull_requests"] += int(m.get("prs_count") or 0)
        totals["discussions"] += int(m.get("discussions_count") or 0)
    threads = totals["issues"] + (totals["pull_requests"] if include_prs else 0)
    if api == "graphql":
        threads += totals["discussions"]
        cost = max(len(chosen), math.ceil(threads / threads_per_point)) if threads else len(chosen)
        unit = "points"
    else:
        cost = len(chosen) + math.ceil(threads / 100) + threads
        unit = "requests"
    n_tok = tokens_n or max(1, len(github_tokens(token_file)) if token_file or not tokens else len(tokens))
    hours = cost / (5000 * n_tok)
    counts = {"repos": len(chosen), "threads": threads, **totals, f"expected_{unit}": cost,
              "tokens": n_tok, "expected_minutes": math.ceil(hours * 60)}
    notes.append(f"about {cost:,} {unit}, {hours:.2f} h with {n_tok} token(s) at 5,000/h")
    if unknown:
        counts["repos_unknown_size"] = len(unknown)
        notes.append(f"{len(unknown)} repositories have no known size (index with --min-stars, or set a token)")
    return StageReport(stage="mine --estimate", counts=counts, notes=notes)


async def _fetch_counts(store: Store, repos: list[str], url: str, tokens: list[Secret]) -> None:
    """Issue/PR/discussion totals for ``repos``, 100 per aliased query (1 point each)."""
    from miner.index import fetch_repo_meta

    metas = await fetch_repo_meta(repos, url=url, tokens=tokens)
    for repo, m in metas.items():
        if m is not None:
            store.upsert_repo(repo, issues_count=m["issues_count"], prs_count=m["prs_count"],
                              discussions_count=m["discussions_count"])
