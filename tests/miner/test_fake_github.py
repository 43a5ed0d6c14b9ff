from __future__ import annotations

import json
import urllib.error
import urllib.request

from miner.fake_github import FakeGitHubThread, serve_fake_github
from tests.miner.conftest import TOKENS


def _post(url: str, query: str, token: str | None) -> tuple[int, dict]:
    req = urllib.request.Request(url + "/api/graphql", data=json.dumps({"query": query}).encode(), method="POST",
                                 headers={"Authorization": f"bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_invalid_query_gets_github_errors_and_unknown_token_401(corpus) -> None:  # noqa: ANN001
    with FakeGitHubThread(corpus.threads, corpus.repos_meta, tokens=TOKENS) as srv:
        status, doc = _post(srv.url, "{ repository(owner:\"a\", name:\"b\") { bogus } }", TOKENS[0])
        assert status == 200 and doc["errors"] and "bogus" in doc["errors"][0]["message"]
        status, doc = _post(srv.url, "{ rateLimit { cost } }", "nope")
        assert status == 401 and doc["message"] == "Bad credentials"
        status, doc = _post(srv.url, "{ repository(owner:\"no\", name:\"pe\") { nameWithOwner } }", TOKENS[1])
        assert doc["data"]["repository"] is None and doc["errors"][0]["type"] == "NOT_FOUND"
        assert srv.state.stats.invalid_queries == 1


def test_serve_fake_github_executes_real_queries(corpus) -> None:  # noqa: ANN001
    repo = next(iter(corpus.repos_meta))
    owner, name = repo.split("/")
    q = ("{ rateLimit { cost remaining } repository(owner:\"" + owner + "\", name:\"" + name + "\") { issues("
         "first: 2, orderBy: {field: CREATED_AT, direction: ASC}) { totalCount nodes { number comments(first: 1) "
         "{ totalCount } } } } }")
    with serve_fake_github(corpus.threads, corpus.repos_meta) as url:
        status, doc = _post(url, q, None)
        with urllib.request.urlopen(url + "/__stats", timeout=10) as resp:
            stats = json.loads(resp.read())
    issues = sorted((t for t in corpus.threads if t.repo == repo and t.kind == "issue"),
                    key=lambda t: (t.created_at, t.number))
    conn = doc["data"]["repository"]["issues"]
    assert status == 200 and conn["totalCount"] == len(issues)
    assert [n["number"] for n in conn["nodes"]] == [t.number for t in issues[:2]]
    assert conn["nodes"][0]["comments"]["totalCount"] == len(issues[0].comments)
    assert doc["data"]["rateLimit"]["cost"] == 1 and stats["total_points"] == 1


def test_fake_in_its_own_process_serves_and_counts(corpus, tmp_path) -> None:  # noqa: ANN001
    import subprocess
    import sys

    from miner.fake_process import FakeGitHubProcess
    from tests.conftest import REPO_ROOT

    repo = next(iter(corpus.repos_meta))
    owner, name = repo.split("/")
    with FakeGitHubProcess(corpus.threads, corpus.repos_meta, tokens=TOKENS) as srv:
        status, doc = _post(srv.url, "{ repository(owner:\"" + owner + "\", name:\"" + name + "\") "
                            "{ issues { totalCount } } }", TOKENS[0])
        assert status == 200
        assert doc["data"]["repository"]["issues"]["totalCount"] == sum(
            1 for t in corpus.threads if t.repo == repo and t.kind == "issue")
        status, _doc = _post(srv.url, "{ rateLimit { cost } }", "not-a-token")
        assert status == 401
        assert srv.stats()["total_points"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"repo": "a/b"}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "miner.fake_github", "--corpus", str(bad)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "line 1" in proc.stderr and "Traceback" not in proc.stderr


def test_fake_with_worker_processes_answers_like_the_serving_thread(corpus, tmp_path) -> None:  # noqa: ANN001
    """``--workers``: queries run in forked processes; budgets, rateLimit figures and rejections stay exact."""
    from miner.fake_process import FakeGitHubProcess
    from miner.graphql_client import ClientSettings
    from miner.sync import run_mine
    from reprodiag.config import Secret
    from reprodiag.store import Store
    from tests.miner.test_sync import assert_same_corpus

    repo = next(iter(corpus.repos_meta))
    owner, name = repo.split("/")
    q = ("query { rl: rateLimit { left: remaining cost used } ...R } fragment R on Query { repository(owner: \""
         + owner + "\", name: \"" + name + "\") { issues(first: 3) { nodes { number title } } } }")
    with FakeGitHubThread(corpus.threads, corpus.repos_meta, tokens=TOKENS) as inproc:
        _s, want = _post(inproc.url, q, TOKENS[0])
    with FakeGitHubProcess(corpus.threads, corpus.repos_meta, tokens=TOKENS, workers=2) as srv:
        answers = [_post(srv.url, q, TOKENS[0])[1] for _ in range(3)]
        status, bad = _post(srv.url, "{ rateLimit { bogus } }", TOKENS[0])
        store = Store(tmp_path / "ws")
        report = run_mine(store, repos=list(corpus.repos_meta), api="graphql", api_url=srv.url, token_file=None,
                          include_prs=True, include_discussions=True, concurrency=4,
                          tokens=[Secret(t, f"token #{i}") for i, t in enumerate(TOKENS, start=1)],
                          settings=ClientSettings(concurrency=4, floor=0, backoff_s=0.01))
        stats = srv.stats()
    assert answers[0]["data"]["repository"] == want["data"]["repository"]
    left = [a["data"]["rl"]["left"] for a in answers]
    assert left == [4999, 4998, 4997] and answers[2]["data"]["rl"] == {"left": 4997, "cost": 1, "used": 3}
    assert status == 200 and bad["errors"][0]["type"] == "INVALID_QUERY" and stats["invalid_queries"] == 1
    assert report.counts["failed"] == 0 and stats["total_points"] == report.counts["points"] + 3
    assert_same_corpus(store, corpus.threads)
