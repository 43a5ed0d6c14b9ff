"""The ``filter`` and ``extract`` stages: workspace mode (the Store) or file mode (JSONL in/out).

Workspace mode is resumable: decisions and records are written in batches
inside transactions; a re-run skips threads whose record exists and whose
content hash is unchanged (the hash is kept in the cache table), so a run
killed at any point finishes with the same result as an uninterrupted one.
A thread rejected on one run and extracted on a later one loses its stale
reject in the same transaction that stores its record.

The rules backend reads the threads the filter calls reproductions that someone
answered: a thread with no human reply (signal ``no_reply``) is counted and
skipped (SPEC: threads with no reply are dropped). An LLM backend reads every
thread whose filter probability reaches the cascade gate (:mod:`extract.cascade`),
answered or not, because it judges ``is_reproduction`` itself (an unanswered
thread is short, so its call is cheap, and ``score`` drops its record until
someone replies); ``--no-filter`` sends every thread. The rules backend's cache
signature includes the digest of the shipped learned models, so retraining them
re-extracts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from extract.base import Extractor
from extract.relevance import classify
from reprodiag import console
from reprodiag.atomic_write import replacing
from reprodiag.batching import batched
from reprodiag.errors import UserError
from reprodiag.schema import FilterDecision, Record, SchemaError, StageReport, Thread, parse_thread

if TYPE_CHECKING:
    from extract.vllm_backend import VLLMSettings

#: Threads per transaction in workspace mode.
BATCH = 200
BACKENDS = ("rules", "openai", "anthropic", "openai-compatible", "vllm")


@dataclass(frozen=True)
class ReadThreads:
    """Threads read from a file and, with ``--skip-invalid``, how many lines were skipped and where they went."""

    threads: list[Thread]
    skipped: int = 0
    rejects: Path | None = None


def rejects_path(path: Path) -> Path:
    """Where ``--skip-invalid`` writes the bad lines of ``path``: ``<path>.rejects.jsonl`` beside it."""
    return path.with_name(path.name + ".rejects.jsonl")


def read_threads_file(path: Path, *, skip_invalid: bool = False) -> ReadThreads:
    """Threads from a JSONL file. A malformed line is a UserError naming file and line; with
    ``skip_invalid`` it goes to :func:`rejects_path` (``{"line", "reason", "text"}``, the text cut to 2,000
    characters) and reading goes on. Null optional GitHub fields read as their defaults (see the schema)."""
    try:
        fh = path.open(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    out: list[Thread] = []
    bad: list[dict[str, Any]] = []
    with fh:
        try:
            for no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except ValueError as exc:
                    reason = f"not valid JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else "not valid JSON"
                    if not skip_invalid:
                        raise UserError(f"{path}:{no}: {reason}") from None
                    bad.append({"line": no, "reason": reason, "text": line[:2000]})
                    continue
                try:
                    out.append(parse_thread(doc))
                except SchemaError as exc:
                    if not skip_invalid:
                        raise UserError(f"{path}:{no}: {exc}") from None
                    bad.append({"line": no, "reason": str(exc), "text": line[:2000]})
        except UnicodeDecodeError:
            raise UserError(f"{path}: not UTF-8 text") from None
    if not skip_invalid:
        return ReadThreads(out)
    rej = rejects_path(path)
    _write_jsonl(rej, bad)
    return ReadThreads(out, len(bad), rej)


def read_threads(path: Path) -> list[Thread]:
    """Threads from a JSONL file; a malformed line is a UserError naming file and line."""
    return read_threads_file(path).threads


def _write_jsonl(path: Path, docs: Iterable[dict[str, Any]]) -> None:
    with replacing(path) as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")


def run_filter(store: Any, *, input: Path | None = None, output: Path | None = None,
               skip_invalid: bool = False, engine: str = "local", ray_address: str | None = None) -> StageReport:
    """Decide every thread (workspace: all stored threads → decisions table; file: JSONL → JSONL;
    ``skip_invalid``: bad lines go to a rejects file instead of stopping). ``engine="ray"``: the workspace's
    threads are decided by :func:`decide_docs` on Ray (:mod:`reprodiag.ray_engine`), same result."""
    from reprodiag.ray_engine import check_engine

    check_engine(engine, ray_address)
    if engine == "ray" and input is not None:
        raise UserError("--engine ray works on the workspace: drop --input, or use --engine local")
    if input is not None:
        got = read_threads_file(input, skip_invalid=skip_invalid)
        decisions = classify(got.threads)
        out = output or input.with_name("decisions.jsonl")
        _write_jsonl(out, (d.model_dump(mode="json") for d in decisions))
        decided = _Decided(len(decisions), sum(d.is_reproduction for d in decisions),
                           sum("no_reply" in d.signals for d in decisions))
        return _with_skipped(_filter_report(decided, {"decisions": str(out)}), got)
    if store is None:
        raise UserError("filter needs a workspace or --input")
    decided = (_decide_stored(store, only_stale=False) if engine == "local"
               else _decide_stored_ray(store, address=ray_address))
    outputs: dict[str, str] = {}
    if output is not None:
        _write_jsonl(output, (d.model_dump(mode="json") for d in store.iter_decisions()))
        outputs["decisions"] = str(output)
    return _filter_report(decided, outputs)


def _with_skipped(rep: StageReport, got: ReadThreads) -> StageReport:
    if got.rejects is None:
        return rep
    return rep.model_copy(update={"counts": {**rep.counts, "skipped invalid lines": got.skipped},
                                  "outputs": {**rep.outputs, "rejects": str(got.rejects)},
                                  "notes": rep.notes + ([f"{got.skipped} invalid line(s) skipped: {got.rejects}"]
                                                        if got.skipped else [])})


def _filter_key(tid: str) -> str:
    return "filter-hash:" + tid


@dataclass
class _Decided:
    """What a filter pass over the workspace decided, counted (never the decisions themselves)."""

    threads: int = 0
    reproduction: int = 0
    no_reply: int = 0


def _decide_stored(store: Any, *, only_stale: bool) -> _Decided:
    """Decide stored threads in transactions of ``BATCH`` (decision + content hash together), reading the
    threads a page at a time.

    ``only_stale``: skip threads whose decision was made on their current content, so a filter run killed
    part-way, or threads added or updated since, are decided on the next run."""
    out = _Decided()
    batch: list[Thread] = []

    def flush() -> None:
        got = classify(batch)
        with store.transaction():
            store.put_decisions(got)
            for t in batch:
                store.cache_put(_filter_key(t.id), t.content_hash())
        out.threads += len(got)
        out.reproduction += sum(d.is_reproduction for d in got)
        out.no_reply += sum("no_reply" in d.signals for d in got)
        batch.clear()

    for t in store.iter_threads():
        if only_stale and store.cache_get(_filter_key(t.id)) == t.content_hash() and store.query(
                "SELECT 1 FROM decisions WHERE thread_id=?", (t.id,)):
            continue
        batch.append(t)
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    return out


def decide_docs(cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The filter's batch function over thread JSON documents (``cols["doc"]``): each thread's decision (JSON)
    and content hash, same order. Pure: what ``--engine ray`` runs on the workers."""
    threads = [Thread.model_validate_json(d) for d in cols["doc"]]
    got = classify(threads)
    return {"thread_id": [d.thread_id for d in got], "decision": [d.model_dump_json() for d in got],
            "content_hash": [t.content_hash() for t in threads]}


