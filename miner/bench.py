"""``reprodiag bench mine``: GraphQL vs REST budget and wall time against the fake GitHub.

A synthetic corpus (20 repositories, heavy-tailed comment counts with threads over 100
comments, ~30% pull requests, some discussions with replies) is served by the fake
GitHub **in its own process** (``python -m miner.fake_github``), so that its
graphql-core work does not share the client's GIL, a fresh one per run (schema built
before the run starts, empty parse cache), and mined:

1. GraphQL, 1 token, concurrency 1 (sequential baseline: same scheduler, one query at a time);
2. GraphQL, 1 token, concurrency 8; 3. GraphQL, 4 tokens, concurrency 8 per token (32 in flight);
4. REST/PyGithub at 0 latency, concurrency 8 (its *request count* is what matters; at
   100 ms per request it would take minutes, so its wall time is not compared).

Points are what the fake charged: it validates every query against GitHub's schema and
costs it with GitHub's documented formula (sum over connections of the requests needed
to fill them, a nested connection once per parent node; /100, rounded to nearest, min 1).
Every run is checked against the served corpus: ``missing_comments`` must be 0.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from miner.fake_process import FakeGitHubProcess
from miner.graphql_client import ClientSettings
from miner.synthetic import Corpus, synthetic_corpus
from reprodiag.config import Secret
from reprodiag.schema import StageReport, Thread
from reprodiag.store import Store

_TOKENS = [f"bench-token-{i}" for i in range(1, 5)]


def _missing(corpus: Corpus, store: Store, kinds: set[str]) -> tuple[int, int]:
    """(missing threads, missing comments incl. replies) of the corpus in the store."""
    got = {t.id: t for t in store.iter_threads()}
    threads = comments = 0
    for t in corpus.threads:
        if t.kind not in kinds:
            continue
        g: Thread | None = got.get(t.id)
        if g is None:
            threads += 1
            comments += len(t.all_comments())
            continue
        have = {c.id for c in g.all_comments()}
        comments += sum(1 for c in t.all_comments() if c.id not in have)
    return threads, comments


def _diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def _run(corpus: Corpus, srv: FakeGitHubProcess, *, api: str, n_tokens: int, concurrency: int) -> dict[str, Any]:
    """One mining run into a fresh workspace; figures are the server's counters for this run only."""
    from miner.sync import run_mine

    secrets = [Secret(t, f"token #{i}") for i, t in enumerate(_TOKENS[:n_tokens], start=1)]
    before = srv.stats()
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "ws")
        t0 = time.perf_counter()
        report = run_mine(store, repos=list(corpus.repos_meta), api=api, api_url=srv.url, token_file=None,
                          include_prs=True, include_discussions=api == "graphql", concurrency=concurrency,
                          tokens=secrets, settings=ClientSettings(concurrency=concurrency, backoff_s=0.2))
        wall = time.perf_counter() - t0
        after = srv.stats()
        kinds = {"issue", "pull_request"} | ({"discussion"} if api == "graphql" else set())
        miss_t, miss_c = _missing(corpus, store, kinds)
        n = store.count("threads")
        store.close()
    labels = {t: f"token #{i}" for i, t in enumerate(_TOKENS, start=1)}
    per_token = _diff(after["points"] if api == "graphql" else after["requests"],
                      before["points"] if api == "graphql" else before["requests"])
    return {"wall_s": wall, "threads": n, "requests": after["total_requests"] - before["total_requests"],
            "points": after["total_points"] - before["total_points"], "missing_threads": miss_t,
            "missing_comments": miss_c, "failed": report.counts.get("failed", 0),
            "server_cpu_s": after.get("graphql_cpu_s", 0.0) - before.get("graphql_cpu_s", 0.0),
            "per_token": {labels.get(k, k): v for k, v in per_token.items()}}


