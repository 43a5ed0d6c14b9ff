"""``--model hf:PATH`` without a trained model: what is not a checkpoint is one line and exit 2, before anything
heavy is imported; a missing transformers names the extra; a chat template that refuses a system turn still
gets the whole prompt. A trained checkpoint runs through it in ``tests/reprodiag/test_train_on_build.py``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_diagnosis.runners import make_runner
from eval_diagnosis.runners.hf import checkpoint_dir, render_prompt
from reprodiag.errors import UserError


def _one_line_exit_2(proc: Any, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err, err


def test_what_is_not_a_checkpoint_is_one_line_exit_2(built: Path, tmp_path: Path, cli: Callable[..., Any]) -> None:
    missing = tmp_path / "nowhere"
    _one_line_exit_2(cli("eval", "--eval-set", str(built), "--model", f"hf:{missing}", "-o", str(tmp_path / "o")),
                     f"no such checkpoint folder: {missing}")
    (tmp_path / "weights.bin").write_bytes(b"\0")
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "weights.bin", tmp_path / "empty"):
        _one_line_exit_2(cli("eval", "--eval-set", str(built), "--model", f"hf:{path}", "-o", str(tmp_path / "o")),
                         "is not a transformers checkpoint (no config.json")
    _one_line_exit_2(cli("eval", "--eval-set", str(built), "--model", "hf:", "-o", str(tmp_path / "o")),
                     "must look like hf:PATH")
    bad = cli("eval", "--eval-set", str(built), "--model", f"hf:{tmp_path}", "--max-new-tokens", "0")
    assert bad.returncode == 2 and "max-new-tokens" in bad.stderr
    assert not (tmp_path / "o").exists()  # refused before any output


def test_checkpoint_dir_accepts_a_saved_folder(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert checkpoint_dir(f"hf:{tmp_path}") == tmp_path


def test_without_transformers_the_extra_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` raises ImportError
    with pytest.raises(UserError, match=r"install reprodiag\[train\]"):
        make_runner(f"hf:{tmp_path}", [])


class _NoSystemTemplate:
    """A tokenizer whose chat template refuses a system turn (as some models' templates do)."""

    def apply_chat_template(self, messages: list[dict[str, str]], *, tokenize: bool,
                            add_generation_prompt: bool) -> str:
        if any(m["role"] == "system" for m in messages):
            raise ValueError("System role not supported")
        return "".join(f"[{m['role']}] {m['content']}\n" for m in messages) + ("[assistant] " * add_generation_prompt)


def test_a_template_without_a_system_turn_gets_the_whole_prompt() -> None:
    text = render_prompt(_NoSystemTemplate(), "You diagnose.", "Symptom: BLEU 28.4, paper 32.7")
    assert text == "[user] You diagnose.\n\nSymptom: BLEU 28.4, paper 32.7\n[assistant] "
