"""Work-dir copying, sizing and link-safe reading; metric parsing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reprodiag.schema import RunSpec
from sandbox.metric import MetricError, metric_from_json, metric_from_stdout, read_metric
from sandbox.workdir import copy_source, dir_size, read_inside


def test_copy_keeps_symlinks_as_links_and_skips_special_files(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.py").write_text("print(1)")
    os.symlink("/etc/passwd", src / "pw")
    os.symlink("/etc", src / "etcdir")
    os.mkfifo(src / "fifo")
    n = copy_source(src, tmp_path / "dst")
    dst = tmp_path / "dst"
    assert (dst / "sub" / "a.py").read_text() == "print(1)"
    assert os.readlink(dst / "pw") == "/etc/passwd"
    assert os.path.islink(dst / "etcdir") and os.readlink(dst / "etcdir") == "/etc"
    assert not (dst / "fifo").exists()
    assert n == 4


def test_dir_size_counts_files_not_link_targets(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 100_000)
    os.symlink("/usr", tmp_path / "usr_link")
    assert 100_000 <= dir_size(tmp_path) < 200_000


def test_read_inside_refuses_links_and_escapes(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "m.json").write_text('{"a": 1}')
    assert read_inside(tmp_path, "d/m.json") == b'{"a": 1}'
    os.symlink("/etc/passwd", tmp_path / "link.json")
    os.symlink("/etc", tmp_path / "dl")
    for bad in ("link.json", "dl/passwd", "../x", "/etc/passwd", ""):
        with pytest.raises(ValueError):
            read_inside(tmp_path, bad)
    (tmp_path / "huge.json").write_bytes(b"1" * 2000)
    with pytest.raises(ValueError, match="limit"):
        read_inside(tmp_path, "huge.json", limit=1000)


def test_metric_regex_takes_the_last_match() -> None:
    out = "epoch 1 acc=0.5\nepoch 2 acc=0.75\nfinal acc=0.8\n"
    assert metric_from_stdout(out, r"acc=([0-9.]+)") == 0.8
    assert metric_from_stdout("BLEU = 27.4%", r"BLEU = ([0-9.%]+)") == 27.4
    with pytest.raises(MetricError, match="matched nothing"):
        metric_from_stdout("no numbers here", r"acc=([0-9.]+)")
    with pytest.raises(MetricError, match="not a number"):
        metric_from_stdout("acc=nan-ish", r"acc=(\S+)")
    with pytest.raises(MetricError, match="finite"):
        metric_from_stdout("acc=inf", r"acc=(\S+)")


def test_metric_json_paths(tmp_path: Path) -> None:
    (tmp_path / "out.json").write_text(json.dumps({"test": {"scores": [0.1, {"f1": "0.9"}]}, "flag": True}))
    assert metric_from_json(tmp_path, "out.json:test.scores.1.f1") == 0.9
    assert metric_from_json(tmp_path, "out.json:test.scores.0") == 0.1
    for ref, msg in [("out.json:test.nope", "not found"), ("out.json:flag", "boolean"),
                     ("missing.json:a", "cannot open"), ("out.json:test", "dict")]:
        with pytest.raises(MetricError, match=msg):
            metric_from_json(tmp_path, ref)
    (tmp_path / "bad.json").write_text("{broken")
    with pytest.raises(MetricError, match="not valid JSON"):
        metric_from_json(tmp_path, "bad.json:a")
    run = RunSpec(command="x", metric_json="out.json:test.scores.0", metric_regex="(9)")
    assert read_metric(run, "9", tmp_path) == 0.1  # metric_json wins when both are given