def _decide_stored_ray(store: Any, *, address: str | None) -> _Decided:
    """``filter`` of every stored thread on Ray: exported, decided by :func:`decide_docs` in blocks of
    ``BATCH``, each result block committed (decisions + content hashes) in one transaction as it arrives."""
    import pyarrow as pa

    from reprodiag.ray_engine import map_rows

    out = _Decided()
    for block in map_rows(({"doc": d} for _, d in store.paged("threads", "id", "doc")), decide_docs,
                          columns={"doc": pa.large_string()}, batch_size=BATCH, address=address):
        got = [FilterDecision.model_validate_json(d) for d in block["decision"]]
        with store.transaction():
            store.put_decisions(got)
            for tid, h in zip(block["thread_id"], block["content_hash"], strict=True):
                store.cache_put(_filter_key(tid), h)
        out.threads += len(got)
        out.reproduction += sum(d.is_reproduction for d in got)
        out.no_reply += sum("no_reply" in d.signals for d in got)
    return out


def _filter_report(decided: _Decided, outputs: dict[str, str]) -> StageReport:
    return StageReport(stage="filter", counts={"threads": decided.threads, "reproduction": decided.reproduction,
                                               "dropped": decided.threads - decided.reproduction,
                                               "no_reply": decided.no_reply}, outputs=outputs)


