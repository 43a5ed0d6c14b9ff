"""``--model hf:PATH``: a local transformers checkpoint (a fine-tuned model, or any causal LM saved with
``save_pretrained``) answers the eval items on this machine, on a GPU when torch sees one, else on the CPU.

It sees the prompt every runner sends (:func:`eval_diagnosis.prompt.messages`, rendered with the checkpoint's
own chat template) and its answers go through the same parsing and graders. Decoding is greedy (the same
checkpoint gives the same answers), at most ``max_new_tokens`` tokens per answer; one item is generated at a
time. For a large eval set on a GPU, serving the checkpoint with vLLM and running
``--model openai-compatible:NAME@URL`` is faster.

Needs ``reprodiag[train]`` (transformers and torch are imported only when an ``hf:`` model is asked for).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from eval_diagnosis.prompt import messages
from eval_diagnosis.providers import ProviderError
from reprodiag.errors import UserError
from reprodiag.schema import EvalItem

#: Default ``--max-new-tokens``: room for a ranked list of a few justified directions.
MAX_NEW_TOKENS = 512


def checkpoint_dir(spec: str) -> Path:
    """The folder an ``hf:PATH`` spec names; a missing path, a file or a folder without ``config.json`` is a
    one-line :class:`UserError` (checked before anything heavy is imported)."""
    raw = spec.partition(":")[2]
    if not raw.strip():
        raise UserError(f"model spec {spec!r} must look like hf:PATH (a local checkpoint folder)")
    path = Path(raw).expanduser()
    if not path.exists():
        raise UserError(f"{spec}: no such checkpoint folder: {path}")
    if not path.is_dir() or not (path / "config.json").is_file():
        raise UserError(f"{spec}: {path} is not a transformers checkpoint (no config.json; save one with "
                        "save_pretrained or trainer.save_model)")
    return path


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:240]


def render_prompt(tokenizer: Any, system: str, user: str) -> str:
    """The chat-template text of the eval prompt with the generation prompt; a template that refuses a system
    turn (some do) gets the system text as the first paragraph of the user turn."""
    try:
        return tokenizer.apply_chat_template([{"role": "system", "content": system},
                                              {"role": "user", "content": user}],
                                             tokenize=False, add_generation_prompt=True)
    except Exception:  # noqa: BLE001 - jinja's TemplateError (raise_exception in the template) and kin
        return tokenizer.apply_chat_template([{"role": "user", "content": f"{system}\n\n{user}"}],
                                             tokenize=False, add_generation_prompt=True)


class HFRunner:
    """A local checkpoint behind the runner contract. ``spec`` is ``hf:PATH`` as given; answers are not
    cached in the workspace (a checkpoint at the same path changes when it is trained again)."""

    cacheable = False

    def __init__(self, spec: str, *, max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        if max_new_tokens < 1:
            raise UserError(f"--max-new-tokens must be at least 1, got {max_new_tokens}")
        path = checkpoint_dir(spec)
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers.utils import logging as hf_logging
        except ImportError:
            raise UserError(f"{spec}: local checkpoints need transformers and torch: "
                            "install reprodiag[train]") from None
        self.spec = spec
        self.max_new_tokens = max_new_tokens
        self._torch = torch
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.float32
        if self.device == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        hf_logging.disable_progress_bar()  # the run's own progress is shown; no bar per weights file
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=dtype)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise UserError(f"{spec}: cannot load the checkpoint: {_one_line(exc)}") from None
        if not getattr(self.tokenizer, "chat_template", None):
            raise UserError(f"{spec}: the tokenizer has no chat template (an instruction-tuned or fine-tuned "
                            "checkpoint has one; set tokenizer.chat_template and save it)")
        self.model.to(self.device).eval()
        self._pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None \
            else self.tokenizer.eos_token_id
        self._lock = threading.Lock()  # one generation at a time (eval answers items from a thread pool)

    def answer(self, item: EvalItem) -> str:
        """The checkpoint's greedy answer to ``item`` (special tokens dropped). A failure inside generation
        (out of memory, a prompt longer than the model takes) is a :class:`ProviderError`: the item gets an
        error row and the run goes on."""
        system, user = messages(item)
        text = render_prompt(self.tokenizer, system, user)
        with self._lock:
            try:
                enc = self.tokenizer(text, return_tensors="pt", add_special_tokens=False).to(self.device)
                with self._torch.inference_mode():
                    out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                              pad_token_id=self._pad)
            except (RuntimeError, ValueError, IndexError) as exc:
                raise ProviderError(f"{self.spec}: generation failed: {_one_line(exc)}") from None
        new = out[0, enc["input_ids"].shape[1]:]
        return str(self.tokenizer.decode(new, skip_special_tokens=True)).strip()
