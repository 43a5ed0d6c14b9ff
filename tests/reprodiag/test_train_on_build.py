"""TRL trains on a build, and the benchmark runs what it trained: the demo's datasets, a tokenizer trained on
their own text and a tiny randomly initialised causal LM (:mod:`reprodiag.tiny_lm`; nothing is downloaded).
The chat template renders every row, ``SFTTrainer`` on ``sft_full`` and ``DPOTrainer`` on ``dpo`` run a few
steps (the loss is finite and falls on a repeated batch; every row passes through TRL's preprocessing and an
evaluation pass), the saved checkpoint loads, and ``reprodiag eval --model hf:CHECKPOINT`` grades it like any
model. Needs ``reprodiag[train]``; skipped with the reason when torch, transformers or trl is missing."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TRAIN_DEPS = ("torch", "transformers", "trl")
MISSING = [m for m in TRAIN_DEPS if importlib.util.find_spec(m) is None]
pytestmark = [pytest.mark.train,
              pytest.mark.skipif(bool(MISSING), reason=f"needs reprodiag[train] ({', '.join(MISSING)} not "
                                 "installed): pip install -e '.[train]' or make test-train")]

#: Rows in the repeated batch each trainer takes a few steps on.
BATCH = 4
SFT_STEPS = 10


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory, cli: Callable[..., Any]) -> Path:
    """The demo's datasets (the LLM reader on recorded answers; no replays)."""
    ws = tmp_path_factory.mktemp("train") / "ws"
    proc = cli("-q", "demo", "--no-replay", workspace=ws)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ws / "demo-out" / "datasets"


@pytest.fixture(scope="module")
def tokenizer(build: Path) -> Any:
    from reprodiag.tiny_lm import build_texts, train_tokenizer

    return train_tokenizer(build_texts(build))


def _load(build: Path, name: str) -> Any:
    from datasets import disable_progress_bars, load_dataset

    disable_progress_bars()
    return load_dataset(str(build), name, cache_dir=str(build.parent / "hf-cache"))  # by name, as from the hub


def _all(dd: Any) -> Any:
    from datasets import concatenate_datasets

    return concatenate_datasets([dd[s] for s in dd])


def test_the_chat_template_renders_every_row(build: Path, tokenizer: Any) -> None:
    from trl.data_utils import apply_chat_template

    for name in ("sft", "sft_resolved", "sft_full"):
        for row in _all(_load(build, name)):
            text = tokenizer.apply_chat_template(row["messages"], tokenize=False)
            assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
            for m in row["messages"]:
                assert f"<|{m['role']}|>\n{m['content']}<|end|>\n" in text
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            assert tokenizer.decode(ids) == text  # byte-level: nothing lost
    for row in _all(_load(build, "dpo")):
        pair = apply_chat_template(row, tokenizer)  # what DPOTrainer renders
        assert pair["prompt"].endswith("<|assistant|>\n") and row["prompt"][1]["content"] in pair["prompt"]
        assert pair["chosen"] == row["chosen"][0]["content"] + "<|end|>\n"
        assert pair["rejected"] == row["rejected"][0]["content"] + "<|end|>\n"


def _losses(history: list[dict[str, Any]]) -> list[float]:
    return [h["loss"] for h in history if "loss" in h]


def _common(out: Path) -> dict[str, Any]:
    return {"output_dir": str(out), "per_device_train_batch_size": BATCH, "per_device_eval_batch_size": BATCH,
            "logging_steps": 1, "report_to": "none", "save_strategy": "no", "use_cpu": True, "seed": 0,
            "disable_tqdm": True, "dataloader_num_workers": 0, "max_length": 4096,
            "bf16": False, "activation_checkpointing": False}  # full precision, no recomputation: a CPU and a tiny model


@pytest.fixture(scope="module")
def trained(build: Path, tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """SFT on ``sft_full`` then DPO on ``dpo``: each trains ``BATCH`` rows for a few steps (one batch, seen
    again every step) and evaluates on every row of its configuration; checkpoints saved."""
    import torch
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    from reprodiag.tiny_lm import tiny_causal_lm

    torch.set_num_threads(1)  # a tiny model: threads cost more than they give
    root = tmp_path_factory.mktemp("ckpt")
    sft_full, dpo = _load(build, "sft_full"), _load(build, "dpo")
    sft = SFTTrainer(model=tiny_causal_lm(tokenizer), processing_class=tokenizer,
                     args=SFTConfig(**_common(root / "sft-run"), max_steps=SFT_STEPS, learning_rate=3e-3),
                     train_dataset=sft_full["train"].select(range(BATCH)), eval_dataset=_all(sft_full))
    sft.train()
    sft_eval = sft.evaluate()
    sft.save_model(str(root / "sft"))
    dpo_t = DPOTrainer(model=str(root / "sft"), processing_class=tokenizer,  # the reference: the same checkpoint
                       args=DPOConfig(**_common(root / "dpo-run"), max_steps=6, learning_rate=2e-4),
                       train_dataset=dpo["train"].select(range(BATCH)), eval_dataset=_all(dpo))
    dpo_t.train()
    dpo_eval = dpo_t.evaluate()
    dpo_t.save_model(str(root / "dpo"))
    return {"root": root, "sft": _losses(sft.state.log_history), "sft_eval": sft_eval,
            "sft_rows": (len(sft.eval_dataset), _all(sft_full).num_rows),
            "dpo": _losses(dpo_t.state.log_history), "dpo_eval": dpo_eval,
            "dpo_rows": (len(dpo_t.eval_dataset), _all(dpo).num_rows), "model": dpo_t.model}


def test_sft_on_sft_full_learns_the_repeated_batch(trained: dict[str, Any]) -> None:
    losses = trained["sft"]
    assert len(losses) == SFT_STEPS and all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0] - 0.3, losses
    assert math.isfinite(trained["sft_eval"]["eval_loss"])
    seen, total = trained["sft_rows"]
    assert seen == total  # TRL kept every row of sft_full


