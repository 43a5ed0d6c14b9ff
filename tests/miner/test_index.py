from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from miner.fake_github import FakeGitHubThread
from miner.index import run_index
from miner.repo_names import parse_repo
from reprodiag.errors import UserError
from reprodiag.store import Store
from tests.miner.conftest import SECRETS, TOKENS

ROWS = [
    {"paper_url": "https://paperswithcode.com/paper/a", "paper_title": "A", "paper_arxiv_id": "2101.00001",
     "repo_url": "https://github.com/Org/Repo", "is_official": True, "mentioned_in_paper": True,
     "mentioned_in_github": False, "framework": "pytorch"},
    {"paper_url": "https://paperswithcode.com/paper/b", "paper_title": "B", "paper_arxiv_id": None,
     "repo_url": "https://github.com/org/repo.git/tree/master/src", "is_official": False,
     "mentioned_in_paper": False, "mentioned_in_github": True, "framework": "tf"},
    {"paper_url": "https://paperswithcode.com/paper/c", "paper_title": "C", "paper_arxiv_id": None,
     "repo_url": "https://gitlab.com/x/y", "is_official": True, "mentioned_in_paper": False,
     "mentioned_in_github": False, "framework": "none"},
    {"paper_url": "https://paperswithcode.com/paper/d", "paper_title": "D", "paper_arxiv_id": None,
     "repo_url": None, "is_official": True, "mentioned_in_paper": False, "mentioned_in_github": False,
     "framework": None},
    {"paper_url": "https://paperswithcode.com/paper/e", "paper_title": "E", "paper_arxiv_id": None,
     "repo_url": "https://github.com/other/thing", "is_official": False, "mentioned_in_paper": False,
     "mentioned_in_github": False, "framework": "jax"},
]


@pytest.mark.parametrize("fmt", ["json", "json.gz", "parquet", "jsonl"])
def test_dump_formats_normalise_and_dedupe(store: Store, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"links.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(ROWS), encoding="utf-8")
    elif fmt == "json.gz":
        path.write_bytes(gzip.compress(json.dumps(ROWS).encode()))
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n{broken\n", encoding="utf-8")
    else:
        pl.DataFrame(ROWS).write_parquet(path)
    rep = run_index(store, dump=path, repos_file=None, repos=[], official_only=False, min_stars=None,
                    api_url=None, token_file=None)
    assert [r["repo"] for r in store.repos()] == ["Org/Repo", "other/thing"]
    assert rep.counts["non_github"] == 1
    assert rep.counts["malformed"] == (2 if fmt == "jsonl" else 1)
    assert any("row 4" in n or "line 4" in n for n in rep.notes)
    assert rep.counts["links"] == 3
    assert {p["paper_url"] for p in store.papers_for("Org/Repo")} == {ROWS[0]["paper_url"], ROWS[1]["paper_url"]}
    assert next(r for r in store.repos() if r["repo"] == "Org/Repo")["official"] == 1


def test_official_only(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "links.json"
    path.write_text(json.dumps(ROWS), encoding="utf-8")
    rep = run_index(store, dump=path, repos_file=None, repos=[], official_only=True, min_stars=None,
                    api_url=None, token_file=None)
    assert [r["repo"] for r in store.repos()] == ["Org/Repo"]
    assert rep.counts["links"] == 1


def test_repos_file_and_flags(store: Store, tmp_path: Path) -> None:
    f = tmp_path / "repos.txt"
    f.write_text("# list\nfacebookresearch/detr\nhttps://github.com/FacebookResearch/DETR/\n"
                 "git@github.com:google/jax.git\nnot a repo\nhttps://bitbucket.org/a/b\n", encoding="utf-8")
    rep = run_index(store, dump=None, repos_file=f, repos=["github.com/huggingface/transformers/issues"],
                    official_only=False, min_stars=None, api_url=None, token_file=None)
    assert [r["repo"] for r in store.repos()] == ["facebookresearch/detr", "google/jax", "huggingface/transformers"]
    assert rep.counts["malformed"] == 1 and rep.counts["non_github"] == 1
    assert any("line 5" in n for n in rep.notes)


@pytest.mark.parametrize("raw,name", [
    ("owner/name", "owner/name"), (" https://github.com/a-b/c.d.git ", "a-b/c.d"),
    ("http://www.github.com/x/y/tree/master/z", "x/y"), ("github.com/x/y", "x/y"), ("git@github.com:x/y.git", "x/y"),
])
def test_parse_repo_accepts(raw: str, name: str) -> None:
    assert parse_repo(raw).name == name


@pytest.mark.parametrize("raw", ["", "justone", "a/b/c", "-bad/x", "https://github.com/onlyowner", "own er/x", None])
def test_parse_repo_rejects(raw: object) -> None:
    p = parse_repo(raw)
    assert p.name is None and p.reason


def test_empty_or_broken_dump_exits_2(cli, tmp_path: Path) -> None:  # noqa: ANN001
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    proc = cli("index", "--dump", str(empty), workspace=tmp_path / "ws")
    assert proc.returncode == 2
    assert "no usable GitHub repository" in proc.stderr and "Traceback" not in proc.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('[{"repo_url": "https://github.com/a/b"', encoding="utf-8")
    proc = cli("index", "--dump", str(broken), workspace=tmp_path / "ws")
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_empty_dump_raises_user_error(store: Store, tmp_path: Path) -> None:
    p = tmp_path / "d.json"
    p.write_text(json.dumps([{"repo_url": "https://gitlab.com/a/b"}, {"x": 1}]), encoding="utf-8")
    with pytest.raises(UserError, match="no usable"):
        run_index(store, dump=p, repos_file=None, repos=[], official_only=False, min_stars=None,
                  api_url=None, token_file=None)
    assert store.count("repos") == 0


def test_min_stars_fetches_meta_and_resolves_renames(store: Store) -> None:
    meta = {"new/name": {"stars": 500, "renamed_from": ["old/name"], "has_discussions": False},
            "small/repo": {"stars": 10}, "big/repo": {"stars": 300, "archived": True}}
    names = ["old/name", "small/repo", "big/repo", "missing/repo"] + [f"filler/r{i}" for i in range(120)]
    meta.update({f"filler/r{i}": {"stars": 1} for i in range(120)})
    with FakeGitHubThread([], meta, tokens=TOKENS) as srv:
        rep = run_index(store, dump=None, repos_file=None, repos=names, official_only=False, min_stars=200,
                        api_url=srv.url, token_file=None, tokens=SECRETS)
        assert srv.state.stats.graphql_requests == 2  # 124 repositories, 100 per query
    repos = {r["repo"]: r for r in store.repos()}
    assert set(repos) == {"new/name", "big/repo"}
    assert repos["new/name"]["renamed_from"] == "old/name" and repos["new/name"]["has_discussions"] == 0
    assert repos["big/repo"]["archived"] == 1 and repos["big/repo"]["stars"] == 300
    assert rep.counts["not_found"] == 1 and rep.counts["renamed"] == 1 and rep.counts["below_min_stars"] == 121
