"""``reprodiag audit``: every check fails on crafted bad rows and passes on clean ones."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from reprodiag.audit import (
    audit,
    audit_summary_lines,
    cause_of,
    declarative,
    fragment_lines,
    leak_share,
    login_hits,
    near_duplicate_rows,
    pii_hits,
    shortcut_accuracy,
)

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


def test_participant_logins_fragments_and_near_duplicates_fail(tmp_path: Path) -> None:
    _clean(tmp_path)
    assert audit(tmp_path, participants={"o/r1#1": ["wei-zhang99"]})["failed"] == []
    row = {"messages": [SYS, _msg("user", "as wei-zhang99 said, accuracy 70.1 vs 75.3"),
                        _msg("assistant", "Root cause: the split.\n- Could be seed variance?\n- That adds:")],
           "thread_id": "o/r1#1", "repo": "o/r1", "error_type": "data", "tier": "current",
           "resolution_type": "resolved", "verified": False}
    _write(tmp_path, "sft", "validation", [row])
    rep = audit(tmp_path, participants={"o/r1#1": ["wei-zhang99"]})
    assert {"pii_rows", "fragment_lines"} <= set(rep["failed"])
    assert "login" in rep["datasets"]["sft/validation"]["pii_rows"][0]["kinds"]
    assert rep["checks"]["fragment_lines"] == 2
    assert "login" not in (pii_hits("as wei-zhang99 said") or [])  # without the participants: not known
    assert not audit(tmp_path)["checks"]["participants_checked"]


def test_building_blocks_of_the_new_checks() -> None:
    assert cause_of("This looks like x.\n\nRoot cause: the BPE was not joint.\nFix: y") == "the BPE was not joint."
    assert cause_of("Most likely cause (not confirmed in the thread): seed variance.") == "seed variance."
    assert cause_of("no cause line") == "no cause line"
    assert fragment_lines("Ruled out:\n- The seed.\n- Did you use AMP?\n- Two data differences stand out:") == 2
    base = "the model was trained with a joint byte pair encoding over both languages and shared embeddings"
    assert near_duplicate_rows([base, base + " too", "a completely different text about fid and sampling steps"]) == 1
    assert near_duplicate_rows(["one text only"]) == 0
    assert login_hits("thanks @wei-zhang99", ["wei-zhang99"]) and login_hits("as wei_z said", ["wei_z"])
    assert not login_hits("thanks @maintainer_0", ["maintainer_0"])  # placeholders are what we want to see
    assert not login_hits("code: yanx27/Pointnet", ["yanx27"])  # a repository reference is not a person


def test_summary_lines_name_each_figure(tmp_path: Path) -> None:
    _clean(tmp_path)
    lines = audit_summary_lines(audit(tmp_path))
    text = "\n".join(lines)
    assert "shortcut probe" in text and "length ratio" in text and "FAIL" not in text
    assert "participant logins not checked" in text


def test_demo_datasets_pass_the_strict_audit(demo_workspace: Path, cli) -> None:  # noqa: ANN001
    """The demo's datasets pass every check, participants' logins included (the build's own audit.json)."""
    ds = demo_workspace / "demo-out" / "datasets"
    built = json.loads((ds / "audit.json").read_text(encoding="utf-8"))
    assert built["failed"] == [] and built["checks"]["participants_checked"], built["checks"]
    proc = cli("-q", "audit", str(ds), "--strict", workspace=demo_workspace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = json.loads(proc.stdout)["checks"]
    assert checks["shortcut_accuracy"] <= 0.65 and 0.8 <= checks["length_ratio_median"] <= 1.25
    assert checks["leak_rows"] == checks["pii_rows"] == checks["non_declarative_gold"] == 0


def test_a_sentence_every_answer_carries_fails_the_boilerplate_check(tmp_path: Path) -> None:
    from reprodiag.audit import answer_sentences

    _clean(tmp_path)
    rep = audit(tmp_path)
    assert rep["answers"]["sft"]["most_common_share"] == 0.0 and rep["checks"]["common_rows_share"] == 0.0
    rows = [{"messages": [SYS, _msg("user", f"BLEU {20 + i}.1 vs 27.6"),
                          _msg("assistant", f"The cause is the tokenizer of run {i}. How to verify: change one thing "
                                            "at a time and rerun.")],
             "thread_id": f"o/b{i}#1", "repo": f"o/b{i}", "error_type": "data", "tier": "current",
             "resolution_type": "resolved", "verified": False} for i in range(20)]
    _write(tmp_path, "sft", "validation", rows)
    rep = audit(tmp_path)
    a = rep["answers"]["sft"]
    assert a["most_common"] == "how to verify: change one thing at a time and rerun."
    assert a["most_common_share"] == round(20 / 32, 4) and a["common_rows_share"] == round(20 / 32, 4)
    assert "common_sentences" in rep["failed"]
    assert any("most shared sentence is in 62.5%" in ln for ln in audit_summary_lines(rep))
    assert answer_sentences("One. Two!\nOne.") == ["one.", "two!"]


def test_mix_rows_must_be_sft_rows_of_the_mix(tmp_path: Path) -> None:
    _clean(tmp_path)
    sft = pl.read_parquet(tmp_path / "sft" / "train.parquet").to_dicts()
    _write(tmp_path, "sft_full", "train", sft[:3])
    _write(tmp_path, "sft_resolved", "train", sft[:2])
    rep = audit(tmp_path)
    assert rep["failed"] == [] and rep["checks"]["mix_rows_wrong"] == 0
    assert rep["mixes"]["sft_full"]["train"]["rows"] == 3
    assert any("SFT mix rows" in ln and "(pass)" in ln for ln in audit_summary_lines(rep))
    stranger = dict(sft[0], thread_id="o/elsewhere#9")
    unresolved = dict(sft[1], resolution_type="unresolved")
    _write(tmp_path, "sft_full", "train", [stranger, unresolved, sft[2]])
    rep = audit(tmp_path)
    assert rep["checks"]["mix_rows_wrong"] == 2 and "mixes" in rep["failed"]
    assert rep["mixes"]["sft_full"]["train"] == {"rows": 3, "not_in_sft": 1, "off_mix": 1,
                                                 "resolution": {"resolved": 2, "unresolved": 1}}
