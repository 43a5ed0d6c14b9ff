"""``reprodiag run``: every stage in order against a loopback fake GitHub, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import datasets

from miner.fake_github import serve_fake_github
from reprodiag.demo import demo_repo_meta
from reprodiag.store import Store
from tests.conftest import run_cli

TOKEN = "ghp_pipelineTestTokenValue000000000000000"


def test_run_without_index_is_a_clear_error(tmp_path: Path):
    proc = run_cli("run", "-o", str(tmp_path / "out"), workspace=tmp_path / "ws", env={"GITHUB_TOKEN": TOKEN})
    assert proc.returncode == 2
    assert "reprodiag index" in proc.stderr and "Traceback" not in proc.stderr


def test_run_all_stages_over_indexed_repos(tmp_path: Path, sample_threads):
    repos = sorted({t.repo for t in sample_threads})[:6]
    threads = [t for t in sample_threads if t.repo in repos]
    ws, out = tmp_path / "ws", tmp_path / "out"
    env = {"GITHUB_TOKEN": TOKEN}
    with serve_fake_github(threads, demo_repo_meta(repos), tokens={TOKEN}) as url:
        args = [a for r in repos for a in ("--repo", r)]
        idx = run_cli("index", *args, workspace=ws, env=env)
        assert idx.returncode == 0, idx.stderr
        proc = run_cli("-q", "run", "--api-url", url, "-o", str(out), "--eval-model", "baseline:rules",
                       "--eval-from", "offline", workspace=ws, env=env)  # the offline reader's eval items, asked
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["stage"] for r in reports] == ["mine", "filter", "extract", "score", "replay", "build", "eval"]
    assert TOKEN not in proc.stdout + proc.stderr
    store = Store(ws)
    assert store.count("threads") == len(threads)
    assert 0 < store.count("records") < len(threads)
    for name in ("sft", "dpo"):
        dd = datasets.load_from_disk(str(out / "datasets" / name))
        assert sum(len(split) for split in dd.values()) > 0
    assert (out / "eval" / "results.json").exists()
    # the token never reached the workspace
    raw = (ws / "reprodiag.sqlite").read_bytes()
    assert TOKEN.encode() not in raw
