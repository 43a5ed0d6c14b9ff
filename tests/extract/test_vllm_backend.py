"""--backend vllm: the Ray Data LLM config builds on CPU, the engine's rows are prepared like every LLM
backend's requests, the CPU step after the engine validates and grounds like every backend, and the Ray
plan around it (cache hits answered by the driver, errors as rejects, a rerun sending only what failed)
works with the GPU stage replaced by a deterministic engine. The real engine runs under ``-m gpu``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extract.answer import ANSWER_SCHEMA, LLMAnswer, to_record
from extract.pipeline import _extract_llm_ray, _Extracted, _signature_prefix, make_extractor, run_extract
from extract.prompts import PROMPT_VERSION, build_messages
from extract.vllm_backend import Ground, Preprocess, VLLMSettings, engine_config, postprocess, sampling_params
from reprodiag.errors import UserError
from reprodiag.schema import Record
from reprodiag.store import Store
from tests.extract.llm_helpers import answer_for, llm_thread, thread_number
from tests.fakes.ray_cluster import local_cluster

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    with local_cluster(ray):
        yield


def test_the_engine_config_builds_without_a_gpu() -> None:
    cfg = engine_config(VLLMSettings(model="Qwen/Qwen3-8B", engines=4, tensor_parallel=2, batch_size=16))
    assert cfg.model_source == "Qwen/Qwen3-8B" and cfg.batch_size == 16
    assert cfg.should_continue_on_error is True  # one bad row is an error row, not a failed job
    assert cfg.engine_kwargs["tensor_parallel_size"] == 2 and cfg.engine_kwargs["enable_prefix_caching"]
    assert cfg.get_concurrency(autoscaling_enabled=False)["size"] == 4


def test_the_ray_data_llm_processor_builds_on_cpu(cluster: None, tmp_path: Path) -> None:
    """The whole processor (chat template, tokenize, vLLM engine, detokenize stages) is built without a GPU
    when torch and transformers are installed (they are not in CI: this runs where they are)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from ray.data.llm import build_processor

    model = tmp_path / "tiny-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
                                                   "n_layer": 1, "n_head": 1, "n_embd": 8, "vocab_size": 10}))
    s = VLLMSettings(model=str(model), engines=2, batch_size=8)
    proc = build_processor(engine_config(s), preprocess=Preprocess(s.max_tokens), postprocess=postprocess)
    assert list(proc.stages) == ["ChatTemplateStage", "TokenizeStage", "vLLMEngineStage", "DetokenizeStage"]
    eng = proc.stages["vLLMEngineStage"]
    assert eng.fn_constructor_kwargs["should_continue_on_error"] is True
    assert eng.fn_constructor_kwargs["engine_kwargs"]["tensor_parallel_size"] == 1
    assert eng.map_batches_kwargs["num_gpus"] == 1 and eng.map_batches_kwargs["compute"].max_size == 2


@pytest.mark.parametrize("field,value", [("engines", 0), ("tensor_parallel", 0), ("batch_size", 0),
                                         ("max_tokens", 0)])
def test_settings_refuse_nonsense(field: str, value: int) -> None:
    with pytest.raises(UserError, match=field.replace("_", "-")):
        VLLMSettings(model="m", **{field: value})
    with pytest.raises(UserError, match="--model is required"):
        VLLMSettings(model="")


def test_rows_carry_the_prompt_every_backend_sends_and_ask_for_schema_json() -> None:
    t = llm_thread(3)
    row = Preprocess(max_tokens=1000)({"doc": t.model_dump_json()})
    system, user = build_messages(t)
    assert row["messages"] == [{"role": "system", "content": system}, {"role": "user", "content": user}]
    assert row["sampling_params"] == {"temperature": 0.0, "max_tokens": 1000,
                                      "structured_outputs": {"json": ANSWER_SCHEMA}}
    assert sampling_params(7)["structured_outputs"]["json"] is ANSWER_SCHEMA
    assert row["doc"] == t.model_dump_json()


def _engine_row(doc: str, text: str, *, err: str = "", n_out: int = 30) -> dict[str, Any]:
    return {**postprocess({"doc": doc, "generated_text": text, "num_input_tokens": 900,
                           "num_generated_tokens": n_out}), "__inference_error__": err}


def test_the_cpu_step_validates_grounds_and_keeps_errors_per_row() -> None:
    ts = [llm_thread(i) for i in range(5)]
    good = answer_for(ts[0])
    ungrounded = answer_for(ts[1])
    ungrounded["evidence"] = [dict(e, quote="words that are nowhere in the thread") for e in ungrounded["evidence"]]
    rows = [_engine_row(ts[0].model_dump_json(), json.dumps(good)),
            _engine_row(ts[1].model_dump_json(), json.dumps(ungrounded)),
            _engine_row(ts[2].model_dump_json(), '{"is_reproduction": tru'),
            _engine_row(ts[3].model_dump_json(), "", err="CUDA error: an illegal memory access"),
            _engine_row(ts[4].model_dump_json(), json.dumps(good)[:50], n_out=64)]
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    out = Ground("my-model", max_tokens=64)(cols)
    assert out["thread_id"] == [t.id for t in ts]
    rec = Record.model_validate_json(out["record"][0])
    assert rec == to_record(ts[0], LLMAnswer.model_validate(good), backend="vllm", model="my-model",
                            prompt_version=PROMPT_VERSION)
    assert rec.root_cause and rec.grounded
    weak = Record.model_validate_json(out["record"][1])  # ungrounded fields dropped, as for every backend
    assert weak.symptom.paper_value is None and weak.root_cause is None
    assert out["record"][2:] == ["", "", ""] and out["answer"][2:] == ["", "", ""]
    assert "not valid JSON" in out["failure"][2]
    assert out["failure"][3].startswith("vLLM: CUDA error")
    assert "truncated" in out["failure"][4]
    assert out["usage"][0] == [900, 30, 1, 0, 0] and out["usage"][3][2] == 0
    assert json.loads(out["answer"][0]) == LLMAnswer.model_validate(good).model_dump(mode="json")


