"""The miner against an independent GitHub mock (tests/miner/alt_github.py) and its personalities.

Every run must store exactly what the mock serves (every comment, reply, label, state, answer,
category), whatever legitimate choices the server makes; incremental re-syncs pick up new comments.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from miner.graphql_client import ClientSettings
from reprodiag.config import Secret
from reprodiag.schema import Comment, Thread
from reprodiag.store import Store
from tests.miner.alt_github import AltGitHubThread, AltRepo, Personality
from tests.miner.test_sync import assert_same_corpus, mine

TOKEN = "alt-token-1"
SECRETS = [Secret(TOKEN, "token #1")]
FAST = ClientSettings(concurrency=3, floor=0, max_attempts=4, backoff_s=0.01, backoff_max_s=0.05,
                      secondary_min_wait_s=0.05, timeout_s=20)
T0 = datetime(2023, 3, 1, tzinfo=UTC)
REQUESTED = ["alt/vision", "alt/old-name", "alt/no-issues"]


def _comments(tid: str, n: int, *, prefix: str = "IC", replies: dict[int, int] | None = None,
              answer: int | None = None) -> list[Comment]:
    authors = ["alice", None, "dependabot[bot]", "bob"]
    out = []
    for i in range(n):
        reps = [Comment(id=f"DC_{tid}_{i}_r{k}", author=authors[k % 4], body=f"reply {k}",
                        created_at=T0 + timedelta(minutes=i, seconds=k + 1), reactions=k % 3)
                for k in range((replies or {}).get(i, 0))]
        out.append(Comment(id=f"{prefix}_{tid}_{i}", author=authors[i % 4], author_association="CONTRIBUTOR",
                           body=f"comment {i} of {n}: lr 1e-4?", created_at=T0 + timedelta(minutes=i),
                           reactions=i % 5, is_answer=answer == i, replies=reps))
    return out


def _thread(repo: str, number: int, kind: str, days: int, comments: int = 0, **kw: object) -> Thread:
    tid = f"{repo.replace('/', '_')}_{number}"
    prefix = "DC" if kind == "discussion" else "IC"
    cs = _comments(tid, comments, prefix=prefix, replies=kw.pop("replies", None),  # type: ignore[arg-type]
                   answer=kw.pop("answer", None))  # type: ignore[arg-type]
    base: dict[str, object] = {
        "repo": repo, "number": number, "kind": kind, "url": f"https://github.com/{repo}/{number}",
        "title": f"cannot reproduce table {number}", "body": f"paper says 81.8, I get 79.{number}",
        "author": "carol", "author_association": "NONE", "state": "open", "created_at": T0,
        "updated_at": T0 + timedelta(days=days), "comments": cs, "category": "Q&A" if kind == "discussion" else None,
    }
    base.update(kw)
    return Thread(**base)  # type: ignore[arg-type]


def alt_corpus() -> tuple[list[AltRepo], list[Thread]]:
    """Three repositories: a busy one, a renamed one (asked under its old name), one with issues disabled."""
    v, r, q = "alt/vision", "alt/NewName", "alt/no-issues"
    threads = [
        _thread(v, 1, "issue", 1),
        _thread(v, 2, "issue", 9, 1, state="closed", state_reason="completed", closed_at=T0 + timedelta(days=9)),
        _thread(v, 3, "issue", 3, 101, labels=[f"lbl-{i:03d}" for i in range(130)], author=None),
        _thread(v, 4, "issue", 7, 250, state="closed", state_reason="not_planned", closed_at=T0 + timedelta(days=7),
                reactions=12, author="github-actions[bot]"),
        _thread(v, 5, "pull_request", 2, 3, labels=["bug"], state="closed", closed_at=T0 + timedelta(days=2)),
        _thread(v, 6, "pull_request", 8, 0),
        _thread(v, 7, "pull_request", 5, 120),
        _thread(v, 8, "discussion", 4, 6, replies={0: 3, 2: 101, 5: 1}, answer=2, answer_id="DC_alt_vision_8_2",
                state="closed", state_reason="resolved", closed_at=T0 + timedelta(days=4)),
        _thread(v, 9, "discussion", 6, 0, category="Ideas"),
        _thread(v, 10, "discussion", 11, 130, replies={0: 2, 129: 1}),
        _thread(v, 11, "issue", 10, 2, labels=["help wanted", "question"]),
        _thread(r, 1, "issue", 2, 4, labels=["question"]),
        _thread(r, 2, "pull_request", 3, 1),
        _thread(r, 3, "discussion", 1, 2, replies={1: 2}),
        _thread(q, 1, "discussion", 5, 3, replies={0: 1}),
        _thread(q, 2, "discussion", 2, 0),
    ]
    repos = [AltRepo(v, 101), AltRepo(r, 102, old_names=["alt/old-name"]), AltRepo(q, 103, has_issues=False)]
    by = {x.name: x for x in repos}
    for t in threads:
        by[t.repo].threads[(t.kind, t.number)] = t
    return repos, threads


PERSONALITIES = {
    "github-like": Personality(),
    "order-and-since-ignored": Personality(order_ignored=True, since_ignored=True),
    "last-ignored": Personality(tail="ignored"),
    "last-field-error": Personality(tail="field_error"),
    "last-rejected": Personality(tail="rejected"),
    "null-totals": Personality(null_totals=True),
    "disabled-is-error-no-rate-headers": Personality(disabled_error=True, rate_headers=False),
    # no ``node(id:)``: replies are read through their discussions instead
    "node-null": Personality(node="null"),
    "node-not-found": Personality(node="not_found"),
    "node-rejected": Personality(node="rejected"),
    # no ``issue(number:)`` and the like: threads are read as one-thread windows of their lists
    "single-null": Personality(single="null"),
    "single-not-found-and-no-node": Personality(single="not_found", node="not_found"),
}


def _bump(t: Thread, days: int, comment_id: str) -> Thread:
    """``t`` with one new comment (GitHub bumps ``updatedAt``)."""
    prefix = "DC" if t.kind == "discussion" else "IC"
    new = Comment(id=f"{prefix}_{comment_id}", author="dave", body="solved: the paper used beam 5",
                  created_at=T0 + timedelta(days=days))
    return t.model_copy(update={"updated_at": T0 + timedelta(days=days), "comments": [*t.comments, new]})


def _served(t: Thread, p: Personality) -> Thread:
    """What the mock serves of ``t``: without ``totalCount`` no reaction counts are known."""
    if not p.null_totals:
        return t

    def c0(c: Comment) -> Comment:
        return c.model_copy(update={"reactions": 0, "replies": [c0(r) for r in c.replies]})

    return t.model_copy(update={"reactions": 0, "comments": [c0(c) for c in t.comments]})


@pytest.mark.parametrize("name", list(PERSONALITIES))
def test_graphql_mine_stores_exactly_what_the_alt_mock_serves(store: Store, name: str) -> None:
    p = PERSONALITIES[name]
    repos, threads = alt_corpus()
    with AltGitHubThread(repos, tokens=[TOKEN], personality=p) as srv:
        report = mine(store, srv.url, REQUESTED, settings=FAST, tokens=SECRETS)
        assert report.counts["failed"] == 0, [r for r in store.repo_status() if r["status"] == "failed"]
        assert_same_corpus(store, [_served(t, p) for t in threads])
        status = {r["repo"]: r for r in store.repo_status()}
        assert status["alt/NewName"]["status"] == "done" and "alt/NewName" in status["alt/old-name"]["last_error"]
        assert status["alt/no-issues"]["status"] == "done" and "issues disabled" in status["alt/no-issues"]["last_error"]
        # incremental: a new comment on an old issue, on a pull request and on a discussion
        old = {t.id: t for t in threads}
        changed = [_bump(old["alt/vision#3"], 30, "new1"), _bump(old["alt/vision#6"], 31, "new2"),
                   _bump(old["alt/vision#d9"], 32, "new3")]
        for t in changed:
            srv.state.put_thread(t)
        again = mine(store, srv.url, REQUESTED, settings=FAST, tokens=SECRETS)
    assert again.counts["failed"] == 0
    final = [*[t for t in threads if t.id not in {c.id for c in changed}], *changed]
    assert_same_corpus(store, [_served(t, p) for t in final])
    assert again.counts["updated"] == 3


def test_bot_and_ghost_authors_are_stored_as_rest_spells_them(store: Store) -> None:
    repos, threads = alt_corpus()
    with AltGitHubThread(repos, tokens=[TOKEN]) as srv:
        mine(store, srv.url, ["alt/vision"], settings=FAST, tokens=SECRETS)
    t4 = store.get_thread("alt/vision#4")
    assert t4 is not None and t4.author == "github-actions[bot]"
    assert store.get_thread("alt/vision#3").author is None  # ghost: author null
    assert {c.author for c in t4.comments} == {"alice", None, "dependabot[bot]", "bob"}


REST_PERSONALITIES = {
    "github-like": Personality(),
    "page-cap-30-no-state-reason-no-headers": Personality(rest_page_cap=30, rest_no_state_reason=True,
                                                          rate_headers=False),
    "order-and-since-ignored": Personality(order_ignored=True, since_ignored=True),
}


@pytest.mark.parametrize("name", list(REST_PERSONALITIES))
def test_rest_mine_stores_exactly_what_the_alt_mock_serves(store: Store, name: str) -> None:
    p = REST_PERSONALITIES[name]
    repos, threads = alt_corpus()
    want = [t for t in threads if t.kind != "discussion"]
    if p.rest_no_state_reason:  # the server does not say it: nothing to store
        want = [t.model_copy(update={"state_reason": None}) for t in want]
    with AltGitHubThread(repos, tokens=[TOKEN], personality=p) as srv:
        report = mine(store, srv.url, REQUESTED, settings=FAST, tokens=SECRETS, api="rest")
        assert report.counts["failed"] == 0, store.repo_status()
        assert srv.state.stats.completions == 0, "PyGithub lazily completed objects (one request each)"
        assert_same_corpus(store, want)
        status = {r["repo"]: r for r in store.repo_status()}
        assert status["alt/no-issues"]["status"] == "skipped"
        assert status["alt/NewName"]["status"] == "done"
        old = {t.id: t for t in want}
        changed = [_bump(old["alt/vision#4"], 30, "new1"), _bump(old["alt/vision#6"], 31, "new2")]
        for t in changed:
            srv.state.put_thread(t)
        before = srv.state.stats.rest
        again = mine(store, srv.url, REQUESTED, settings=FAST, tokens=SECRETS, api="rest")
        resync = srv.state.stats.rest - before
    assert again.counts["failed"] == 0
    if p.rest_no_state_reason:
        changed = [t.model_copy(update={"state_reason": None}) for t in changed]
    assert_same_corpus(store, [*[t for t in want if t.id not in {c.id for c in changed}], *changed])
    # one listing per repository with issues, the comments of the two changed threads (#4 has 251), and
    # nothing for unchanged threads listed again (``since`` is inclusive; a server may ignore it)
    assert resync <= 2 + 2 + math.ceil(251 / p.rest_page_cap) + 1


def test_rest_and_graphql_agree_on_the_alt_mock(tmp_path) -> None:  # noqa: ANN001
    repos, threads = alt_corpus()
    g, r = Store(tmp_path / "g"), Store(tmp_path / "r")
    with AltGitHubThread(repos, tokens=[TOKEN]) as srv:
        mine(g, srv.url, REQUESTED, settings=FAST, tokens=SECRETS, discussions=False)
        mine(r, srv.url, REQUESTED, settings=FAST, tokens=SECRETS, api="rest")
    gt = {t.id: t for t in g.iter_threads()}
    rt = {t.id: t for t in r.iter_threads()}
    assert gt == rt
    assert set(gt) == {t.id for t in threads if t.kind != "discussion"}


@pytest.mark.parametrize("api", ["graphql", "rest"])
def test_server_laid_out_like_api_github_com_is_found_from_its_base_url(store: Store, api: str) -> None:
    """``--api-url http://host`` of a server with ``/graphql`` and ``/repos`` at its root (no Enterprise paths)."""
    repos, threads = alt_corpus()
    want = [t for t in threads if api == "graphql" or t.kind != "discussion"]
    with AltGitHubThread(repos, tokens=[TOKEN], personality=Personality(root_layout=True)) as srv:
        report = mine(store, srv.url, REQUESTED, settings=FAST, tokens=SECRETS, api=api)
    assert report.counts["failed"] == 0
    assert_same_corpus(store, want)