def make_extractor(backend: str, *, model: str | None = None, base_url: str | None = None, store: Any = None,
                   concurrency: int = 8) -> Extractor:
    """The extractor for ``--backend`` (LLM SDKs are imported only when chosen)."""
    if backend == "rules":
        from extract.rules import RulesExtractor

        return RulesExtractor()
    kw = {"store": store, "concurrency": concurrency}
    if backend == "openai":
        from extract.openai_backend import OpenAIExtractor

        return OpenAIExtractor(model, base_url=base_url, **kw)
    if backend == "anthropic":
        from extract.anthropic_backend import AnthropicExtractor

        return AnthropicExtractor(model, base_url=base_url, **kw)
    if backend == "openai-compatible":
        from extract.compatible_backend import CompatibleExtractor

        return CompatibleExtractor(model, base_url=base_url, **kw)
    if backend == "vllm":
        from extract.vllm_backend import VLLMExtractor

        return VLLMExtractor(model, **kw)
    raise UserError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}")


def _hash_key(tid: str) -> str:
    return "extract-hash:" + tid


def _signature(extractor: Extractor, backend: str, model: str | None, thread: Thread) -> str:
    """What a stored record was extracted from: backend, model, prompt/rules version and thread content.

    A record is re-extracted when any of them changes (e.g. rules first, then an LLM backend)."""
    return f"{_signature_prefix(extractor, backend, model)}|{thread.content_hash()}"


def _signature_prefix(extractor: Extractor, backend: str, model: str | None) -> str:
    """:func:`_signature` without the thread's content hash."""
    from extract.rules import PROMPT_VERSION as RULES_VERSION

    version = RULES_VERSION if backend == "rules" else getattr(extractor, "prompt_version", None)
    if version is None:
        from extract.prompts import PROMPT_VERSION as version
    if backend == "rules":
        version += "+" + models_digest()
    return "|".join((backend, model or "", version))


def models_digest() -> str:
    """Digest of the shipped learned models the rules extractor applies (retraining re-extracts)."""
    from extract.learned.linear import shipped
    from extract.learned.predict import MODEL_NAMES

    return ",".join(shipped(n).digest for n in MODEL_NAMES if n != "filter")


@dataclass
class _Extracted:
    """What extraction produced, counted; ``records`` holds them only in file mode (they are the output)."""

    n: int = 0
    grounded: int = 0
    records: list[Record] | None = None

    def add(self, got: list[Record]) -> None:
        self.n += len(got)
        self.grounded += sum(r.grounded for r in got)
        if self.records is not None:
            self.records.extend(got)


def _extract_chunk(chunk: list[Thread], *, extractor: Extractor, store: Any, collect: Path | None,
                   failures: dict[str, str], records: _Extracted, sig: Any) -> None:
    """Extract one chunk; in workspace mode store its records, signatures and rejects in one transaction."""
    got = extractor.collect(chunk, collect) if collect is not None else extractor.extract(chunk)  # type: ignore[attr-defined]
    fails = dict(getattr(extractor, "failures", {}))
    chunk_ids = {t.id for t in chunk}
    new_fails = {k: v for k, v in fails.items() if k not in failures and k in chunk_ids}
    failures.update(new_fails)
    if store is not None:
        by_id = {t.id: t for t in chunk}
        _store_extracted(store, got, {r.thread_id: sig(by_id[r.thread_id]) for r in got}, new_fails)
    records.add(got)


def _store_extracted(store: Any, got: list[Record], sigs: dict[str, str], fails: dict[str, str],
                     answers: dict[str, Any] | None = None) -> None:
    """One transaction: the records, their extraction signatures, new LLM answers (cache key → answer), one
    reject per failed thread; a thread that failed on an earlier run and now succeeded is no longer a reject."""
    with store.transaction():
        store.put_records(got)
        for k, a in (answers or {}).items():
            store.cache_put(k, a)
        for tid, sig in sigs.items():
            store.cache_put(_hash_key(tid), sig)
        if fails:
            store.put_rejects("extract", sorted(fails.items()))
        store.delete_rejects("extract", [r.thread_id for r in got if r.thread_id not in fails])


