"""A tiny randomly initialised causal LM and a tokenizer trained on a build's own text: a model that trains in
seconds on a CPU and needs nothing downloaded, for checking that a build feeds TRL and that the benchmark runs
a local checkpoint (the train tests and ``notebooks/train_and_eval.ipynb``). It learns nothing useful: train a
real base model for results (README, "Train on it").

The tokenizer is byte-level BPE (every text encodes and decodes back unchanged) with a chat template of its
own: each turn is ``<|role|>\\n{content}<|end|>\\n``, and the generation prompt is ``<|assistant|>\\n``.
``<|end|>`` is the end-of-sequence token, ``<|pad|>`` the padding token.

Needs ``reprodiag[train]`` (tokenizers, transformers and torch are imported where used).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError

PAD, EOS = "<|pad|>", "<|end|>"
ROLES = ("system", "user", "assistant")
SPECIAL_TOKENS = (PAD, EOS, *(f"<|{r}|>" for r in ROLES))
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ '<|' + m['role'] + '|>\n' + m['content'] + '<|end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
#: The columns of a build's configurations that hold conversations (lists of ``{role, content}``).
_TURN_COLUMNS = ("messages", "prompt", "chosen", "rejected")
_EVAL_COLUMNS = ("environment", "paper", "symptom", "tried", "question", "gold_root_cause")


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{module} is not installed: install reprodiag[train] (torch, transformers, trl)") from None


def build_texts(root: Path, configs: Iterable[str] = ("sft", "dpo", "eval")) -> Iterator[str]:
    """Every text of a build folder ``root``: each turn's content of the conversation columns and the eval
    items' text fields, read from the ``<config>/<split>.parquet`` files (one file at a time)."""
    import polars as pl

    for name in configs:
        for path in sorted((Path(root) / name).glob("*.parquet")):
            df = pl.read_parquet(path)
            for col in df.columns:
                if col in _TURN_COLUMNS:
                    for turns in df[col].to_list():
                        yield from (str(t.get("content") or "") for t in turns or [])
                elif col in _EVAL_COLUMNS:
                    yield from (str(v) for v in df[col].to_list() if v)


def train_tokenizer(texts: Iterable[str], *, vocab_size: int = 2000) -> Any:
    """A ``PreTrainedTokenizerFast``: byte-level BPE of at most ``vocab_size`` entries (special tokens and the
    256 byte symbols included) trained on ``texts``, with :data:`CHAT_TEMPLATE`. Deterministic for the same
    texts in the same order."""
    tk = _need("tokenizers")
    transformers = _need("transformers")
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                     initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=PAD,
                                                chat_template=CHAT_TEMPLATE)


def tiny_causal_lm(tokenizer: Any, *, hidden_size: int = 64, layers: int = 2, heads: int = 4,
                   max_positions: int = 4096, seed: int = 0) -> Any:
    """A randomly initialised ``LlamaForCausalLM`` for ``tokenizer``'s vocabulary: ``layers`` layers of width
    ``hidden_size`` (``heads`` attention heads, MLP width 2 × ``hidden_size``, tied embeddings; about 0.2 M
    parameters at the defaults with a 2,000-token vocabulary). ``max_positions``: the longest sequence in
    tokens (rotary positions: it costs no parameters). The same ``seed`` gives the same weights."""
    torch = _need("torch")
    transformers = _need("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=max_positions, tie_word_embeddings=True, bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model