@pytest.mark.parametrize("api", ["graphql", "rest"])
def test_a_403_that_is_not_a_rate_limit_fails_at_once_with_its_message(store: Store, api: str) -> None:
    """403 "Resource not accessible" is a refusal, not a secondary limit: no waiting and retrying for hours."""
    import time

    repos, _threads = alt_corpus()
    slow = ClientSettings(concurrency=2, floor=0, max_attempts=2, backoff_s=0.01, backoff_max_s=0.05,
                          secondary_min_wait_s=5, max_secondary=3, timeout_s=20)
    with AltGitHubThread(repos, tokens=[TOKEN], personality=Personality(forbidden=True)) as srv:
        start = time.monotonic()
        report = mine(store, srv.url, ["alt/vision"], settings=slow, tokens=SECRETS, api=api)
        took = time.monotonic() - start
    assert took < 4, took  # the old behaviour waited 5 + 10 + 20 s as for a secondary limit
    assert report.counts["failed"] == 1
    status = {r["repo"]: r for r in store.repo_status()}
    assert "403" in status["alt/vision"]["last_error"] and "secondary" not in status["alt/vision"]["last_error"]


@pytest.mark.parametrize("api", ["graphql", "rest"])
def test_names_asked_in_another_case_are_stored_and_reported_in_githubs_spelling(store: Store, api: str) -> None:
    repos, threads = alt_corpus()
    with AltGitHubThread(repos, tokens=[TOKEN]) as srv:
        report = mine(store, srv.url, ["ALT/VISION", "Alt/Old-Name"], settings=FAST, tokens=SECRETS, api=api)
    assert report.counts["done"] == 2 and report.counts["renamed"] == 1
    assert {t.repo for t in store.iter_threads()} == {"alt/vision", "alt/NewName"}
    status = {r["repo"]: r["status"] for r in store.repo_status()}
    assert status == {"alt/vision": "done", "alt/NewName": "done", "Alt/Old-Name": "skipped"}


