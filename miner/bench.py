"""``reprodiag bench mine``: GraphQL vs REST budget and wall time against the fake GitHub.

A synthetic corpus (20 repositories, heavy-tailed comment counts with threads over 100
comments, ~30% pull requests, some discussions with replies) is served by the fake
GitHub **in its own process** (``python -m miner.fake_github --workers 2``), so that its
GraphQL work does not share the client's GIL and concurrent queries are executed in
parallel, as on GitHub; a fresh one per run (schema built before the run starts, empty
parse cache), and mined:

0. GraphQL, sequential crawl: 1 token, one query in flight, one repository after another
   (the same scheduler with ``repos_at_once=1``: a repository's lists, fills and replies
   still share packed queries, but nothing overlaps);
1. GraphQL, 1 token, one query in flight, all repositories packed together (what
   concurrency alone adds is measured against this stronger baseline);
2. GraphQL, 1 token, concurrency 8; 3. GraphQL, 4 tokens, concurrency 8 per token (32 in flight);
4. REST/PyGithub at 0 latency, concurrency 8 (its *request count* is what matters; at
   100 ms per request it would take minutes, so its wall time is not compared).

Points are what the fake charged: it validates every query against GitHub's schema and
costs it with GitHub's documented formula (sum over connections of the requests needed
to fill them, a nested connection once per parent node; /100, rounded to nearest, min 1).
Every run is checked against the served corpus: ``missing_comments`` must be 0.
"""

from __future__ import annotations

import gc
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
#: The fake's GraphQL worker processes: GitHub answers concurrent queries on many machines; one serving
#: thread would make the fake's CPU, not the miner, set the wall time of the concurrent runs.
_WORKERS = 2


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


def _run(corpus: Corpus, srv: FakeGitHubProcess, *, api: str, n_tokens: int, concurrency: int,
         repos_at_once: int = 64) -> dict[str, Any]:
    """One mining run into a fresh workspace; figures are the server's counters for this run only."""
    from miner.sync import run_mine

    secrets = [Secret(t, f"token #{i}") for i, t in enumerate(_TOKENS[:n_tokens], start=1)]
    before = srv.stats()
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "ws")
        t0 = time.perf_counter()
        report = run_mine(store, repos=list(corpus.repos_meta), api=api, api_url=srv.url, token_file=None,
                          include_prs=True, include_discussions=api == "graphql", concurrency=concurrency,
                          tokens=secrets, settings=ClientSettings(concurrency=concurrency, backoff_s=0.2,
                                                          repos_at_once=repos_at_once))
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


def run_bench(threads: int = 3000, latency_ms: float = 100.0, repeats: int = 3) -> StageReport:
    """Mine a synthetic corpus five ways and report budget, requests and wall time.

    Each GraphQL configuration runs ``repeats`` times, interleaved (crawl, packed, 1 token,
    4 tokens, then again), each on a fresh server; its figures are those of the run with
    the median wall time (the machine is shared and noisy)."""
    corpus = synthetic_corpus(threads, 20, seed=7)
    gc.collect()
    gc.freeze()  # the corpus kept here to check the runs is not the miner's: keep it out of the miner's GC passes

    def fresh(api: str, n_tokens: int, concurrency: int, latency: float, repos_at_once: int = 64) -> dict[str, Any]:
        # a fresh server per run: no run finds the documents of an earlier one in the fake's parse cache
        with FakeGitHubProcess(corpus.threads, corpus.repos_meta, tokens=_TOKENS, latency_ms=latency,
                               workers=_WORKERS) as srv:
            return _run(corpus, srv, api=api, n_tokens=n_tokens, concurrency=concurrency,
                        repos_at_once=repos_at_once)

    configs = {"crawl": (1, 1, 1), "seq": (1, 1, 64), "one": (1, 8, 64), "four": (4, 8, 64)}
    tries: dict[str, list[dict[str, Any]]] = {k: [] for k in configs}
    for _ in range(max(1, repeats)):
        for name, (n_tokens, conc, at_once) in configs.items():
            tries[name].append(fresh("graphql", n_tokens, conc, latency_ms, repos_at_once=at_once))
    median = {k: sorted(v, key=lambda r: r["wall_s"])[len(v) // 2] for k, v in tries.items()}
    crawl, seq, one, four = median["crawl"], median["seq"], median["one"], median["four"]
    rest = fresh("rest", 4, 8, 0)
    runs = (*[r for v in tries.values() for r in v], rest)
    spread_s = {k: f"{min(r['wall_s'] for r in v):.1f}-{max(r['wall_s'] for r in v):.1f}s" for k, v in tries.items()}
    rest_threads = sum(1 for t in corpus.threads if t.kind != "discussion")
    tpp = four["threads"] / max(1, four["points"])
    tpr = rest["threads"] / max(1, rest["requests"])
    # budget per thread: REST requests per issue/PR vs GraphQL points per thread (REST and GraphQL
    # budgets are both 5,000 an hour per token)
    budget_ratio = (rest["requests"] / max(1, rest_threads)) / (four["points"] / max(1, four["threads"]))
    speedup = crawl["wall_s"] / max(1e-9, four["wall_s"])
    speedup_packed = seq["wall_s"] / max(1e-9, four["wall_s"])
    counts = {
        "threads": len(corpus.threads), "comments": corpus.comments,
        "graphql_points": int(four["points"]), "graphql_requests": int(four["requests"]),
        "graphql_points_sequential": int(seq["points"]), "graphql_points_crawl": int(crawl["points"]),
        "graphql_requests_crawl": int(crawl["requests"]), "rest_requests": int(rest["requests"]),
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
        f"wall time at {latency_ms:g} ms latency, fake GitHub in its own process: sequential crawl (1 token, "
        f"one query in flight, one repository after another) {crawl['wall_s']:.1f}s, {int(crawl['requests'])} "
        f"queries, {int(crawl['points'])} points; packed sequential (1 token, one query in flight, all "
        f"repositories packed) {seq['wall_s']:.1f}s, {int(seq['requests'])} queries, {int(seq['points'])} points; "
        f"1 token, concurrency 8 {one['wall_s']:.1f}s, {int(one['points'])} points; 4 tokens, concurrency 8 per "
        f"token {four['wall_s']:.1f}s, {int(four['requests'])} queries, {int(four['points'])} points",
        f"4 tokens vs sequential crawl: {speedup:.1f}x faster (target >= 5x); vs packed sequential: "
        f"{speedup_packed:.1f}x (packing already removes most of the round trips concurrency would overlap)",
        f"wall times are medians of {max(1, repeats)} interleaved runs on fresh servers; ranges: crawl "
        f"{spread_s['crawl']}, packed sequential {spread_s['seq']}, 1 token {spread_s['one']}, "
        f"4 tokens {spread_s['four']}",
        f"fake GitHub CPU (parse, validate, cost, execute, encode) per GraphQL query: "
        f"{1000 * four['server_cpu_s'] / max(1, four['requests']):.0f} ms ({four['server_cpu_s']:.1f}s for "
        f"{int(four['requests'])} queries); the sequential run waits for all of it, the parallel ones overlap it "
        f"with latency and, in {_WORKERS} worker processes, with each other",
        f"GraphQL points per token (4 tokens): {spread}; REST requests per token: {rest_spread}",
        f"REST/PyGithub wall time at 0 ms latency: {rest['wall_s']:.1f}s",
        f"missing comments across all runs: {counts['missing_comments']} (must be 0)",
    ]
    return StageReport(stage="bench mine", counts=counts, notes=notes)
