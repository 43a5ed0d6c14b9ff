from __future__ import annotations

from pathlib import Path

from miner.fake_github import FakeGitHubThread, Faults
from reprodiag.store import Store
from tests.miner.conftest import FAST
from tests.miner.test_sync import mine


def test_rest_path_matches_graphql(tmp_path: Path, corpus) -> None:  # noqa: ANN001
    g, r = Store(tmp_path / "g"), Store(tmp_path / "r")
    with FakeGitHubThread(corpus.threads, corpus.repos_meta, faults=Faults(seed=9, p_502=0.03, p_reset=0.02)) as srv:
        mine(g, srv.url, list(corpus.repos_meta), discussions=False)
        rep = mine(r, srv.url, list(corpus.repos_meta), api="rest", settings=FAST)
        assert srv.state.stats.rest_requests > 0
    assert rep.counts["failed"] == 0
    assert "REST cannot fetch discussions" in " ".join(rep.notes)
    gt = {t.id: t for t in g.iter_threads()}
    rt = {t.id: t for t in r.iter_threads()}
    assert set(gt) == set(rt) == {t.id for t in corpus.threads if t.kind != "discussion"}
    assert all(gt[k] == rt[k] for k in gt)


def test_rest_missing_repo_skipped_and_rerun_incremental(store: Store, corpus) -> None:  # noqa: ANN001
    repo = next(iter(corpus.repos_meta))
    threads = [t for t in corpus.threads if t.repo == repo]
    with FakeGitHubThread(threads, {repo: {}, "gone/x": {"missing": True}}) as srv:
        mine(store, srv.url, [repo, "gone/x"], api="rest")
        first = srv.state.stats.rest_requests
        mine(store, srv.url, [repo], api="rest")
        second = srv.state.stats.rest_requests - first
    st = {s["repo"]: s for s in store.repo_status()}
    assert st["gone/x"]["status"] == "skipped" and st[repo]["status"] == "done"
    assert second < first / 3


def test_rest_spreads_one_repository_over_tokens_by_budget(store: Store, corpus) -> None:  # noqa: ANN001
    """One repository needs more requests than one token's budget: the pool moves to the other token."""
    from tests.miner.conftest import SECRETS, TOKENS

    repo = next(iter(corpus.repos_meta))
    threads = [t for t in corpus.threads if t.repo == repo]
    with FakeGitHubThread(threads, corpus.repos_meta, tokens=TOKENS, faults=Faults(rest_budget=30)) as srv:
        rep = mine(store, srv.url, [repo], api="rest", settings=FAST, tokens=SECRETS)
        per_token = srv.state.stats_doc()["requests"]
    assert rep.counts["failed"] == 0 and rep.counts["requests"] > 30
    assert set(per_token) == {"token #1", "token #2"} and all(v <= 31 for v in per_token.values())
    assert {t.id for t in store.iter_threads()} == {t.id for t in threads if t.kind != "discussion"}
