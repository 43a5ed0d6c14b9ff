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