def test_dpo_on_top_prefers_the_chosen_answers_of_the_batch(trained: dict[str, Any]) -> None:
    losses = trained["dpo"]
    assert len(losses) == 6 and all(math.isfinite(x) for x in losses)
    assert abs(losses[0] - math.log(2)) < 1e-3  # policy = reference at the start
    assert losses[-1] < losses[0], losses
    assert math.isfinite(trained["dpo_eval"]["eval_loss"])
    seen, total = trained["dpo_rows"]
    assert seen == total


def test_the_saved_checkpoint_loads(trained: dict[str, Any], tokenizer: Any) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ckpt = trained["root"] / "dpo"
    model = AutoModelForCausalLM.from_pretrained(str(ckpt), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(ckpt), local_files_only=True)
    assert tok.chat_template == tokenizer.chat_template and tok.eos_token == "<|end|>"
    ids = tok("the learning rate was not scaled", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        a = model(ids).logits
        b = trained["model"].eval()(ids).logits
    assert torch.allclose(a, b, atol=1e-5)


def test_eval_runs_the_trained_checkpoint(trained: dict[str, Any], build: Path, tmp_path: Path,
                                          cli: Callable[..., Any]) -> None:
    ckpt = trained["root"] / "dpo"
    out = tmp_path / "eval"
    proc = cli("-q", "eval", "--eval-set", str(build / "eval"), "--model", f"hf:{ckpt}", "--grader", "lexical",
               "--max-new-tokens", "48", "-o", str(out), env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads(proc.stdout)
    assert rep["stage"] == "eval" and rep["counts"]["answered"] == rep["counts"]["items"] > 0
    results = json.loads((out / "results.json").read_text())
    spec = f"hf:{ckpt}"
    assert list(results["models"]) == [spec] and results["errors"] == {spec: 0}
    assert results["models"][spec]["overall"]["n"] == results["n_items"]
    answers = [json.loads(ln) for ln in (out / "answers.jsonl").read_text().splitlines()]
    # a model this small mostly answers blank lines (an empty answer once stripped): graded, a miss, no error
    assert len(answers) == results["n_items"] and all(isinstance(a["answer"], str) and not a.get("error")
                                                      for a in answers)
    assert (out / "report.html").read_text(encoding="utf-8").count(spec) >= 1


def test_the_readme_trl_commands_take_a_build_and_a_configuration(build: Path, tokenizer: Any, tmp_path: Path) -> None:
    """``trl sft`` on ``sft_full`` and ``trl dpo`` on ``dpo`` as the README shows them (the build folder and a
    configuration name), one step each, from a saved tiny base model; offline."""
    from reprodiag.tiny_lm import tiny_causal_lm

    base = tmp_path / "base"
    tiny_causal_lm(tokenizer).save_pretrained(str(base))
    tokenizer.save_pretrained(str(base))
    trl = Path(sys.executable).with_name("trl")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "cache")}
    cpu = ["--max_steps", "1", "--per_device_train_batch_size", "2", "--use_cpu", "--bf16", "False",
           "--report_to", "none", "--save_strategy", "no", "--max_length", "4096"]
    for cmd, model, config in (("sft", base, "sft_full"), ("dpo", tmp_path / "sft", "dpo")):
        proc = subprocess.run([str(trl), cmd, "--model_name_or_path", str(model), "--dataset_name", str(build),
                               "--dataset_config", config, "--output_dir", str(tmp_path / cmd), *cpu],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert (tmp_path / cmd / "config.json").is_file() and (tmp_path / cmd / "chat_template.jinja").is_file()


def test_a_checkpoint_without_a_chat_template_is_one_line(trained: dict[str, Any], build: Path, tmp_path: Path,
                                                          cli: Callable[..., Any]) -> None:
    import shutil

    ckpt = tmp_path / "plain"
    shutil.copytree(trained["root"] / "sft", ckpt)
    (ckpt / "chat_template.jinja").unlink(missing_ok=True)
    cfg = json.loads((ckpt / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (ckpt / "tokenizer_config.json").write_text(json.dumps(cfg))
    proc = cli("eval", "--eval-set", str(build / "eval"), "--model", f"hf:{ckpt}", "-o", str(tmp_path / "o"),
               env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 2 and "has no chat template" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()
