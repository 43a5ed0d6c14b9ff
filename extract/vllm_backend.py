"""``extract --backend vllm --engine ray``: a local model on the cluster's GPUs through Ray Data LLM
(``ray.data.llm``), then validation and grounding in a CPU step.

The plan, per block of threads the workspace still needs (cache hits are answered by the driver first, as
for the API backends): :class:`Preprocess` builds the same messages the API backends send
(:func:`extract.prompts.build_messages`, same label definitions and ``PROMPT_VERSION``) with sampling
parameters asking vLLM for JSON constrained by the answer schema (``structured_outputs``, temperature 0);
the vLLM engine stage runs ``engines`` replicas of ``tensor_parallel`` GPUs each, continuing on a row's error
(``should_continue_on_error``: the row carries ``__inference_error__``); :class:`Ground` (CPU) reads each
answer against the schema, marks truncation (``max_tokens`` reached), turns it into a :class:`Record`
through the same grounding as every backend, and yields the columns ``extract --engine ray`` commits
(record, answer for the cache, failure, token usage). Only the driver writes the workspace.

Install on the GPU nodes: ``pip install 'reprodiag[vllm]'`` (Ray Data LLM with vLLM, which brings torch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from extract.answer import ANSWER_SCHEMA, to_record
from extract.llm import MAX_OUTPUT_TOKENS, AnswerError, Completion, LLMExtractor, parse_answer
from extract.prompts import PROMPT_VERSION, build_messages
from reprodiag.errors import UserError
from reprodiag.schema import Thread

INSTALL = "--backend vllm needs Ray Data LLM with vLLM on the cluster: pip install 'reprodiag[vllm]'"


@dataclass(frozen=True)
class VLLMSettings:
    """``engines``: vLLM engine replicas (data parallel, one Ray actor each); ``tensor_parallel``: GPUs per
    engine; ``batch_size``: rows per engine call; ``max_model_len``: context length in tokens (prompt +
    answer); ``max_tokens``: answer limit in tokens (an answer that reaches it is truncated: a failure)."""

    model: str
    engines: int = 1
    tensor_parallel: int = 1
    batch_size: int = 32
    max_model_len: int = 16384
    max_tokens: int = MAX_OUTPUT_TOKENS

    def __post_init__(self) -> None:
        if not self.model:
            raise UserError("--model is required for the vllm backend (a Hugging Face id or a local directory)")
        for name in ("engines", "tensor_parallel", "batch_size", "max_model_len", "max_tokens"):
            if getattr(self, name) < 1:
                raise UserError(f"vllm: {name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")


def sampling_params(max_tokens: int) -> dict[str, Any]:
    """Greedy decoding constrained to the answer schema (vLLM's ``StructuredOutputsParams(json=…)``)."""
    return {"temperature": 0.0, "max_tokens": max_tokens, "structured_outputs": {"json": ANSWER_SCHEMA}}


def engine_config(s: VLLMSettings) -> Any:
    """The ``vLLMEngineProcessorConfig`` of a run (pydantic, validated by Ray; builds without a GPU)."""
    try:
        from ray.data.llm import vLLMEngineProcessorConfig
    except ImportError:
        raise UserError(INSTALL) from None
    return vLLMEngineProcessorConfig(
        model_source=s.model,
        engine_kwargs={"tensor_parallel_size": s.tensor_parallel, "max_model_len": s.max_model_len,
                       "enable_prefix_caching": True},  # every prompt starts with the same system prompt
        concurrency=s.engines,
        batch_size=s.batch_size,
        should_continue_on_error=True,
        chat_template_stage=True, tokenize_stage=True, detokenize_stage=True,
    )


@dataclass(frozen=True)
class Preprocess:
    """A thread row (``doc``: Thread JSON) → the chat messages and sampling parameters of the engine."""

    max_tokens: int = MAX_OUTPUT_TOKENS

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        system, user = build_messages(Thread.model_validate_json(row["doc"]))
        return {"doc": row["doc"], "messages": [{"role": "system", "content": system},
                                                {"role": "user", "content": user}],
                "sampling_params": sampling_params(self.max_tokens)}


def postprocess(row: dict[str, Any]) -> dict[str, Any]:
    """The engine's row → what :class:`Ground` reads (rows with an inference error skip this, by Ray)."""
    return {"doc": row["doc"], "generated_text": row.get("generated_text") or "",
            "num_input_tokens": int(row.get("num_input_tokens") or 0),
            "num_generated_tokens": int(row.get("num_generated_tokens") or 0)}


@dataclass(frozen=True)
class VLLMPlan:
    """Dataset of thread rows → dataset of engine rows: the Ray Data LLM processor, built on the driver
    inside the run's Ray session (checked first: enough GPUs on one node for one engine)."""

    settings: VLLMSettings

    def __call__(self, ds: Any) -> Any:
        import ray

        from reprodiag.ray_engine import largest_node_gpus

        most = largest_node_gpus(ray)
        if most < self.settings.tensor_parallel:
            raise UserError(f"--backend vllm needs {self.settings.tensor_parallel} GPU(s) on one node for an "
                            f"engine; the largest node of the Ray cluster has {most}")
        try:
            from ray.data.llm import build_processor
        except ImportError:
            raise UserError(INSTALL) from None
        try:
            proc = build_processor(engine_config(self.settings), preprocess=Preprocess(self.settings.max_tokens),
                                   postprocess=postprocess)
        except ImportError:  # torch, transformers or vllm missing on the driver
            raise UserError(INSTALL) from None
        return proc(ds)


@dataclass(frozen=True)
class Ground:
    """The CPU step after the engine: one block of engine rows → the columns ``extract --engine ray``
    commits (``record`` JSON or "", ``answer`` for the cache or "", ``failure`` or "", ``usage``)."""

    model: str
    max_tokens: int = MAX_OUTPUT_TOKENS

    def __call__(self, cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
        n = len(cols["doc"])
        errors = cols.get("__inference_error__") or [""] * n
        texts = cols.get("generated_text") or [""] * n
        n_in = cols.get("num_input_tokens") or [0] * n
        n_out = cols.get("num_generated_tokens") or [0] * n
        out: dict[str, list[Any]] = {k: [] for k in ("thread_id", "record", "answer", "failure", "content_hash",
                                                    "usage")}
        for doc, err, text, i, o in zip(cols["doc"], errors, texts, n_in, n_out, strict=True):
            thread = Thread.model_validate_json(doc)
            record = answer = failure = ""
            if err:
                failure = "vLLM: " + " ".join(str(err).split())[:280]
            elif int(o or 0) >= self.max_tokens:
                failure = "answer was truncated (output token limit)"
            else:
                try:
                    got = parse_answer(text, None)
                except AnswerError as exc:
                    failure = str(exc)
                else:
                    answer = json.dumps(got.model_dump(mode="json"))
                    record = to_record(thread, got, backend="vllm", model=self.model,
                                       prompt_version=PROMPT_VERSION).model_dump_json()
            out["thread_id"].append(thread.id)
            out["record"].append(record)
            out["answer"].append(answer)
            out["failure"].append(failure)
            out["content_hash"].append(thread.content_hash())
            out["usage"].append([int(i or 0), int(o or 0), 0 if err else 1, 0, 0])
        return out


class VLLMExtractor(LLMExtractor):
    """The vllm backend's cache keys and records (same as every LLM backend); its requests go through
    :class:`VLLMPlan` on Ray, never through ``extract()`` on this host."""

    backend = "vllm"

    async def _complete(self, system: str, messages: list[dict[str, Any]]) -> Completion:
        raise UserError("--backend vllm runs on Ray Data: add --engine ray (or serve the model with `vllm serve` "
                        "and use --backend openai-compatible --base-url …)")

    def batch_line(self, cid: str, system: str, user: str) -> dict[str, Any]:
        raise UserError("--batch/--collect need --backend openai or anthropic")

    def result_answer(self, line: dict[str, Any]) -> tuple[str, Completion | None, str | None]:
        raise UserError("--batch/--collect need --backend openai or anthropic")