#: SQL: a decision row ``d`` whose signals include ``no_reply``.
_NO_REPLY = "EXISTS (SELECT 1 FROM json_each(d.doc, '$.signals') WHERE value = 'no_reply')"


def _kept_cond(backend: str) -> str:
    """SQL over a decision row ``d``: the thread goes to ``backend``. The rules extractor reads the threads the
    filter keeps that someone answered (SPEC); an LLM reader gets every thread at or above the cascade gate
    (:mod:`extract.cascade`), since it judges ``is_reproduction`` itself."""
    from extract.cascade import LLM_GATE

    if backend == "rules":
        return f"d.is_reproduction=1 AND NOT {_NO_REPLY}"
    return f"json_extract(d.doc, '$.score') >= {LLM_GATE!r}"


def _kept_ids(backend: str) -> str:
    """SQL: ids of the threads extract works on with ``backend``."""
    return f"SELECT d.thread_id FROM decisions d WHERE {_kept_cond(backend)}"


#: SQL over ``records``: the record was made by the offline reader.
_BY_RULES = "json_extract(doc, '$.extractor.backend') = 'rules'"


def _stale_threads(store: Any, no_filter: bool, sig: Any, skipped: list[int], backend: str = "rules"
                   ) -> Iterator[Thread]:
    """The threads to extract, read a page at a time: every thread (``no_filter``) or the kept ones, minus
    those whose stored record was made from the same content, backend and version, and, for the offline
    reader, those an LLM reader has read (its record is kept: the datasets come from the measured reader);
    both counted in ``skipped[0]``."""
    if no_filter:
        rows = store.paged("threads", "id", "doc")
    else:
        rows = store.paged("decisions d JOIN threads t ON t.id = d.thread_id", "d.thread_id", "t.doc",
                           _kept_cond(backend))
    for _, doc in rows:
        t = Thread.model_validate_json(doc)
        held = store.query("SELECT json_extract(doc, '$.extractor.backend') FROM records WHERE thread_id=?",
                           (t.id,))
        if held and (store.cache_get(_hash_key(t.id)) == sig(t) or (backend == "rules" and held[0][0] != "rules")):
            skipped[0] += 1  # unchanged, or an LLM reader's record the offline reader does not replace
            continue
        yield t


