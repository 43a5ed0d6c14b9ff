"""The inspect_ai task (optional extra): skipped when inspect_ai is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_core_modules_do_not_import_inspect_ai() -> None:
    code = ("import sys, eval_diagnosis.pipeline, eval_diagnosis.graders.lexical; "
            "print('inspect_ai' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert proc.stdout.strip() == "False", proc.stderr


def test_task_loads_and_scores_offline(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from reprodiag.inspect_task import diagnosis

    task = diagnosis()
    assert len(task.dataset) >= 10
    outputs = []
    for text in ("1. BLEU tokenization: tokenized multi-bleu vs sacreBLEU on detokenized text",
                 "1. check your hyperparameters"):
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)  # no tokenizer download
        outputs.append(out)
    model = get_model("mockllm/model", custom_outputs=outputs)
    log = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none", limit=2, max_samples=1)[0]
    assert log.status == "success"
    values = [next(iter(s.scores.values())).value for s in log.samples]
    assert values == ["C", "I"]