def test_incremental_pass_does_not_stop_early_on_a_server_that_ignores_order_by(store: Store) -> None:
    """Newest-created first looks like ``UPDATED_AT DESC`` on a page when old threads are also the least
    recently updated: the pass must not stop at the first old thread while the oldest thread, updated now,
    sits on a later page."""
    repo = AltRepo("alt/many-prs", 201)
    prs = [_thread(repo.name, n, "pull_request", n) for n in range(1, 41)]
    for t in prs:
        repo.threads[(t.kind, t.number)] = t
    with AltGitHubThread([repo], tokens=[TOKEN], personality=Personality(order_ignored=True,
                                                                           default_desc=True)) as srv:
        mine(store, srv.url, [repo.name], settings=FAST, tokens=SECRETS, discussions=False)
        assert_same_corpus(store, prs)
        changed = _bump(prs[0], 90, "late")
        srv.state.put_thread(changed)
        again = mine(store, srv.url, [repo.name], settings=FAST, tokens=SECRETS, discussions=False)
    assert again.counts["updated"] == 1
    assert_same_corpus(store, [changed, *prs[1:]])


def test_rest_renamed_repository_with_only_closed_issues(store: Store) -> None:
    """PyGithub follows GitHub's 301 for an old name without the query string (``state=all`` lost): a
    renamed repository with no open issue must not come back empty."""
    repo = AltRepo("alt/closed-now", 301, old_names=["alt/closed-then"])
    threads = [_thread(repo.name, n, "issue", n, 2, state="closed", state_reason="completed",
                       closed_at=T0 + timedelta(days=n)) for n in (1, 2)]
    for t in threads:
        repo.threads[(t.kind, t.number)] = t
    with AltGitHubThread([repo], tokens=[TOKEN]) as srv:
        report = mine(store, srv.url, ["alt/closed-then"], settings=FAST, tokens=SECRETS, api="rest")
    assert report.counts["failed"] == 0 and report.counts["renamed"] == 1
    assert_same_corpus(store, threads)


