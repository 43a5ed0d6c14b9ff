"""``reprodiag bench cascade``: the offline filter as a cost gate in front of an LLM reader, measured.

* the gate: out-of-fold filter probabilities of the real-thread corpus's ``dev`` part (the filter refitted on
  folds grouped by repository, exactly as ``reprodiag train`` fits it), and the highest gate keeping at least
  ``TARGET_RECALL`` of the dev reproductions (:func:`extract.cascade.choose_gate`); the shipped ``LLM_GATE``
  beside it;
* what the shipped gate does on the frozen ``test`` part and on the ``bench pipeline`` corpus (a crawl-like
  mix: 10% reproductions, 15% hard negatives, 75% plain negatives): the share of reproductions that reach the
  LLM and the share of calls saved;
* the cost of reading 1,000 mined threads of that mix: input tokens counted from the real requests
  ``extract --batch`` writes for the threads that pass (system prompt, schema, thread), output tokens from
  the recorded answers (:mod:`extract.recorded`), at the prices of :mod:`extract.pricing`, with and without
  prompt caching (the fixed prefix at the provider's cached rate) and the Batch discount (half price).
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from reprodiag.schema import StageReport, Thread

#: Models priced per 1,000 mined threads.
COST_MODELS = ("gpt-5-nano", "gpt-5-mini", "gpt-5", "claude-haiku-4-5", "claude-sonnet-4-5")
#: The Batch APIs' discount (OpenAI and Anthropic: half price, results within 24 hours).
BATCH_FACTOR = 0.5


def oof_filter_scores(seed: int = 0) -> tuple[list[float], list[bool]]:
    """Out-of-fold filter probabilities and gold labels of the dev part (needs scikit-learn)."""
    from extract.learned.examples import OLDER_SETS, filter_examples
    from extract.learned.train import FILTER_RECALL, fit_binary, real_and_old, recall_threshold
    from extract.realcorpus import REAL_DIR, load_file

    real = load_file(REAL_DIR / "dev.jsonl")
    old = [r for p in OLDER_SETS if p.exists() for r in load_file(p)]
    flt = fit_binary("filter", filter_examples(real_and_old(real, old)), seed, recall_threshold(FILTER_RECALL), {})
    idx = sorted(flt.oof)
    return [flt.oof[i] for i in idx], [bool(flt.examples.y[i]) for i in idx]


def _sent(threads: list[Thread], gate: float) -> list[bool]:
    """Which threads ``extract --backend <LLM>`` sends: filter probability at or above ``gate``."""
    from extract.relevance import classify

    return [d.score >= gate for d in classify(threads)]


def request_tokens(threads: list[Thread]) -> tuple[int, list[int]]:
    """(tokens of the fixed prefix: system prompt and schema; tokens of each thread's own part), counted from
    the requests ``extract --batch`` writes (4 characters a token, the project's estimate)."""
    from extract.openai_backend import OpenAIExtractor
    from extract.recorded import estimate, request_messages

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batch.jsonl"
        ext = OpenAIExtractor("gpt-5-mini", env={"OPENAI_API_KEY": "counting-only"})
        ext.write_batch(threads, path)
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    if not lines:
        return 0, []
    system = request_messages(lines[0])[0]
    schema = json.dumps((lines[0].get("body") or {}).get("response_format") or {})
    prefix = estimate(system + schema)
    return prefix, [estimate(request_messages(x)[1]) for x in lines]


def recorded_output_tokens(answers: Path) -> list[int]:
    """Completion tokens of every usable recorded answer of the set ``answers`` (its test and dev parts)."""
    from extract.recorded import read_results, results_path

    out: list[int] = []
    for part in ("test", "dev"):
        p = results_path(answers, part)
        if p.exists():
            out += [c.usage.output_tokens for c, err in read_results(p).values() if c is not None and not err]
    return out


def cost_per_1000(sent_share: float, prefix: int, thread_tokens: float, output_tokens: float,
                  model: str) -> dict[str, float] | None:
    """USD to read 1,000 mined threads of which ``sent_share`` reach the LLM: ``plain``, ``cached`` (the
    prefix at the provider's cached-input rate; Anthropic's cache writes are negligible over 1,000 calls),
    ``batch`` and ``cached_batch``. None for a model without a price."""
    from extract.pricing import CACHED_INPUT_FACTOR, price_of

    price = price_of(model)
    if price is None:
        return None
    pin, pout = price
    cached_f = max((v for k, v in CACHED_INPUT_FACTOR.items() if model.startswith(k)), default=1.0)
    calls = 1000 * sent_share
    plain = calls * ((prefix + thread_tokens) * pin + output_tokens * pout) / 1e6
    cached = calls * ((prefix * cached_f + thread_tokens) * pin + output_tokens * pout) / 1e6
    return {"plain": plain, "cached": cached, "batch": plain * BATCH_FACTOR, "cached_batch": cached * BATCH_FACTOR}


def run_bench_cascade(*, threads: int = 20_000, seed: int = 0, cv: bool = True,
                      answers: Path | None = None) -> StageReport:
    """The figures of the module docstring. ``threads``: size of the ``bench pipeline`` corpus sample;
    ``cv``: refit the filter out of fold on dev to recompute the gate (a minute or two; needs scikit-learn)."""
    from extract.cascade import LLM_GATE, TARGET_RECALL, choose_gate, gate_figures
    from extract.realcorpus import REAL_DIR, load_file
    from extract.recorded import RECORDED_DIR
    from reprodiag.bench_pipeline import pipeline_corpus

    notes: list[str] = []
    counts: dict[str, Any] = {"gate_permille": round(LLM_GATE * 1000)}
    if cv:
        scores, gold = oof_filter_scores(seed)
        chosen = choose_gate(scores, gold, TARGET_RECALL)
        f = gate_figures(scores, gold, LLM_GATE)
        notes.append(f"dev, out of fold ({len(gold)} threads, {sum(gold)} reproductions): the highest gate keeping "
                     f">= {TARGET_RECALL} of the reproductions is {chosen:g} (shipped {LLM_GATE:g}); at the shipped "
                     f"gate {f['recall']:.3f} of the reproductions reach the LLM, {f['saved']:.3f} of the calls saved")
        counts["dev_cv_gate_permille"] = round(chosen * 1000)

    test = load_file(REAL_DIR / "test.jsonl")
    sent = _sent([r.thread for r in test], LLM_GATE)
    pos = [bool(r.gold.get("is_reproduction")) for r in test]
    t_rec = sum(s and p for s, p in zip(sent, pos, strict=True)) / max(sum(pos), 1)
    notes.append(f"test ({len(test)} threads, {sum(pos)} reproductions): {t_rec:.3f} of the reproductions reach the "
                 f"LLM, {1 - sum(sent) / len(sent):.3f} of the calls saved")

    corpus, _ = pipeline_corpus(threads, seed)
    positives = _pipeline_positives(corpus)
    sent_c = _sent(corpus, LLM_GATE)
    share = sum(sent_c) / len(sent_c)
    c_rec = sum(s and p for s, p in zip(sent_c, positives, strict=True)) / max(sum(positives), 1)
    notes.append(f"bench pipeline corpus ({len(corpus)} threads, {sum(positives)} reproductions): {c_rec:.3f} of the "
                 f"reproductions reach the LLM, {share:.3f} of the threads are sent ({1 - share:.3f} of the calls "
                 "saved)")
    counts.update(pipeline_threads=len(corpus), pipeline_sent=sum(sent_c))

    prefix, per_thread = request_tokens([t for t, s in zip(corpus, sent_c, strict=True) if s][:2000])
    outs = recorded_output_tokens(Path(answers or RECORDED_DIR))
    mean_thread = statistics.fmean(per_thread) if per_thread else 0.0
    mean_out = statistics.fmean(outs) if outs else 0.0
    notes.append(f"tokens per request: fixed prefix {prefix} (system prompt and schema), thread {mean_thread:.0f} on "
                 f"average (counted from the batch requests of the threads sent), output {mean_out:.0f} on average "
                 f"({len(outs)} recorded answers)")
    for model in COST_MODELS:
        c = cost_per_1000(share, prefix, mean_thread, mean_out, model)
        if c is None:
            continue
        notes.append(f"{model}: ${c['plain']:.3f} per 1,000 mined threads (${c['cached']:.3f} with prompt caching; "
                     f"Batch API ${c['batch']:.3f}, ${c['cached_batch']:.3f} cached)")
    return StageReport(stage="bench cascade", counts=counts, notes=notes)


def _pipeline_positives(corpus: list[Thread]) -> list[bool]:
    """Which threads of the ``bench pipeline`` corpus are reproductions: the copies of the real corpus's
    reproductions (same title, the template's body followed by an environment line and maybe a log)."""
    from reprodiag.bench_pipeline import real_templates

    pos, _neg = real_templates()
    by_title: dict[str, list[str]] = {}
    for t in pos:
        by_title.setdefault(t.title, []).append(t.body)
    return [any(t.body.startswith(b) for b in by_title.get(t.title, ())) for t in corpus]
