"""The console entry point: help, one-line user errors with exit 2, exports after the demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprodiag.schema import parse_record, parse_thread

COMMANDS = ["index", "mine", "filter", "extract", "score", "replay", "build", "eval", "grade", "run", "demo",
            "export", "bench"]


def test_help_lists_every_command(cli):
    proc = cli("--help")
    assert proc.returncode == 0
    for name in COMMANDS:
        assert f"  {name} " in proc.stdout, name


@pytest.mark.parametrize("args", [
    ["mine", "--bogus-flag"],
    ["score", "--threshold", "99"],
    ["export", "nothing"],
    ["mine", "--concurrency", "zero"],
    ["replay", "--backend", "vmware"],
])
def test_bad_flags_exit_2_with_one_line(cli, tmp_path, args):
    proc = cli(*args, workspace=tmp_path / "ws")
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error"), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("content", ["{not json\n", '{"repo": "a/b"}\n', "[1,2,3]\n", "\x00\xff garbage"])
def test_malformed_input_file_is_one_line_exit_2(cli, tmp_path, content):
    f = tmp_path / "threads.jsonl"
    f.write_bytes(content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content)
    proc = cli("filter", "--input", str(f), "--output", str(tmp_path / "d.jsonl"))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "threads.jsonl" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_unreadable_input_file_exit_2(cli, tmp_path):
    proc = cli("score", "--input", str(tmp_path / "missing.jsonl"), "--output", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2 and "missing.jsonl" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_repo_spec_exit_2(cli, tmp_path):
    proc = cli("mine", "--repos", "not a repo!!", workspace=tmp_path / "ws", env={"GITHUB_TOKEN": "x"})
    assert proc.returncode == 2 and "not a repo" in proc.stderr and "Traceback" not in proc.stderr


def test_export_without_workspace_is_clear(cli, tmp_path):
    proc = cli("export", "threads", "-o", str(tmp_path / "t.jsonl"), workspace=tmp_path / "nope")
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_exports_after_demo_are_valid_documents(cli, demo_workspace: Path, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    r = tmp_path / "r.jsonl"
    assert cli("export", "threads", "--format", "jsonl", "-o", str(t), workspace=demo_workspace).returncode == 0
    assert cli("export", "records", "--format", "jsonl", "-o", str(r), workspace=demo_workspace).returncode == 0
    threads = [parse_thread(json.loads(line)) for line in t.read_text(encoding="utf-8").splitlines()]
    records = [parse_record(json.loads(line)) for line in r.read_text(encoding="utf-8").splitlines()]
    assert len(threads) >= 60 and len(records) >= 20
    assert len({x.id for x in threads}) == len(threads)
    p = tmp_path / "r.parquet"
    assert cli("export", "records", "--format", "parquet", "-o", str(p), workspace=demo_workspace).returncode == 0
    import polars as pl

    assert pl.read_parquet(p).height == len(records)
