"""``reprodiag mine``: incremental, resumable sync of issues, pull requests and discussions.

The work is done by :class:`miner.scheduler.Scheduler`, which packs list pages and
follow-ups of many repositories into 1-point queries (see :mod:`miner.queries` for the
cost arithmetic). Per (repository, kind) a :class:`~reprodiag.store.Checkpoint` holds the
cursor of the last committed page and the ``updatedAt`` high-water mark; each page of
complete threads is committed **in one transaction with the checkpoint that points past
it**, so a process killed at any instant resumes exactly where it stopped.

* Issues: ``orderBy: UPDATED_AT ASC`` and ``filterBy: {since: high_water}``; the high
  water of a pass is the newest ``updatedAt`` seen (keyset cursors: a thread updated
  during the pass moves to the end and is seen again).
* Pull requests and discussions have no ``since``: ``orderBy: UPDATED_AT DESC`` and stop
  at the first node older than the high-water mark, once the first page's query also asked
  the list's oldest thread (``first: 1``, ``ASC``, 1 request) and so showed that the server
  honours ``orderBy`` (otherwise the list is read to its end: slower, nothing missed).
* A thread listed twice in one issue pass moved while the pass ran; with offset cursors a
  thread may have been passed over, so the next pass starts where the moved one first was. Threads stored with the same
  ``updatedAt`` are not completed again, so an unchanged repository re-syncs for a
  share of one packed query (at most 2 points on its own).
* Renamed repositories are stored under GitHub's current ``nameWithOwner``; the rename
  is recorded in the index (``repos.renamed_from``) and followed on later runs.
* Server differences degrade to more requests, never to missing data: ``totalCount`` left
  out (every connection is then asked), ``last``/``before`` refused or ignored (long comment
  lists read forwards only), a disabled feature answered with an error inside the repository
  (that kind is noted as unavailable, the others are mined), ``/graphql`` at the root of
  ``--api-url`` instead of ``/api/graphql``. A server whose cursors do not advance fails
  the repository with a clear note instead of looping.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from miner.graphql_client import ClientSettings, GraphQLClient
from miner.renames import known_renames, record_rename
from miner.repo_names import parse_repo
from miner.scheduler import RepoResult, Scheduler
from miner.sharding import Shard
from miner.tokens import TokenPool
from reprodiag import console as out
from reprodiag.config import ApiUrls, Secret, github_tokens
from reprodiag.errors import UserError
from reprodiag.gc_policy import fewer_collections
from reprodiag.schema import StageReport
from reprodiag.store import Store

# ---------------------------------------------------------------------- selection & tokens


def _resolve_tokens(tokens: list[Secret] | None, token_file: Path | None) -> list[Secret]:
    toks = list(tokens) if tokens else github_tokens(token_file)
    if not toks:
        raise UserError("no GitHub token: set GITHUB_TOKEN (or GITHUB_TOKENS=a,b or --token-file); "
                        "GitHub App installation tokens are the documented way to scale")
    return toks


def _select(store: Store, repos: list[str] | None, shard: Shard | None = None) -> tuple[list[str], list[str]]:
    """Repositories to mine (those of ``shard`` only, when given) and the notes about rejected names."""
    chosen, notes = _select_all(store, repos)
    if shard is None:
        return chosen, notes
    mine = [r for r in chosen if shard.holds(r)]
    notes.append(f"shard {shard}: {len(mine)} of {len(chosen)} repositories")
    return mine, notes


def _select_all(store: Store, repos: list[str] | None) -> tuple[list[str], list[str]]:
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
            bad = ", ".join(repr(r) for r in repos[:3]) + (" …" if len(repos) > 3 else "")
            raise UserError(f"no usable repository in --repos: {bad} (expected owner/name or a GitHub URL)")
        return list(chosen.values()), notes
    indexed = [r["repo"] for r in store.repos()]
    if not indexed:
        raise UserError("no repositories to mine: run `reprodiag index` first or pass --repos owner/name")
    return indexed, notes


def _kinds(include_prs: bool, include_discussions: bool) -> list[str]:
    return ["issue"] + (["pull_request"] if include_prs else []) + (["discussion"] if include_discussions else [])


# ---------------------------------------------------------------------- entry points


def _record(store: Store, res: RepoResult, counts: dict[str, int]) -> None:
    """Write one repository's outcome to the status table (and the index, for renames)."""
    if res.status == "duplicate":
        store.set_repo_status(res.requested, "skipped", last_error=res.note)
        counts["skipped"] += 1
        return
    if record_rename(store, res.requested, res.name):
        counts["renamed"] = counts.get("renamed", 0) + 1
    store.set_repo_status(res.name, res.status, threads=res.threads if res.status != "failed" else None,
                          points=res.points, requests=res.requests, last_error=res.note)
    counts[res.status] += 1
    counts["inserted"] += res.upserts.inserted
    counts["updated"] += res.upserts.updated
    counts["unchanged"] += res.upserts.unchanged
    counts["page_halvings"] += res.halvings


