"""The offline demo end to end, and its resumability under SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO_ROOT, run_cli

STABLE_KEYS = ("repos_indexed", "threads", "relevant", "records", "kept", "dropped", "resolved_kept", "verdicts",
               "datasets", "eval")


def summary(ws: Path) -> dict:
    data = json.loads((ws / "demo-out" / "summary.json").read_text())
    return {k: data[k] for k in STABLE_KEYS}


def test_demo_runs_every_stage(demo_workspace: Path):
    s = summary(demo_workspace)
    assert s["repos_indexed"] >= 10
    assert s["threads"] >= 60
    assert 0 < s["relevant"] < s["threads"]  # the filter rejected the unrelated threads
    assert s["records"] >= 20 and s["kept"] > 0
    assert sum(s["verdicts"].values()) >= 5 and s["verdicts"].get("confirmed", 0) >= 1
    assert s["datasets"]["sft"] > 0 and s["datasets"]["dpo"] > 0 and s["datasets"]["eval"] > 0
    assert set(s["eval"]) == {"baseline:prior", "baseline:rules"}
    out = demo_workspace / "demo-out"
    assert (out / "eval" / "report.html").exists() and (out / "datasets" / "README.md").exists()


def test_demo_rerun_is_a_no_op_with_same_summary(demo_workspace: Path, tmp_path: Path):
    before = summary(demo_workspace)
    proc = run_cli("demo", "--no-replay", workspace=demo_workspace, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert summary(demo_workspace) == before


def test_killed_and_rerun_demo_ends_with_same_counts(demo_workspace: Path, tmp_path: Path):
    ws = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    proc = subprocess.Popen([sys.executable, "-m", "reprodiag", "-w", str(ws), "demo"], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # let it get into mining/extraction, then kill it hard
    deadline = time.monotonic() + 120
    db = ws / "reprodiag.sqlite"
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists() and db.stat().st_size > 200_000:
            break
        time.sleep(0.2)
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    again = run_cli("demo", workspace=ws, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert summary(ws) == summary(demo_workspace)