def extract_rules_docs(cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The rules extractor's batch function over thread JSON documents (``cols["doc"]``): each thread's id,
    record (JSON) and content hash, same order. Pure: what ``extract --engine ray`` runs on the workers."""
    from extract.rules import RulesExtractor

    threads = [Thread.model_validate_json(d) for d in cols["doc"]]
    got = RulesExtractor().extract(threads)
    return {"thread_id": [t.id for t in threads], "record": [r.model_dump_json() for r in got],
            "content_hash": [t.content_hash() for t in threads]}


@dataclass(frozen=True)
class LLMBatch:
    """An LLM backend's batch function for ``extract --engine ray``: a fresh extractor (no workspace) per
    batch, ``concurrency`` requests in flight on each worker. API keys come from the workers' environment
    (a local cluster inherits this process's); they never travel with the task."""

    backend: str
    model: str | None
    base_url: str | None
    concurrency: int
    #: ``(actor name, rpm, tpm)`` of the run's shared rate limit (:func:`extract.ratelimit.shared_limiter`).
    limit: tuple[str, float | None, float | None] | None = None

    def __call__(self, cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
        threads = [Thread.model_validate_json(d) for d in cols["doc"]]
        ex = make_extractor(self.backend, model=self.model, base_url=self.base_url, concurrency=self.concurrency)
        if self.limit is not None:
            from extract.ratelimit import shared_limiter

            ex.limiter = shared_limiter(*self.limit)  # type: ignore[attr-defined]
        got = {r.thread_id: r for r in ex.extract(threads)}
        fails = dict(getattr(ex, "failures", {}))
        answers = getattr(ex, "answers", {})
        u = getattr(ex, "usage", None)
        n = len(threads)
        usage = [u.input_tokens, u.output_tokens, u.calls, u.cached_input_tokens, u.cache_write_tokens] if u else [0] * 5
        return {"thread_id": [t.id for t in threads],
                "record": [got[t.id].model_dump_json() if t.id in got else "" for t in threads],
                "answer": [json.dumps(answers[t.id]) if t.id in answers else "" for t in threads],
                "failure": [fails.get(t.id, "") if t.id not in got else "" for t in threads],
                "content_hash": [t.content_hash() for t in threads],
                "usage": [usage if i == 0 else [0] * 5 for i in range(n)]}


def _extract_llm_ray(todo: Iterable[Thread], store: Any, extractor: Extractor, fn: Callable[..., Any],
                     sig_prefix: str, records: _Extracted, failures: dict[str, str], address: str | None, *,
                     batch_size: int, plan: Callable[[Any], Any] | None = None) -> None:
    """An LLM backend on Ray: threads whose answer the workspace cache holds are recorded here without a
    request; the others go to the workers in blocks of ``batch_size`` (through ``plan`` first, e.g. the vLLM
    engine, when given); each result block of ``fn`` (:class:`LLMBatch`, :class:`extract.vllm_backend.Ground`)
    is committed here (records, answers under the local cache keys, signatures, one reject per failed
    thread) in one transaction."""
    import pyarrow as pa

    from extract.answer import LLMAnswer
    from extract.pricing import Usage
    from reprodiag.ray_engine import map_rows

    def commit(got: list[Record], answers: dict[str, Any], hashes: dict[str, str], fails: dict[str, str]) -> None:
        _store_extracted(store, got, {tid: f"{sig_prefix}|{h}" for tid, h in hashes.items()}, fails, answers)
        failures.update(fails)
        records.add(got)

    keys: dict[str, str] = {}
    hits: list[tuple[Record, str]] = []

    def commit_hits() -> None:
        commit([r for r, _ in hits], {}, {r.thread_id: h for r, h in hits}, {})
        hits.clear()

    def pending() -> Iterator[dict[str, Any]]:
        for t in todo:
            key = extractor.cache_key(t)  # type: ignore[attr-defined]
            hit = store.cache_get(key)
            if hit is not None:  # answered before (e.g. by a killed run): no request
                hits.append((extractor._record(t, LLMAnswer.model_validate(hit)), t.content_hash()))  # type: ignore[attr-defined]
                extractor.cache_hits += 1  # type: ignore[attr-defined]
                if len(hits) >= BATCH:
                    commit_hits()
                continue
            keys[t.id] = key
            yield {"doc": t.model_dump_json()}

    cols = {"doc": pa.large_string()}
    usage = Usage()
    for block in map_rows(pending(), fn, columns=cols, batch_size=batch_size, address=address,
                          rows_per_file=batch_size, before=plan):
        got = [Record.model_validate_json(r) for r in block["record"] if r]
        answers = {keys[tid]: json.loads(a) for tid, a in zip(block["thread_id"], block["answer"], strict=True) if a}
        hashes = {tid: h for tid, h, r in zip(block["thread_id"], block["content_hash"], block["record"], strict=True)
                  if r}
        fails = {tid: f for tid, f in zip(block["thread_id"], block["failure"], strict=True) if f}
        commit(got, answers, hashes, fails)
        for u in block["usage"]:
            usage = usage + Usage(*u)
    if hits:
        commit_hits()
    extractor.usage = extractor.usage + usage  # type: ignore[attr-defined]


def _extract_ray(todo: Iterable[Thread], store: Any, sig_prefix: str, records: _Extracted,
                 address: str | None) -> None:
    """The workspace's pending threads through :func:`extract_rules_docs` on Ray; each result block is
    committed (records + signatures, former rejects cleared) in one transaction as it arrives."""
    import pyarrow as pa

    from reprodiag.ray_engine import map_rows

    for block in map_rows(({"doc": t.model_dump_json()} for t in todo), extract_rules_docs,
                          columns={"doc": pa.large_string()}, batch_size=BATCH, address=address):
        got = [Record.model_validate_json(r) for r in block["record"]]
        _store_extracted(store, got, {tid: f"{sig_prefix}|{h}" for tid, h in
                                      zip(block["thread_id"], block["content_hash"], strict=True)}, {})
        records.add(got)


def run_extract(store: Any, *, input: Path | None = None, output: Path | None = None, backend: str = "rules",
                model: str | None = None, base_url: str | None = None, no_filter: bool = False,
                concurrency: int = 8, batch: Path | None = None, collect: Path | None = None,
                skip_invalid: bool = False, engine: str = "local", ray_address: str | None = None,
                rpm: float | None = None, tpm: float | None = None, vllm: VLLMSettings | None = None) -> StageReport:
    """Threads → records. See the module docstring for resumability; ``batch``/``collect`` use Batch API files.
    ``engine="ray"`` (workspace): extraction on Ray (:func:`extract_rules_docs`, :class:`LLMBatch`), same
    result. ``rpm``/``tpm``: requests / tokens per minute for the LLM backends, over the whole run (on Ray:
    one limiter shared by every worker). ``backend="vllm"`` (with ``engine="ray"``): a local model on the
    cluster's GPUs through Ray Data LLM, ``vllm`` its settings (:mod:`extract.vllm_backend`)."""
    from reprodiag.ray_engine import check_engine

    check_engine(engine, ray_address)
    if backend == "vllm" and engine != "ray":
        raise UserError("--backend vllm runs on Ray Data: add --engine ray (or serve the model with `vllm serve` "
                        "and use --backend openai-compatible --base-url …)")
    if vllm is not None and backend != "vllm":
        raise UserError("vLLM settings (--engines, --tensor-parallel) need --backend vllm")
    if backend == "vllm":
        from extract.vllm_backend import VLLMSettings

        vllm = replace(vllm, model=model or vllm.model) if vllm is not None else VLLMSettings(model=model or "")
        model = vllm.model
    if engine == "ray" and (input is not None or batch or collect):
        raise UserError("extract --engine ray works on the workspace (no --input, --batch or --collect): "
                        "use --engine local")
    if (batch or collect) and backend not in ("openai", "anthropic"):
        raise UserError("--batch/--collect need --backend openai or anthropic")
    extractor = make_extractor(backend, model=model, base_url=base_url, store=store, concurrency=concurrency)
    limit = None
    if (rpm or tpm) and backend != "rules":
        from extract.ratelimit import RateLimit, local_limiter, shared_limiter_name

        try:
            extractor.limiter = local_limiter(RateLimit(rpm, tpm))  # type: ignore[attr-defined]
        except ValueError as exc:
            raise UserError(str(exc)) from None
        limit = (shared_limiter_name(), rpm, tpm)
    file_mode = input is not None
    counts: dict[str, int] = {}
    read: ReadThreads | None = None
    todo: Iterable[Thread]
    if file_mode:
        read = read_threads_file(input, skip_invalid=skip_invalid)
        threads = read.threads
        if not no_filter:
            from extract.cascade import passes

            got = classify(threads)
            sent = [d for d in got if (d.is_reproduction if backend == "rules" else passes(d))]
            keep = {d.thread_id for d in sent if backend != "rules" or "no_reply" not in d.signals}
            counts["no_reply"] = sum("no_reply" in d.signals for d in sent)
            counts["filtered_out"] = len(threads) - len(keep)
            threads = [t for t in threads if t.id in keep]
        todo = threads
        counts["threads"] = total = len(threads)
    else:
        if store is None:
            raise UserError("extract needs a workspace or --input")
        if not no_filter:
            _decide_stored(store, only_stale=True)
            judged = ("d.is_reproduction=1" if backend == "rules" else _kept_cond(backend)) + f" AND {_NO_REPLY}"
            counts["no_reply"] = store.query(f"SELECT count(*) FROM decisions d WHERE {judged}")[0][0]
            # threads the filter no longer keeps (e.g. edited since) must not keep a stale record; the offline
            # reader never removes an LLM reader's record (its gate is stricter than the cascade's)
            stale = f"thread_id NOT IN ({_kept_ids(backend)})" + (f" AND {_BY_RULES}" if backend == "rules" else "")
            removed = store.query(f"SELECT count(*) FROM records WHERE {stale}")[0][0]
            if removed:
                with store.transaction() as c:
                    c.execute(f"DELETE FROM records WHERE {stale}")
                counts["records_removed"] = removed
        counts["threads"] = total = (store.count("threads") if no_filter else
                                     store.query(f"SELECT count(*) FROM ({_kept_ids(backend)})")[0][0])
        skipped = [0]
        todo = _stale_threads(store, no_filter, lambda t: _signature(extractor, backend, model, t), skipped,
                              backend)
    notes: list[str] = []
    outputs: dict[str, str] = {}
    if backend != "rules" and not no_filter:
        from extract.cascade import LLM_GATE

        seen = len(read.threads) if read is not None else store.count("threads")
        counts["below_gate"] = seen - total
        notes.append(f"cascade: {total} of {seen} threads reach the LLM (filter probability >= {LLM_GATE}; "
                     f"{counts.get('no_reply', 0)} of them with no reply yet, whose records `score` drops until "
                     f"someone replies); {counts['below_gate']} below the gate; --no-filter sends every thread")
    if batch is not None:
        todo = list(todo)
        if not file_mode:
            counts["skipped_unchanged"] = skipped[0]
        n = extractor.write_batch(todo, batch)  # type: ignore[attr-defined]
        counts["batch_requests"] = n
        outputs["batch"] = str(batch)
        notes.append(f"wrote {n} batch requests; submit the file, then run extract --collect RESULTS")
        return StageReport(stage="extract", counts=counts, outputs=outputs, notes=notes)
    records = _Extracted(records=[] if file_mode else None)
    failures: dict[str, str] = {}
    if engine == "ray" and backend == "rules":
        _extract_ray(todo, store, _signature_prefix(extractor, backend, model), records, ray_address)
    elif engine == "ray" and backend == "vllm":
        from extract.vllm_backend import Ground, VLLMPlan

        assert vllm is not None  # set above for this backend
        _extract_llm_ray(todo, store, extractor, Ground(vllm.model, vllm.max_tokens),
                         _signature_prefix(extractor, backend, model), records, failures, ray_address,
                         batch_size=vllm.batch_size * vllm.engines, plan=VLLMPlan(vllm))
    elif engine == "ray":
        # latency-bound: small blocks, so every worker has requests in flight (a block is one task)
        _extract_llm_ray(todo, store, extractor, LLMBatch(backend, model or getattr(extractor, "model", None),
                                                          base_url, concurrency, limit),
                         _signature_prefix(extractor, backend, model), records, failures, ray_address,
                         batch_size=max(4 * concurrency, 8))
    with console.progress_bar() as prog:
        task = prog.add_task(f"extract ({backend})", total=total, status="")
        for chunk in batched(todo if engine == "local" else (), BATCH):
            _extract_chunk(chunk, extractor=extractor, store=None if file_mode else store, collect=collect,
                           failures=failures, records=records, sig=lambda t: _signature(extractor, backend,
                                                                                        model, t))
            prog.update(task, completed=records.n + len(failures) + (0 if file_mode else skipped[0]),
                        status=f"{len(failures)} failed" if failures else "")
    if not file_mode:
        counts["skipped_unchanged"] = skipped[0]
    if file_mode:
        out = output or input.with_name("records.jsonl")
        _write_jsonl(out, (r.model_dump(mode="json") for r in records.records or []))
        outputs["records"] = str(out)
        if failures:
            rej = out.with_name(out.stem + ".rejects.jsonl")
            _write_jsonl(rej, [{"thread_id": k, "reason": v} for k, v in sorted(failures.items())])
            outputs["rejects"] = str(rej)
    elif output is not None:
        _write_jsonl(output, (r.model_dump(mode="json") for r in store.iter_records()))
        outputs["records"] = str(output)
    counts["records"] = records.n
    counts["failed"] = len(failures)
    counts["grounded"] = records.grounded
    if hasattr(extractor, "cost_summary"):
        notes.append("LLM usage: " + extractor.cost_summary())  # type: ignore[attr-defined]
        counts["cache_hits"] = getattr(extractor, "cache_hits", 0)
    if failures:
        console.warn(f"{len(failures)} thread(s) could not be extracted (see rejects)")
    rep = StageReport(stage="extract", counts=counts, outputs=outputs, notes=notes)
    if read is not None and read.rejects is not None:
        rep = rep.model_copy(update={"counts": {**rep.counts, "skipped invalid lines": read.skipped},
                                     "outputs": {**rep.outputs, "invalid lines": str(read.rejects)},
                                     "notes": rep.notes + ([f"{read.skipped} invalid input line(s) skipped: "
                                                            f"{read.rejects}"] if read.skipped else [])})
    return rep
