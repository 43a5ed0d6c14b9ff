"""``reprodiag audit``: every check fails on crafted bad rows and passes on clean ones."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from reprodiag.audit import audit, declarative, leak_share, pii_hits, shortcut_accuracy

SYS = {"role": "system", "content": "You are an experienced machine-learning researcher."}


def _msg(role: str, text: str) -> dict:
    return {"role": role, "content": text}


def _write(root: Path, name: str, split: str, rows: list[dict]) -> None:
    (root / name).mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows).write_parquet(root / name / f"{split}.parquet")


def _clean(root: Path, n: int = 12) -> None:
    causes = ["the learning rate was not scaled with the total batch", "evaluation used the validation split",
              "sacrebleu detokenized scoring differs from tokenized multi-bleu", "pytorch changed a default",
              "fp16 overflow in attention logits", "warmup steps were ten times shorter"]
    sft, dpo = [], []
    for i in range(n):
        prompt = f"Symptom: accuracy {70 + i}.1 vs paper {75 + i}.3 on dataset number {i}"
        good = f"Root cause: {causes[i % 6]:<70} in run {i}."
        bad = f"Root cause: {causes[(i + 3) % 6]:<70} in run {i}."
        sft.append({"messages": [SYS, _msg("user", prompt), _msg("assistant", good)], "thread_id": f"o/r{i}#1",
                    "repo": f"o/r{i}", "error_type": "data", "tier": "current", "resolution_type": "resolved",
                    "verified": False})
        dpo.append({"prompt": [SYS, _msg("user", prompt)], "chosen": [_msg("assistant", good if i % 2 else bad)],
                    "rejected": [_msg("assistant", bad if i % 2 else good)], "thread_id": f"o/r{i}#1",
                    "repo": f"o/r{i}", "error_type": "data", "verified": False})
    _write(root, "sft", "train", sft)
    _write(root, "dpo", "train", dpo)
    _write(root, "eval", "test", [{"id": "e1", "error_type": "data", "environment": "", "paper": "",
                                   "symptom": "mAP 35.4, paper 37.4", "tried": "", "question": "q",
                                   "gold_root_cause": "The config assumes 8 GPUs.", "source_thread": "x/eval#3"}])


def test_clean_datasets_pass(tmp_path: Path) -> None:
    _clean(tmp_path)
    rep = audit(tmp_path)
    assert rep["failed"] == [], rep["checks"]
    assert rep["datasets"]["sft/train"]["rows"] == 12 and rep["checks"]["repo_overlap"] == 0


def test_each_check_fails_on_crafted_bad_rows(tmp_path: Path) -> None:
    _clean(tmp_path)
    leak = {"messages": [SYS, _msg("user", "The learning rate was not scaled with the total batch size"),
                         _msg("assistant", "The learning rate was not scaled with the total batch size.")],
            "thread_id": "o/leak#1", "repo": "o/leak", "error_type": "hyperparameter", "tier": "current",
            "resolution_type": "resolved", "verified": False}
    pii = dict(leak, messages=[SYS, _msg("user", "gap"), _msg("assistant", "Hi Wei, email me at wei@example.com")],
               thread_id="o/pii#1")
    _write(tmp_path, "sft", "validation", [leak, pii])
    long = "Checked and confirmed:\n- a\n- b\nFix: do this and that and more " * 5
    dpo = [{"prompt": [SYS, _msg("user", f"p{i}")], "chosen": [_msg("assistant", long + str(i))],
            "rejected": [_msg("assistant", "Fix: lower the learning rate.")], "thread_id": f"o/d{i}#1",
            "repo": f"o/d{i}", "error_type": "data", "verified": False} for i in range(12)]
    _write(tmp_path, "dpo", "validation", dpo)
    _write(tmp_path, "eval", "test", [{"id": "q", "error_type": "data", "environment": "", "paper": "", "symptom": "s",
                                       "tried": "", "question": "q", "gold_root_cause": "Did you use speed perturbation?",
                                       "source_thread": "o/r1#9"}])
    rep = audit(tmp_path)
    assert {"leak_rows", "pii_rows", "shortcut_accuracy", "length_ratio", "rejected_repeats",
            "non_declarative_gold", "repo_overlap"} <= set(rep["failed"]), rep["checks"]
    assert rep["datasets"]["sft/validation"]["leak_rows"][0]["thread_id"] == "o/leak#1"
    assert {"email", "greeting_name"} <= set(rep["datasets"]["sft/validation"]["pii_rows"][0]["kinds"])


def test_building_blocks() -> None:
    assert leak_share("the warmup was short", "warmup was short") == 1.0 and leak_share("x", "") == 0.0
    assert "mention" in pii_hits("thanks @octocat") and not pii_hits("the schedule is 36 epochs")
    assert declarative("The config assumes 8 GPUs.") and not declarative("Did you use speed perturbation?")
    assert not declarative("Resume from the 300k checkpoint with --attn-fp32.")
    assert shortcut_accuracy(["a"] * 5, ["b"] * 5) is None


def test_cli_strict_exit_codes_and_bad_folder(tmp_path: Path, cli) -> None:  # noqa: ANN001
    _clean(tmp_path / "ok")
    good = cli("-q", "audit", str(tmp_path / "ok"), "--strict", workspace=tmp_path / "ws")
    assert good.returncode == 0 and json.loads(good.stdout)["failed"] == []
    assert (tmp_path / "ok" / "audit.json").exists()
    _write(tmp_path / "ok", "eval", "test", [{"id": "q", "error_type": "data", "symptom": "s",
                                              "gold_root_cause": "Try lr 0.01?", "source_thread": "z/z#1"}])
    bad = cli("-q", "audit", str(tmp_path / "ok"), "--strict", workspace=tmp_path / "ws")
    assert bad.returncode == 1 and "non_declarative_gold" in json.loads(bad.stdout)["failed"]
    missing = cli("audit", str(tmp_path / "nope"), workspace=tmp_path / "ws")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("strict", [False])
def test_demo_datasets_are_audited(demo_workspace: Path, strict: bool) -> None:
    """The demo's datasets: the audit finds the DPO shortcuts and non-declarative gold causes issue #11 reports
    (the fixes in build are the next step); its figures are in the README."""
    rep = audit(demo_workspace / "demo-out" / "datasets")
    assert rep["checks"]["pii_rows"] == 0 and rep["checks"]["repo_overlap"] == 0
    assert rep["checks"]["shortcut_accuracy"] is not None
