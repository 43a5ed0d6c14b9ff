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


def test_demo_datasets_load_and_keep_eval_repositories_out_of_training(demo_workspace: Path):
    from datasets import load_from_disk

    from reprodiag.schema import EvalItem

    root = demo_workspace / "demo-out" / "datasets"
    sft, dpo, ev = (load_from_disk(str(root / n)) for n in ("sft", "dpo", "eval"))
    sft_rows = [r for s in sft.values() for r in s]
    dpo_rows = [r for s in dpo.values() for r in s]
    ev_rows = [r for s in ev.values() for r in s]
    assert sft_rows and dpo_rows and ev_rows
    for r in sft_rows:  # TRL conversational: a "messages" column of role/content turns
        assert [m["role"] for m in r["messages"]] == ["system", "user", "assistant"]
    for r in dpo_rows:  # TRL conversational preference: prompt / chosen / rejected
        assert [m["role"] for m in r["prompt"]] == ["system", "user"]
        assert r["chosen"][0]["role"] == r["rejected"][0]["role"] == "assistant"
        assert r["chosen"][0]["content"] != r["rejected"][0]["content"]
    items = [EvalItem.model_validate(r) for r in ev_rows]
    eval_repos = {it.source_thread.split("#")[0] for it in items}
    assert eval_repos.isdisjoint({r["repo"] for r in sft_rows} | {r["repo"] for r in dpo_rows})
    # replays that confirmed a fix mark the rows of the threads they replicate as verified
    assert any(r["verified"] for r in sft_rows)


def test_the_demo_reads_through_the_llm_path_on_recorded_answers(demo_workspace: Path):
    from reprodiag.store import Store

    data = json.loads((demo_workspace / "demo-out" / "summary.json").read_text())
    assert "the LLM reader" in data["reader"] and "recorded answers of" in data["reader"]
    with Store(demo_workspace) as s:
        readers = {(r.extractor.backend, r.extractor.model or "") for r in s.iter_records()}
        assert s.count("rejects") == 0  # every request the demo sent had its recorded answer
    assert {b for b, _ in readers} == {"openai"} and all(m.startswith("recorded ") for _, m in readers)
    card = (demo_workspace / "demo-out" / "datasets" / "README.md").read_text(encoding="utf-8")
    assert "| eval | llm: " in card and "offline: " not in card.split("## Who read the threads")[1][:400]


def test_the_offline_demo_flags_its_eval_items(tmp_path: Path):
    ws = tmp_path / "ws"
    proc = run_cli("demo", "--backend", "rules", "--no-replay", workspace=ws, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((ws / "demo-out" / "summary.json").read_text())
    assert "the offline reader" in data["reader"] and data["datasets"]["eval"] > 0
    card = (ws / "demo-out" / "datasets" / "README.md").read_text(encoding="utf-8")
    assert "eval item(s) come from the offline reader" in card
    bad = run_cli("demo", "--backend", "nonsense", workspace=tmp_path / "bad", timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