def test_a_server_that_repeats_pages_fails_the_repository_instead_of_looping(store: Store) -> None:
    """``after`` ignored and no backward paging: the second page of a long comment list is the first again.
    The repository fails with a clear note (nothing partial stored for it); the others are mined."""
    repos, threads = alt_corpus()
    with AltGitHubThread(repos, tokens=[TOKEN], personality=Personality(after_ignored=True, tail="field_error")) \
            as srv:
        report = mine(store, srv.url, REQUESTED, settings=FAST, tokens=SECRETS)
    status = {r["repo"]: r for r in store.repo_status()}
    assert report.counts["failed"] == 1 and status["alt/vision"]["status"] == "failed"
    assert "did not advance" in status["alt/vision"]["last_error"]
    got = {t.id: t for t in store.iter_threads()}
    want = {t.id: t for t in threads if t.repo != "alt/vision"}
    assert all(got[k] == want[k] for k in want)
    assert all(len(t.comments) <= 100 or t.id not in got for t in threads)  # no truncated long thread stored


def test_issue_updated_during_a_pass_over_offset_cursors_loses_no_thread(store: Store) -> None:
    """Offset cursors (not keyset): an issue on the first page updated mid-pass moves to the end of the
    ``UPDATED_AT ASC`` list and every later issue shifts back by one, so the next page starts one too far.
    The miner sees that issue twice and restarts its next pass from where it first was."""
    repo = AltRepo("alt/busy", 401, has_discussions=False)
    issues = [_thread(repo.name, n, "issue", n) for n in range(1, 231)]
    for t in issues:
        repo.threads[(t.kind, t.number)] = t
    moved = _bump(issues[4], 400, "mid-pass")
    one_at_a_time = ClientSettings(concurrency=1, floor=0, max_attempts=4, backoff_s=0.01, backoff_max_s=0.05)
    with AltGitHubThread([repo], tokens=[TOKEN]) as srv:
        srv.state.before_query = lambda n: srv.state.put_thread(moved) if n == 2 else None
        mine(store, srv.url, [repo.name], settings=one_at_a_time, tokens=SECRETS, prs=False, discussions=False)
        srv.state.before_query = None
        mine(store, srv.url, [repo.name], settings=one_at_a_time, tokens=SECRETS, prs=False, discussions=False)
    assert_same_corpus(store, [moved, *issues[:4], *issues[5:]])