def run_bench(threads: int = 3000, latency_ms: float = 100.0) -> StageReport:
    """Mine a synthetic corpus four ways and report budget, requests and wall time."""
    corpus = synthetic_corpus(threads, 20, seed=7)

    def fresh(api: str, n_tokens: int, concurrency: int, latency: float) -> dict[str, Any]:
        # a fresh server per run: no run finds the documents of an earlier one in the fake's parse cache
        with FakeGitHubProcess(corpus.threads, corpus.repos_meta, tokens=_TOKENS, latency_ms=latency) as srv:
            return _run(corpus, srv, api=api, n_tokens=n_tokens, concurrency=concurrency)

    seq = fresh("graphql", 1, 1, latency_ms)
    one = fresh("graphql", 1, 8, latency_ms)
    four = fresh("graphql", 4, 8, latency_ms)
    rest = fresh("rest", 4, 8, 0)
    runs = (seq, one, four, rest)
    rest_threads = sum(1 for t in corpus.threads if t.kind != "discussion")
    tpp = four["threads"] / max(1, four["points"])
    tpr = rest["threads"] / max(1, rest["requests"])
    # budget per thread: REST requests per issue/PR vs GraphQL points per thread (REST and GraphQL
    # budgets are both 5,000 an hour per token)
    budget_ratio = (rest["requests"] / max(1, rest_threads)) / (four["points"] / max(1, four["threads"]))
    speedup = seq["wall_s"] / max(1e-9, four["wall_s"])
    counts = {
        "threads": len(corpus.threads), "comments": corpus.comments,
        "graphql_points": int(four["points"]), "graphql_requests": int(four["requests"]),
        "graphql_points_sequential": int(seq["points"]), "rest_requests": int(rest["requests"]),
        "missing_comments": int(sum(r["missing_comments"] for r in runs)),
        "missing_threads": int(sum(r["missing_threads"] for r in runs)),
        "failed_repos": int(sum(r["failed"] for r in runs)),
    }
    spread = ", ".join(f"{k} {v}" for k, v in sorted(four["per_token"].items()))
    rest_spread = ", ".join(f"{k} {v}" for k, v in sorted(rest["per_token"].items()))
    notes = [
        f"threads per GraphQL point: {tpp:.1f} (target >= 50): {int(four['points'])} points in "
        f"{int(four['requests'])} GraphQL requests for {int(four['threads'])} complete threads "
        f"(sequential run: {int(seq['points'])} points)",
        "points as charged by the fake: GitHub's formula per query (connection requests, nested ones per "
        "parent node, /100 rounded to nearest, min 1); the miner packs ~149 requests into each 1-point query",
        f"threads per REST request: {tpr:.2f} ({int(rest['requests'])} requests for {rest_threads} issues+PRs; "
        "REST cannot list discussions)",
        f"REST/GraphQL budget ratio: REST needs {budget_ratio:.1f}x the budget of GraphQL per thread (target >= 30x)",
        f"wall time at {latency_ms:g} ms latency, fake GitHub in its own process: sequential (1 token, "
        f"concurrency 1) {seq['wall_s']:.1f}s, {int(seq['points'])} points; 1 token, concurrency 8 "
        f"{one['wall_s']:.1f}s, {int(one['points'])} points; 4 tokens, concurrency 8 per token "
        f"{four['wall_s']:.1f}s, {int(four['points'])} points -> {speedup:.1f}x faster than sequential "
        "(target >= 5x)",
        f"fake GitHub CPU (parse, validate, cost, execute, encode) per GraphQL query: "
        f"{1000 * four['server_cpu_s'] / max(1, four['requests']):.0f} ms ({four['server_cpu_s']:.1f}s for "
        f"{int(four['requests'])} queries); the sequential run waits for all of it, the parallel ones overlap it "
        "with latency but not with each other (one serving thread)",
        f"GraphQL points per token (4 tokens): {spread}; REST requests per token: {rest_spread}",
        f"REST/PyGithub wall time at 0 ms latency: {rest['wall_s']:.1f}s",
        f"missing comments across all runs: {counts['missing_comments']} (must be 0)",
    ]
    return StageReport(stage="bench mine", counts=counts, notes=notes)
