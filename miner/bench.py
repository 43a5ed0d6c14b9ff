"""``reprodiag bench mine``: GraphQL vs REST budget and wall time against the fake GitHub.

A synthetic corpus (20 repositories, heavy-tailed comment counts with threads over 100
comments, ~30% pull requests, some discussions with replies) is mined:

1. GraphQL, 1 token, concurrency 1 (sequential baseline), with the injected latency;
2. GraphQL, 1 token, concurrency 8; 3. GraphQL, 4 tokens, concurrency 8;
4. REST/PyGithub at 0 latency, concurrency 8 (its *request count* is what matters; at
   100 ms per request it would take minutes, so its wall time is not reported).

Every run is checked against the served corpus: ``missing_comments`` must be 0.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from miner.fake_github import FakeGitHubThread
from miner.graphql_client import ClientSettings
from miner.synthetic import Corpus, synthetic_corpus
from reprodiag.config import Secret
from reprodiag.schema import StageReport, Thread
from reprodiag.store import Store


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


def _run(corpus: Corpus, *, api: str, n_tokens: int, concurrency: int, latency_ms: float) -> dict[str, float]:
    from miner.sync import run_mine

    toks = [f"bench-token-{i}" for i in range(n_tokens)]
    secrets = [Secret(t, f"token #{i}") for i, t in enumerate(toks, start=1)]
    with tempfile.TemporaryDirectory() as d, FakeGitHubThread(corpus.threads, corpus.repos_meta, tokens=toks,
                                                              latency_ms=latency_ms) as srv:
        store = Store(Path(d) / "ws")
        t0 = time.perf_counter()
        report = run_mine(store, repos=list(corpus.repos_meta), api=api, api_url=srv.url, token_file=None,
                          include_prs=True, include_discussions=api == "graphql", concurrency=concurrency,
                          tokens=secrets, settings=ClientSettings(concurrency=concurrency, backoff_s=0.2))
        wall = time.perf_counter() - t0
        stats = srv.state.stats_doc()
        kinds = {"issue", "pull_request"} | ({"discussion"} if api == "graphql" else set())
        miss_t, miss_c = _missing(corpus, store, kinds)
        n = store.count("threads")
        store.close()
    return {"wall_s": wall, "threads": n, "requests": stats["total_requests"], "points": stats["total_points"],
            "missing_threads": miss_t, "missing_comments": miss_c, "failed": report.counts.get("failed", 0)}


def run_bench(threads: int = 3000, latency_ms: float = 100.0) -> StageReport:
    """Mine a synthetic corpus four ways and report budget, requests and wall time."""
    corpus = synthetic_corpus(threads, 20, seed=7)
    seq = _run(corpus, api="graphql", n_tokens=1, concurrency=1, latency_ms=latency_ms)
    one = _run(corpus, api="graphql", n_tokens=1, concurrency=8, latency_ms=latency_ms)
    four = _run(corpus, api="graphql", n_tokens=4, concurrency=8, latency_ms=latency_ms)
    rest = _run(corpus, api="rest", n_tokens=1, concurrency=8, latency_ms=0)
    rest_threads = sum(1 for t in corpus.threads if t.kind != "discussion")
    tpp = four["threads"] / max(1, four["points"])
    tpr = rest["threads"] / max(1, rest["requests"])
    # budget for the same issue+PR threads: REST requests vs GraphQL points, scaled to the same thread count
    budget_ratio = (rest["requests"] / max(1, rest_threads)) / (four["points"] / max(1, four["threads"]))
    speedup = seq["wall_s"] / max(1e-9, four["wall_s"])
    counts = {
        "threads": len(corpus.threads), "comments": corpus.comments,
        "graphql_points": int(four["points"]), "graphql_requests": int(four["requests"]),
        "rest_requests": int(rest["requests"]),
        "missing_comments": int(seq["missing_comments"] + one["missing_comments"] + four["missing_comments"]
                                + rest["missing_comments"]),
        "missing_threads": int(seq["missing_threads"] + one["missing_threads"] + four["missing_threads"]
                               + rest["missing_threads"]),
        "failed_repos": int(seq["failed"] + one["failed"] + four["failed"] + rest["failed"]),
    }
    notes = [
        f"threads per GraphQL point: {tpp:.1f} (target >= 50)",
        f"threads per REST request: {tpr:.2f}; REST needs {budget_ratio:.1f}x the budget of GraphQL (target >= 30x)",
        f"wall time at {latency_ms:g} ms latency: sequential (1 token, concurrency 1) {seq['wall_s']:.1f}s; "
        f"1 token, concurrency 8 {one['wall_s']:.1f}s; 4 tokens, concurrency 8 {four['wall_s']:.1f}s "
        f"-> {speedup:.1f}x faster than sequential (target >= 5x)",
        f"REST/PyGithub measured at 0 ms latency (request count only): {rest['wall_s']:.1f}s, "
        f"{int(rest['requests'])} requests for {rest_threads} issues+PRs (REST cannot list discussions)",
        f"missing comments across all runs: {counts['missing_comments']} (must be 0)",
    ]
    return StageReport(stage="bench mine", counts=counts, notes=notes)
