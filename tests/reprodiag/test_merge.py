"""reprodiag merge: shard + merge equals one unsharded mine; idempotent; newest content wins; clear errors."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from miner.fake_github import FakeGitHubThread
from miner.sharding import Shard
from miner.sync import run_mine
from miner.synthetic import Corpus, synthetic_corpus
from reprodiag.errors import UserError
from reprodiag.merge import merge_workspaces
from reprodiag.schema import Record, Thread
from reprodiag.store import Store
from tests.miner.conftest import FAST, SECRETS, TOKENS


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return synthetic_corpus(60, 6, seed=5, big_threads=1, discussion_share=0.2)  # parts of 3: 0, 4 and 2 repos


def _mine(ws: Path, url: str, repos: list[str], shard: Shard | None = None) -> Store:
    store = Store(ws)
    run_mine(store, repos=repos, api="graphql", api_url=url, token_file=None, include_prs=True,
             include_discussions=True, concurrency=FAST.concurrency, tokens=SECRETS, settings=FAST, shard=shard)
    return store


def _threads(store: Store) -> list[str]:
    return sorted(t.model_dump_json() for t in store.iter_threads())


def _checkpoints(store: Store) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in store.query(
        "SELECT repo, kind, cursor, high_water, complete FROM sync_checkpoints"))


def test_shard_and_merge_equal_one_unsharded_mine(tmp_path: Path, corpus) -> None:  # noqa: ANN001
    repos = list(corpus.repos_meta)
    with FakeGitHubThread(corpus.threads, corpus.repos_meta, tokens=TOKENS) as srv:
        whole = _mine(tmp_path / "whole", srv.url, repos)
        parts = [_mine(tmp_path / f"part{i}", srv.url, repos, Shard(i, 3)) for i in (1, 2, 3)]
    sizes = [p.count("threads") for p in parts]
    assert sum(sizes) == whole.count("threads") and max(sizes) < whole.count("threads")  # really split
    merged = Store(tmp_path / "merged")
    rep = merge_workspaces(merged, [p.root for p in parts])
    assert _threads(merged) == _threads(whole)
    assert _checkpoints(merged) == _checkpoints(whole)
    assert {r["repo"] for r in merged.repo_status()} == set(repos)
    assert rep.counts["threads_after"] == whole.count("threads")
    again = merge_workspaces(merged, [p.root for p in parts])  # merging again adds nothing
    assert _threads(merged) == _threads(whole) and again.counts["threads_after"] == again.counts["threads_before"]
    for s in (whole, merged, *parts):
        s.close()


def _put(ws: Path, thread: Thread) -> Store:
    s = Store(ws)
    s.upsert_threads([thread])
    return s


def test_the_newest_content_of_a_thread_wins_in_either_order(tmp_path: Path, corpus) -> None:  # noqa: ANN001
    t = corpus.threads[0]
    newer = t.model_copy(update={"body": "edited later", "updated_at": t.updated_at + timedelta(days=3)})
    old_ws, new_ws = _put(tmp_path / "old", t), _put(tmp_path / "new", newer)
    for order in ((old_ws, new_ws), (new_ws, old_ws)):
        target = Store(tmp_path / f"t{id(order)}")
        merge_workspaces(target, [s.root for s in order])
        assert target.get_thread(t.id).body == "edited later"
        assert target.count("threads") == 1
        target.close()
    into_newer = new_ws
    merge_workspaces(into_newer, [old_ws.root])  # an older copy never overwrites newer content
    assert into_newer.get_thread(t.id).body == "edited later"


def test_derived_rows_are_added_not_overwritten_and_scored_is_left_to_score(tmp_path: Path, corpus) -> None:  # noqa: ANN001
    a, b = Store(tmp_path / "a"), Store(tmp_path / "b")
    a.upsert_threads(corpus.threads[:3])
    b.upsert_threads(corpus.threads[2:6])
    rec = Record(thread_id=corpus.threads[3].id, repo=corpus.threads[3].repo)
    b.put_records([rec])
    b._conn.execute("INSERT INTO scored(thread_id, repo, keep, doc) VALUES ('x/y#1', 'x/y', 1, '{}')")
    b.cache_put("some-key", "v-b")
    a.cache_put("some-key", "v-a")
    rep = merge_workspaces(a, [b.root])
    assert a.count("threads") == 6 and a.count("records") == 1 and a.count("scored") == 0
    assert a.cache_get("some-key") == "v-a"  # the target's row stays
    assert any("run `reprodiag score`" in n for n in rep.notes)


def test_bad_sources_are_user_errors_and_change_nothing(tmp_path: Path, corpus) -> None:  # noqa: ANN001
    target = Store(tmp_path / "t")
    target.upsert_threads(corpus.threads[:2])
    (tmp_path / "empty").mkdir()
    for sources, msg in (([], "at least one"), ([tmp_path / "nope"], "not a workspace"),
                         ([tmp_path / "empty"], "not a workspace"), ([target.root], "target workspace itself")):
        with pytest.raises(UserError, match=msg):
            merge_workspaces(target, sources)
    good = _put(tmp_path / "good", corpus.threads[5])
    with pytest.raises(UserError, match="twice"):
        merge_workspaces(target, [good.root, good.root])
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "reprodiag.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UserError):
        merge_workspaces(target, [good.root, broken])
    assert target.count("threads") == 2


def test_cli_shard_and_merge(cli, tmp_path: Path, corpus) -> None:  # noqa: ANN001
    bad = cli("mine", "--shard", "0/2", "--repos", "a/b", workspace=tmp_path / "w")
    assert bad.returncode == 2 and "--shard" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    a = _put(tmp_path / "a", corpus.threads[0])
    b = _put(tmp_path / "b", corpus.threads[1])
    a.close()
    b.close()
    ok = cli("-q", "merge", str(tmp_path / "a"), str(tmp_path / "b"), workspace=tmp_path / "m")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout.strip().splitlines()[-1])["counts"]["threads_after"] == 2
    missing = cli("merge", str(tmp_path / "nope"), workspace=tmp_path / "m")
    assert missing.returncode == 2 and "not a workspace" in missing.stderr and "Traceback" not in missing.stderr


def test_an_llm_readers_record_wins_over_the_offline_readers_in_either_order(tmp_path: Path, corpus) -> None:  # noqa: ANN001
    from reprodiag.schema import ExtractorInfo

    t = corpus.threads[0]
    offline = Record(thread_id=t.id, repo=t.repo, root_cause="The seed.", extractor=ExtractorInfo(backend="rules"))
    llm = Record(thread_id=t.id, repo=t.repo, root_cause="The learning rate was not scaled to 8 GPUs.",
                 extractor=ExtractorInfo(backend="anthropic", model="claude-haiku-4-5"))
    other_llm = llm.model_copy(update={"root_cause": "Another reading.",
                                       "extractor": ExtractorInfo(backend="openai", model="gpt-5-mini")})
    for first, second, kept in ((offline, llm, llm), (llm, offline, llm), (llm, other_llm, llm)):
        a, b = Store(tmp_path / f"a-{id(first)}-{id(second)}"), Store(tmp_path / f"b-{id(first)}-{id(second)}")
        for s, rec in ((a, first), (b, second)):
            s.upsert_threads([t])
            s.put_records([rec])
        merge_workspaces(a, [b.root])
        got = list(a.iter_records())
        assert [r.root_cause for r in got] == [kept.root_cause], (first.extractor, second.extractor)
        a.close()
        b.close()