@pytest.mark.parametrize("name", ["github-like", "null-totals", "disabled-is-error-no-rate-headers"])
def test_index_min_stars_reads_the_alt_mock(store: Store, name: str) -> None:
    from miner.index import run_index

    repos, _threads = alt_corpus()
    with AltGitHubThread(repos, tokens=[TOKEN], personality=PERSONALITIES[name]) as srv:
        report = run_index(store, dump=None, repos_file=None, repos=[*REQUESTED, "alt/missing"], official_only=False,
                           min_stars=1, api_url=srv.url, token_file=None, tokens=SECRETS)
    assert report.counts["not_found"] == 1
    idx = {r["repo"]: r for r in store.repos()}
    assert set(idx) == {"alt/vision", "alt/NewName", "alt/no-issues"}
    assert idx["alt/NewName"]["renamed_from"] == "alt/old-name"
    assert idx["alt/no-issues"]["has_issues"] == 0 and idx["alt/no-issues"]["has_discussions"] == 1
    p = PERSONALITIES[name]
    assert idx["alt/vision"]["meta"].get("issues_count") == (None if p.null_totals else 5)
    # a disabled feature answered with an error: the repository is still indexed, its totals unknown
    assert idx["alt/no-issues"]["meta"].get("discussions_count") == (None if p.null_totals or p.disabled_error
                                                                      else 2)


