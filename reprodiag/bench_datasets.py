"""``reprodiag bench datasets``: build datasets from a labeled thread corpus the way a user's run does
(filter → extract → score → build, which audits its output) and report the audit figures beside the funnel
and the time each stage took.

Corpora: ``real`` (``extract/data/real``, dev and test: real threads nobody tuned the build on), ``sample``
(the demo's bundled threads), or a JSONL file of threads (Thread contract, or ``{"thread": …}`` rows).
Readers: ``rules`` (the offline reader; its records may become eval items here, flagged on the card) or
``recorded`` (the LLM reader fed by recorded answers, :mod:`extract.recorded`, joined through ``extract
--collect`` exactly as a Batch API run's results; only the corpus threads the recorded set answers)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError
from reprodiag.schema import StageReport, Thread, parse_thread


def corpus_threads(corpus: str) -> list[Thread]:
    """The threads of ``corpus`` (``real``, ``sample`` or a JSONL path)."""
    if corpus == "real":
        from extract.realcorpus import load_real

        return [r.thread for r in load_real("all")]
    if corpus == "sample":
        from reprodiag.sample import load_sample_threads

        return load_sample_threads()
    path = Path(corpus)
    if not path.is_file():
        raise UserError(f"--corpus must be real, sample or a JSONL file of threads; {corpus!r} is none of them")
    out: list[Thread] = []
    for no, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            out.append(parse_thread(doc.get("thread", doc) if isinstance(doc, dict) else doc))
        except (ValueError, TypeError, AttributeError) as exc:
            raise UserError(f"{path}:{no}: not a thread: {' '.join(str(exc).split())[:160]}") from None
    return out


#: ``bench datasets --reader``
READERS = ("rules", "recorded")


def _recorded_results(answers: Path, corpus: str, threads: list[Thread], tmp: Path) -> tuple[Path, list[Thread], str]:
    """One results file holding every part of the recorded set ``answers``, the ``threads`` it answers, and
    the model that answered (stale answers are a UserError)."""
    from extract.llm import custom_id
    from extract.recorded import read_manifest, read_results, results_path, staleness

    manifest = read_manifest(answers)
    if stale := staleness(manifest):
        raise UserError(f"the recorded answers in {answers} are stale ({stale}): record them again")
    parts = [p for p in ("test", "dev", "sample") if results_path(answers, p).exists()]
    merged = tmp / "recorded.results.jsonl"
    merged.write_text("".join(results_path(answers, p).read_text(encoding="utf-8") for p in parts),
                      encoding="utf-8")
    have = set(read_results(merged))
    answered = [t for t in threads if custom_id(t.id) in have]
    if not answered:
        raise UserError(f"the recorded answers in {answers} answer none of the threads of corpus {corpus!r}")
    return merged, answered, manifest.model


def run_bench_datasets(*, corpus: str = "real", seed: int = 0, out_dir: Path | None = None,
                       per_type_min: int = 5, per_type_max: int = 40, reader: str = "rules",
                       answers: Path | None = None) -> StageReport:
    """Run the stages over ``corpus`` in a fresh workspace; ``out_dir`` keeps the datasets (else a
    temporary folder that is removed). ``reader``: ``rules`` or ``recorded`` (``answers``: a recorded set,
    default the shipped one)."""
    from extract.pipeline import run_extract, run_filter
    from extract.recorded import RECORDED_DIR
    from reprodiag.build import run_build
    from reprodiag.config import temporary_env
    from reprodiag.store import Store
    from scoring.pipeline import run_score

    if reader not in READERS:
        raise UserError(f"--reader must be one of {', '.join(READERS)}, got {reader!r}")
    threads = corpus_threads(corpus)
    if not threads:
        raise UserError(f"corpus {corpus!r} holds no threads")
    with tempfile.TemporaryDirectory(prefix="reprodiag-bench-") as tmp:
        if reader == "recorded":
            results, threads, model = _recorded_results(Path(answers or RECORDED_DIR), corpus, threads, Path(tmp))
        ws = Path(tmp) / "ws"
        target = Path(out_dir) if out_dir is not None else Path(tmp) / "datasets"
        seconds: dict[str, float] = {}
        with Store(ws) as store:
            store.upsert_threads(threads)
            t = time.perf_counter()
            run_filter(store)
            seconds["filter"] = time.perf_counter() - t
            t = time.perf_counter()
            if reader == "recorded":  # what `extract --collect RESULTS` does with a Batch API run's results
                with temporary_env("OPENAI_API_KEY", "recorded-answers-need-no-key"):
                    run_extract(store, backend="openai", model=f"recorded {model}", collect=results, concurrency=1)
            else:
                run_extract(store, backend="rules", concurrency=1)
            seconds["extract"] = time.perf_counter() - t
            t = time.perf_counter()
            run_score(store, input=None, output=None, seed=seed)
            seconds["score"] = time.perf_counter() - t
            t = time.perf_counter()
            rep = run_build(store, target, per_type_min=per_type_min, per_type_max=per_type_max, seed=seed,
                            push_to_hub=None, eval_from="llm" if reader == "recorded" else "offline")
            seconds["build + audit"] = time.perf_counter() - t
        audit: dict[str, Any] = json.loads((target / "audit.json").read_text(encoding="utf-8"))
    c = audit["checks"]
    counts: dict[str, int] = {
        "threads": len(threads),
        **{k: v for k, v in rep.counts.items() if k in ("relevant (filter)", "records (extract)", "kept (score)",
                                                        "sft rows", "dpo pairs", "eval items")},
        **{k: v for k, v in rep.counts.items() if k.startswith("left out")},
        "leak rows": c["leak_rows"], "PII rows": c["pii_rows"],
        "rejected text max pairs": c["rejected_max_repeats"],
        "non-declarative eval golds": c["non_declarative_gold"],
        "eval/train repository overlap": c["repo_overlap"],
        "fragment lines": c["fragment_lines"],
        "near-duplicate prompts": c["near_duplicate_prompts"],
        "near-duplicate answers": c["near_duplicate_answers"],
    }
    probe = c["shortcut_accuracy"]
    notes = [
        "audit: " + ("all checks pass" if not audit["failed"] else "FAILED " + ", ".join(audit["failed"])),
        "reader: " + ("recorded answers through extract --collect (the LLM reader)" if reader == "recorded" else
                      "the offline reader (its eval items flagged on the card)"),
        f"DPO shortcut-probe accuracy {'n/a' if probe is None else f'{probe:.3f}'} (0.5 = no shortcut; limit 0.65)",
        f"DPO chosen/rejected median length ratio {c['length_ratio_median']}–{c['length_ratio_median_max']} "
        "(min–max over splits; limit 0.8–1.25)",
        "seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()),
    ]
    if out_dir is not None:
        notes.append(f"datasets kept in {out_dir}")
    return StageReport(stage="bench datasets", counts=counts, notes=notes)