class FakeEngine:
    """Stands in for the GPU stage at the Ray Data boundary: the plan's own preprocess and postprocess around a
    deterministic 'model' that answers from the prompt (thread 0 fails at inference, thread 5 the first time
    only, multiples of 7 answer broken JSON)."""

    def __init__(self, threads: dict[int, Any], marker: Path) -> None:
        self.threads, self.marker = threads, marker

    def __call__(self, ds: Any) -> Any:
        threads, marker = self.threads, self.marker

        def generate(row: dict[str, Any]) -> dict[str, Any]:
            n = thread_number(row["messages"][1]["content"])
            err = ""
            if n == 0 or (n == 5 and not marker.exists()):
                if n == 5:
                    marker.write_text("x")
                err = "engine error"
            text = '{"broken' if n and n % 7 == 0 else json.dumps(answer_for(threads[n]))
            return {"doc": row["doc"], "generated_text": "" if err else text, "num_input_tokens": 800,
                    "num_generated_tokens": 90, "__inference_error__": err}

        def post(row: dict[str, Any]) -> dict[str, Any]:
            return row if row["__inference_error__"] else {**postprocess(row), "__inference_error__": ""}

        return ds.map(Preprocess()).map(generate).map(post)


def _run(store: Store, engine: FakeEngine, threads: list[Any]) -> tuple[_Extracted, dict[str, str]]:
    ex = make_extractor("vllm", model="local-model", store=store)
    records, failures = _Extracted(), {}
    todo = [t for t in threads if not store.query("SELECT 1 FROM records WHERE thread_id = ?", (t.id,))]
    _extract_llm_ray(todo, store, ex, Ground("local-model"), _signature_prefix(ex, "vllm", "local-model"), records,
                     failures, None, batch_size=8, plan=engine)
    return records, failures


def test_the_plan_commits_records_caches_answers_and_a_rerun_sends_only_failures(
        cluster: None, tmp_path: Path) -> None:
    threads = [llm_thread(i) for i in range(20)]
    store = Store(tmp_path / "ws")
    store.upsert_threads(threads)
    engine = FakeEngine({i: t for i, t in enumerate(threads)}, tmp_path / "failed-once")
    records, failures = _run(store, engine, threads)
    failed = {threads[i].id for i in (0, 5, 7, 14)}
    assert set(failures) == failed and records.n == 16
    assert {r.thread_id for r in store.iter_records()} == {t.id for t in threads} - failed
    assert all(r.extractor.backend == "vllm" and r.extractor.model == "local-model" for r in store.iter_records())
    assert {i for (i,) in store.query("SELECT item_id FROM rejects")} == failed
    ex = make_extractor("vllm", model="local-model", store=store)
    assert all(store.cache_get(ex.cache_key(t)) is not None for t in threads if t.id not in failed)

    seen: list[int] = []

    class Counting(FakeEngine):
        def __call__(self, ds: Any) -> Any:
            for row in ds.take_all():
                seen.append(thread_number(Preprocess()(row)["messages"][1]["content"]))
            return super().__call__(ds)

    records, failures = _run(store, Counting(engine.threads, engine.marker), threads)
    assert sorted(seen) == [0, 5, 7, 14]  # finished threads are not sent again
    assert set(failures) == {threads[i].id for i in (0, 7, 14)} and records.n == 1


def test_run_extract_refuses_vllm_without_ray_or_without_gpus(cluster: None, tmp_path: Path) -> None:
    store = Store(tmp_path / "ws")
    store.upsert_threads([llm_thread(1)])
    with pytest.raises(UserError, match="add --engine ray"):
        run_extract(store, backend="vllm", model="m", no_filter=True)
    with pytest.raises(UserError, match="need --backend vllm"):
        run_extract(store, backend="rules", no_filter=True, vllm=VLLMSettings(model="m"))
    with pytest.raises(UserError, match=r"needs 1 GPU\(s\) on one node .* has 0"):
        run_extract(store, backend="vllm", model="m", no_filter=True, engine="ray")
    assert store.count("records") == 0


def test_cli_vllm_flags_are_checked(cli, tmp_path: Path) -> None:  # noqa: ANN001
    for args, msg in ((["--backend", "vllm", "--model", "m"], "add --engine ray"),
                      (["--backend", "openai", "--engines", "2"], "need --backend vllm")):
        r = cli("extract", *args, workspace=tmp_path / "ws")
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.gpu
def test_a_real_model_extracts_grounded_records_on_the_gpu(cluster: None, tmp_path: Path) -> None:
    model = os.environ.get("REPRODIAG_VLLM_MODEL")
    pytest.importorskip("vllm")
    if not model or not ray.cluster_resources().get("GPU"):
        pytest.skip("set REPRODIAG_VLLM_MODEL to a model id or directory, on a machine with a GPU")
    threads = [llm_thread(i) for i in range(8)]
    store = Store(tmp_path / "ws")
    store.upsert_threads(threads)
    rep = run_extract(store, backend="vllm", model=model, no_filter=True, engine="ray",
                      vllm=VLLMSettings(model=model, max_model_len=8192))
    assert rep.counts["records"] + rep.counts["failed"] == 8 and rep.counts["records"] >= 6
    assert all(r.extractor.backend == "vllm" for r in store.iter_records())
