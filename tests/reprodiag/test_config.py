from __future__ import annotations

import pytest

from reprodiag.config import ApiUrls, Secret, api_key, github_tokens, workspace_path
from reprodiag.errors import UserError


def test_tokens_from_env_list_dedupe_and_labels():
    toks = github_tokens(env={"GITHUB_TOKENS": "aaa, bbb,aaa,", "GITHUB_TOKEN": "zzz"})
    assert [t.get() for t in toks] == ["aaa", "bbb"]
    assert [t.label for t in toks] == ["token #1", "token #2"]


def test_single_token_and_none():
    assert [t.get() for t in github_tokens(env={"GITHUB_TOKEN": "x"})] == ["x"]
    assert github_tokens(env={}) == []


def test_token_file_wins_and_skips_comments(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("# app installation tokens\nt1\n\nt2\n")
    assert [t.get() for t in github_tokens(f, env={"GITHUB_TOKEN": "x"})] == ["t1", "t2"]


def test_token_file_errors_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        github_tokens(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n")
    with pytest.raises(UserError, match="holds no token"):
        github_tokens(empty)


def test_secret_never_prints_its_value():
    s = Secret("ghp_supersecretvalue", "token #3")
    assert "supersecret" not in repr(s) and "supersecret" not in str(s) and "supersecret" not in f"{s}"
    assert "token #3" in repr(s)
    assert s.get() == "ghp_supersecretvalue"


def test_api_key_missing_is_a_clear_error():
    with pytest.raises(UserError, match="OPENAI_API_KEY is not set"):
        api_key("OPENAI_API_KEY", env={})
    assert api_key("X", env={}, required=False) is None


def test_api_urls_layouts():
    gh = ApiUrls.from_base(None)
    assert (gh.rest, gh.graphql) == ("https://api.github.com", "https://api.github.com/graphql")
    ent = ApiUrls.from_base("https://ghe.corp/api/v3/")
    assert (ent.rest, ent.graphql) == ("https://ghe.corp/api/v3", "https://ghe.corp/api/graphql")
    assert ApiUrls.from_base("https://ghe.corp/api/graphql") == ent == ApiUrls.from_base("https://ghe.corp")
    root = ApiUrls.from_base("http://127.0.0.1:9000/graphql")
    assert (root.rest, root.graphql) == ("http://127.0.0.1:9000", "http://127.0.0.1:9000/graphql")
    with pytest.raises(UserError):
        ApiUrls.from_base("ftp://x")


def test_workspace_resolution(monkeypatch):
    monkeypatch.delenv("REPRODIAG_WORKSPACE", raising=False)
    assert str(workspace_path(None)) == "reprodiag-workspace"
    monkeypatch.setenv("REPRODIAG_WORKSPACE", "/tmp/elsewhere")
    assert str(workspace_path(None)) == "/tmp/elsewhere"
    assert str(workspace_path("/x")) == "/x"