async def mine_async(store: Store, repos: list[str], *, url: str, tokens: list[Secret], kinds: Sequence[str],
                     settings: ClientSettings,
                     sleep: Callable[[float], Awaitable[None]] | None = None) -> dict[str, int]:
    """Mine ``repos`` with the GraphQL path; returns counters for the report."""
    counts = {"repos": len(repos), "done": 0, "failed": 0, "skipped": 0, "inserted": 0, "updated": 0,
              "unchanged": 0, "points": 0, "requests": 0, "page_halvings": 0}
    renames = known_renames(store)
    pairs = [(r, renames.get(r.lower(), r)) for r in repos]
    with out.progress_bar() as prog:
        task = prog.add_task("mining", total=len(repos), status="")

        def on_wait(seconds: float, until: float) -> None:
            when = datetime.fromtimestamp(until).strftime("%H:%M:%S")
            prog.update(task, status=f"rate limit: waiting {seconds:.0f}s (reset {when})")

        pool_kw: dict[str, Any] = {"floor": settings.floor, "on_wait": on_wait}
        if sleep is not None:
            pool_kw["sleep"] = sleep
        pool = TokenPool(tokens, **pool_kw)
        for _requested, name in pairs:
            store.set_repo_status(name, "pending", threads=None)
        async with GraphQLClient(url, pool, settings) as gh:
            sched = Scheduler(store, gh, pairs, kinds, concurrency=gh.capacity, max_active=settings.repos_at_once)
            seen = 0

            def progress() -> None:
                nonlocal seen
                while seen < len(sched.results):
                    _record(store, sched.results[seen], counts)
                    seen += 1
                    prog.advance(task)
                prog.update(task, status=f"{gh.points} pts")

            sched.on_result = progress
            await sched.run()
            progress()
        counts.update(points=gh.points, requests=gh.requests, retries=gh.retries,
                      secondary_limits=gh.secondary_hits, rate_limited=gh.rate_limited,
                      waited_s=int(pool.waited_s), budget_waits=pool.waits)
    return counts


def run_mine(store: Store, *, repos: list[str] | None, api: str, api_url: str | None, token_file: Path | None,
             include_prs: bool, include_discussions: bool, concurrency: int, tokens: list[Secret] | None = None,
             settings: ClientSettings | None = None, shard: Shard | None = None) -> StageReport:
    """Mine every indexed repository (or ``repos``); resumable and incremental.

    ``tokens`` wins over ``GITHUB_TOKENS``/``GITHUB_TOKEN``/``token_file``. ``api`` is
    ``graphql`` (default, issues + PRs + discussions) or ``rest`` (PyGithub; no discussions).
    ``shard``: only the repositories of that part (:mod:`miner.sharding`).
    """
    if api not in ("graphql", "rest"):
        raise UserError(f"--api must be graphql or rest, got {api!r}")
    if concurrency < 1:
        raise UserError("--concurrency must be at least 1")
    urls = ApiUrls.from_base(api_url)
    toks = _resolve_tokens(tokens, token_file)
    chosen, notes = _select(store, repos, shard)
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
            with fewer_collections():  # answers are large acyclic trees freed by reference counting
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
             threads_per_point: float = 50.0, shard: Shard | None = None) -> StageReport:
    """Expected points/requests and hours before spending anything.

    Counts come from the index (``reprodiag index --min-stars`` stores issue, PR and
    discussion totals). For repositories without counts one cheap ``totalCount`` query
    per repository is sent (1 point each) when a token is available; otherwise they are
    listed as unknown. GraphQL: ``threads / threads_per_point`` points (measured by
    ``reprodiag bench mine``); REST: one request per 100 issues plus one per issue with
    comments (taken as all issues). Hours assume 5,000 points (or requests) per token per hour.
    """
    chosen, notes = _select(store, repos, shard)
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