def test_a_mine_killed_early_under_faults_resumes_for_what_is_left(tmp_path) -> None:  # noqa: ANN001
    """Against this mock's offset cursors and its own cost count, with 5% 502s and 2% secondary limits: a mine
    killed at its first committed page resumes for at most a fresh crawl's points plus 20% (the server's own
    count) and ends with the same threads."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from miner.synthetic import synthetic_corpus
    from tests.conftest import REPO_ROOT
    from tests.miner.test_sync import _db_progress, _export

    c = synthetic_corpus(1200, 12, seed=5, big_threads=1, discussion_share=0.15)
    repos = [AltRepo(name, 200 + i) for i, name in enumerate(c.repos_meta)]
    by = {r.name: r for r in repos}
    for t in c.threads:
        by[t.repo].threads[(t.kind, t.number)] = t
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRODIAG_", "GITHUB_TOKEN"))}
    env["GITHUB_TOKENS"] = TOKEN

    def cmd(ws, url: str) -> list[str]:  # noqa: ANN001
        return [sys.executable, "-m", "reprodiag", "-q", "-w", str(ws), "mine", "--api-url", url, "--include-prs",
                "--concurrency", "4", *[a for r in by for a in ("--repos", r)]]

    flaky = Personality(p_502=0.05, p_secondary=0.02, fault_seed=5, latency_ms=100)
    with AltGitHubThread(repos, tokens=[TOKEN], personality=flaky) as srv:
        fresh = subprocess.run(cmd(tmp_path / "fresh", srv.url), env=env, cwd=REPO_ROOT, capture_output=True,
                               text=True, timeout=600)
        assert fresh.returncode == 0, fresh.stderr[-2000:]
        fresh_points = srv.state.stats.points
        killed = tmp_path / "killed"
        proc = subprocess.Popen(cmd(killed, srv.url), env=env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while proc.poll() is None:  # the kill point is progress (the first committed page), not a time
            if _db_progress(killed)[0] >= 1:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.002)
        proc.wait(timeout=600)
        assert proc.returncode == -signal.SIGKILL, "the mine ended before its first page was committed"
        time.sleep(0.5)  # what the killed mine left in flight is answered (and charged) before counting
        before = srv.state.stats.points
        resumed = subprocess.run(cmd(killed, srv.url), env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                                 timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        resumed_points = srv.state.stats.points - before
        assert srv.state.stats.faults > 0
    assert _export(killed) == _export(tmp_path / "fresh")
    assert _export(killed).count("\n") + 1 == len(c.threads)
    assert resumed_points <= 1.2 * fresh_points, (resumed_points, fresh_points)


def test_a_thread_that_grows_after_it_was_listed_is_read_in_full_pages(store: Store) -> None:
    """Follow-up first pages are sized to the counts the list gave; a thread that gained 150 comments after it was
    listed is read on in pages of 100, not of the small first page's size."""
    repos, threads = alt_corpus()
    small = next(t for t in threads if t.repo == "alt/vision" and t.number == 2)  # 1 comment when listed
    grown = small.model_copy(update={"comments": small.comments + _comments("grown", 150)})
    with AltGitHubThread(repos, tokens=[TOKEN]) as srv:
        def grow(n: int) -> None:
            if n == 2:  # after the list pages, before the follow-ups
                srv.state.put_thread(grown)

        srv.state.before_query = grow
        report = mine(store, srv.url, REQUESTED, settings=FAST, tokens=SECRETS)
        sent = list(srv.state.stats.queries)
    assert report.counts["failed"] == 0
    got = store.get_thread(grown.id)
    assert got is not None and len(got.comments) == 151
    assert sum("first: 10," in q and "after:" in q for q in sent) == 0  # no small page after the first
