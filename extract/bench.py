"""``reprodiag bench extract``: filter precision/recall and throughput, rules-extractor field accuracy
(dev and holdout splits reported separately), and prompt-compaction token savings on the sample corpus."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extract.base import Extractor
from extract.compaction import compact
from extract.evidence import ThreadIndex
from extract.relevance import classify, rules_positive
from extract.rules import RulesExtractor
from reprodiag.errors import UserError
from reprodiag.intervals import Estimate, bootstrap
from reprodiag.schema import Record, StageReport, Thread

DEFAULT_DEV_SET = Path(__file__).with_name("data") / "devset.jsonl"
#: 40 threads in real GitHub shapes (issue templates, env dumps, logs, +1 replies, linked-PR closes).
REALISM_SET = Path(__file__).with_name("data") / "realism.jsonl"
#: 48 threads paraphrased from real GitHub issues (held out: labeled before the rules were measured on them).
REALGH_SET = Path(__file__).with_name("data") / "realgh.jsonl"
#: Threads classified for the throughput figure (the dev set repeated).
THROUGHPUT_THREADS = 5000


def load_dev_set(path: Path) -> list[tuple[Thread, dict[str, Any], str]]:
    """(thread, label, split) rows of a labeled set (:func:`extract.realcorpus.load_file`: either line format;
    a malformed line is a UserError naming file and line); an empty file is a UserError too."""
    from extract.realcorpus import load_file

    rows = [(r.thread, r.gold, r.split or "dev") for r in load_file(path)]
    if not rows:
        raise UserError(f"labeled set {path} holds no rows")
    return rows


def _norm_metric(m: Any) -> str:
    return re.sub(r"[^a-z0-9@]", "", str(m).lower()) if m else ""


def metric_match(pred: str | None, gold: str | None) -> bool:
    """Loose: equal after canonical naming ("EM" ~ "exact match") and normalisation, or one contains the other
    ("top-1 accuracy" ~ "accuracy")."""
    from extract.symptom import canonical_metric

    a = _norm_metric(canonical_metric(str(pred)) if pred else pred)
    b = _norm_metric(canonical_metric(str(gold)) if gold else gold)
    if not a or not b:
        return a == b
    return a == b or a in b or b in a


#: Absolute tolerance when comparing a value with a label that gives the headline number (87.3 for 87.31).
SAMPLE_TOLERANCE = 0.051


def _same(a: Any, b: Any, tol: float = 1e-6) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) < tol


def score_split(rows: list[tuple[Thread, dict[str, Any], str]], tol: float = 1e-6) -> dict[str, float]:
    """Filter precision/recall and per-field accuracy of the rules extractor on labeled rows.

    Field accuracies are over the labeled positives (the extractor runs on each whether or not the filter
    kept it); values match within ``tol`` (absolute, in the thread's unit)."""
    threads = [t for t, _, _ in rows]
    labels = [lab for _, lab, _ in rows]
    decisions = classify(threads)
    tp = sum(d.is_reproduction and lab["is_reproduction"] for d, lab in zip(decisions, labels, strict=True))
    fp = sum(d.is_reproduction and not lab["is_reproduction"] for d, lab in zip(decisions, labels, strict=True))
    fn = sum(not d.is_reproduction and lab["is_reproduction"] for d, lab in zip(decisions, labels, strict=True))
    out = {"n": float(len(rows)), "precision": tp / (tp + fp) if tp + fp else 0.0,
           "recall": tp / (tp + fn) if tp + fn else 0.0}
    pos = [(t, lab) for t, lab in zip(threads, labels, strict=True) if lab["is_reproduction"]]
    if pos:
        recs = RulesExtractor().extract([t for t, _ in pos])
        n = len(pos)
        out["error_type"] = sum(r.error_type == lab.get("error_type") for r, (_, lab) in zip(recs, pos, strict=True)) / n
        out["paper_value"] = sum(_same(r.symptom.paper_value, lab.get("paper_value"), tol)
                                 for r, (_, lab) in zip(recs, pos, strict=True)) / n
        out["obtained_value"] = sum(_same(r.symptom.obtained_value, lab.get("obtained_value"), tol)
                                    for r, (_, lab) in zip(recs, pos, strict=True)) / n
        out["metric"] = sum(metric_match(r.symptom.metric, lab.get("metric"))
                            for r, (_, lab) in zip(recs, pos, strict=True)) / n
        out["resolution_type"] = sum(r.resolution_type == lab.get("resolution_type")
                                     for r, (_, lab) in zip(recs, pos, strict=True)) / n
        out["positives"] = float(n)
    return out


def filter_throughput(threads: list[Thread], n: int = THROUGHPUT_THREADS) -> float:
    """Threads per CPU-second of :func:`classify` (process CPU time, so a busy machine does not skew it;
    ``threads`` repeated to ``n``)."""
    if not threads:
        return 0.0
    batch = (threads * (n // len(threads) + 1))[:n]
    t0 = time.process_time()
    classify(batch)
    return n / max(time.process_time() - t0, 1e-9)


def compaction_savings(threads: list[Thread]) -> tuple[int, int]:
    full = comp = 0
    for t in threads:
        c = compact(t)
        full += c.full_tokens
        comp += c.tokens
    return full, comp


def sample_rows() -> list[tuple[Thread, dict[str, Any], str]]:
    """The bundled sample corpus as labeled rows (split ``sample``); threads without a label are skipped."""
    from reprodiag.sample import load_sample_labels, load_sample_threads

    labels = load_sample_labels()
    return [(t, labels[t.id], "sample") for t in load_sample_threads() if t.id in labels]


@dataclass(frozen=True)
class Outcome:
    """One labeled thread as the extractor saw it: the filter's decision and the record (extracted whether or
    not the filter kept it, so field accuracies cover every labeled reproduction)."""

    repo: str
    gold: dict[str, Any]
    kept: bool
    record: Record
    ungrounded: int
    #: kept by the filter and then by ``reprodiag score`` with its default settings (the quality score, the
    #: no-reply / feature-request / environment / temporal drops): the record reaches the datasets.
    in_dataset: bool = False


def outcomes(rows: list[tuple[Thread, dict[str, Any], str]], extractor: Extractor | None = None) -> list[Outcome]:
    """Run the filter and an extractor (default: rules with the shipped models) over labeled rows."""
    threads = [t for t, _, _ in rows]
    ext = extractor or RulesExtractor()
    recs = ext.extract(threads)
    by_id = {r.thread_id: r for r in recs}
    if isinstance(ext, RulesExtractor):
        decisions = {d.thread_id: d.is_reproduction for d in classify(threads)}
    else:  # an LLM extractor decides relevance itself
        decisions = {t.id: (by_id[t.id].is_reproduction if t.id in by_id else False) for t in threads}
    in_data = dataset_keep([by_id[t.id] for t in threads if t.id in by_id and decisions[t.id]])
    out = []
    for t, lab, _ in rows:
        rec = by_id.get(t.id)
        if rec is None:
            continue
        idx = ThreadIndex.of(t)
        bad = sum(idx.locate(e.quote, e.comment_id) is False for e in rec.evidence)
        out.append(Outcome(t.repo.lower(), lab, decisions[t.id], rec, bad, in_data.get(t.id, False)))
    return out


def dataset_keep(records: Sequence[Record], min_relevance: float | None = None) -> dict[str, bool]:
    """Thread id → whether ``reprodiag score`` (default settings, or the given ``min_relevance``) keeps the
    record for the datasets."""
    from scoring.config import ScoreConfig
    from scoring.vectorized import records_to_frame, score_frame

    if not records:
        return {}
    config = ScoreConfig() if min_relevance is None else ScoreConfig(min_relevance=min_relevance)
    scored = score_frame(records_to_frame(records), config).select("thread_id", "keep").collect()
    return dict(zip(scored["thread_id"].to_list(), scored["keep"].to_list(), strict=True))


#: The ``min_relevance`` values :func:`gate_line` reports.
GATES = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9)


def gate_line(name: str, os: Sequence[Outcome]) -> str:
    """What each ``score --min-relevance`` gate gives on these outcomes: the share of kept records that are
    reproductions (precision) and the share of labeled reproductions kept (yield)."""
    recs = [o.record for o in os if o.kept]
    npos = sum(bool(o.gold.get("is_reproduction")) for o in os)
    gold = {o.record.thread_id: bool(o.gold.get("is_reproduction")) for o in os}
    parts = []
    for g in GATES:
        keep = dataset_keep(recs, g)
        kept = [t for t, k in keep.items() if k]
        pos = sum(gold[t] for t in kept)
        parts.append(f"{g:.1f}: {len(kept)} records, precision {pos / max(len(kept), 1):.3f}, "
                     f"yield {pos / max(npos, 1):.3f}")
    return f"{name}, datasets by `score --min-relevance`: " + "; ".join(parts)


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def _same_val(a: Any, b: Any, tol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) < tol


def figures(tol: float = 1e-6) -> dict[str, Any]:
    """Figure functions over a list of outcomes (each returns None where undefined)."""

    def pos(os: Sequence[Outcome]) -> list[Outcome]:
        return [o for o in os if o.gold.get("is_reproduction")]

    def resolved_gold(o: Outcome) -> bool:
        g = o.gold.get("is_resolved")
        return bool(g) if g is not None else o.gold.get("resolution_type") == "resolved"

    def acc(pred: Any) -> Any:
        return lambda os: _rate(sum(pred(o) for o in pos(os)), len(pos(os)))

    def wrong(key: str) -> Any:
        def f(os: Sequence[Outcome]) -> float | None:
            given = [o for o in pos(os) if getattr(o.record.symptom, key) is not None]
            return _rate(sum(not _same_val(getattr(o.record.symptom, key), o.gold.get(key), tol) for o in given),
                         len(given))
        return f

    def type_balanced(os: Sequence[Outcome]) -> float | None:
        """Macro-averaged recall of the error type over the gold types present: the accuracy on a set with
        equally many reproductions of each type."""
        by: dict[str, list[bool]] = {}
        for o in pos(os):
            by.setdefault(str(o.gold.get("error_type")), []).append(o.record.error_type == o.gold.get("error_type"))
        return sum(sum(v) / len(v) for v in by.values()) / len(by) if by else None

    def in_data(os: Sequence[Outcome]) -> list[Outcome]:
        return [o for o in pos(os) if o.in_dataset]

    def data_acc(pred: Any) -> Any:
        return lambda os: _rate(sum(pred(o) for o in in_data(os)), len(in_data(os)))

    def eval_sound(os: Sequence[Outcome]) -> float | None:
        """Of the dataset records ``build`` may turn into eval items (:func:`reprodiag.build.eval_eligible`),
        the share whose thread is a reproduction the labels call resolved, of the recorded type: items whose
        gold cause and type can be trusted."""
        from reprodiag.build import eval_eligible

        el = [o for o in os if o.in_dataset and eval_eligible(o.record)]
        return _rate(sum(bool(o.gold.get("is_reproduction")) and resolved_gold(o)
                         and o.record.error_type == o.gold.get("error_type") for o in el), len(el))

    return {
        "dataset_precision": lambda os: _rate(len(in_data(os)), sum(o.in_dataset for o in os)),
        "dataset_eval_sound": eval_sound,
        "dataset_yield": lambda os: _rate(len(in_data(os)), len(pos(os))),
        "dataset_error_type": data_acc(lambda o: o.record.error_type == o.gold.get("error_type")),
        "dataset_is_resolved": data_acc(lambda o: o.record.is_resolved == resolved_gold(o)),
        "dataset_paper_value": data_acc(
            lambda o: _same_val(o.record.symptom.paper_value, o.gold.get("paper_value"), tol)),
        "dataset_obtained_value": data_acc(
            lambda o: _same_val(o.record.symptom.obtained_value, o.gold.get("obtained_value"), tol)),
        "precision": lambda os: _rate(sum(o.kept and o.gold["is_reproduction"] for o in os), sum(o.kept for o in os)),
        "recall": lambda os: _rate(sum(o.kept for o in pos(os)), len(pos(os))),
        "false_positive_rate": lambda os: _rate(sum(o.kept and not o.gold["is_reproduction"] for o in os),
                                                sum(not o.gold["is_reproduction"] for o in os)),
        "error_type": acc(lambda o: o.record.error_type == o.gold.get("error_type")),
        "error_type_balanced": type_balanced,
        "is_resolved": acc(lambda o: o.record.is_resolved == resolved_gold(o)),
        "paper_value": acc(lambda o: _same_val(o.record.symptom.paper_value, o.gold.get("paper_value"), tol)),
        "paper_wrong": wrong("paper_value"),
        "obtained_value": acc(lambda o: _same_val(o.record.symptom.obtained_value, o.gold.get("obtained_value"), tol)),
        "obtained_wrong": wrong("obtained_value"),
        "metric": acc(lambda o: metric_match(o.record.symptom.metric, o.gold.get("metric"))),
    }


FIGURE_NAMES = ("precision", "recall", "false_positive_rate", "error_type", "error_type_balanced", "is_resolved",
                "paper_value", "paper_wrong", "obtained_value", "obtained_wrong", "metric")


def measure(os: list[Outcome], tol: float = 1e-6, seed: int = 0) -> dict[str, Estimate]:
    """Every figure with a 95% bootstrap interval (threads resampled in clusters by repository)."""
    groups = [o.repo for o in os]
    out = {k: bootstrap(os, f, seed=seed, groups=groups) for k, f in figures(tol).items()}
    out["ungrounded_quotes"] = Estimate(float(sum(o.ungrounded for o in os)), None, None, len(os))
    return out


#: What reaches the datasets: precision = share of the records ``score`` keeps that are reproductions,
#: yield = share of the labeled reproductions kept, then field accuracies over the kept reproductions, and
#: eval_sound = share of the eval-eligible kept records that are resolved reproductions of the recorded type.
DATASET_FIGURE_NAMES = ("dataset_precision", "dataset_yield", "dataset_error_type", "dataset_is_resolved",
                        "dataset_paper_value", "dataset_obtained_value", "dataset_eval_sound")


def format_figures(name: str, os: list[Outcome], m: dict[str, Estimate]) -> str:
    """One line of the thread-level figures, then (where any record reaches the datasets) one line of what
    the datasets hold."""
    npos = sum(bool(o.gold.get("is_reproduction")) for o in os)
    parts = [f"{k} {m[k].fmt()}" for k in FIGURE_NAMES if m[k].value is not None]
    line = (f"{name} ({len(os)} threads, {npos} reproductions, {len({o.repo for o in os})} repositories): "
            + ", ".join(parts) + f", ungrounded quotes {int(m['ungrounded_quotes'].value or 0)}")
    kept = sum(o.in_dataset for o in os)
    data = [f"{k.removeprefix('dataset_')} {m[k].fmt()}" for k in DATASET_FIGURE_NAMES
            if k in m and m[k].value is not None]
    if kept and data:
        line += f"\n  {name}, records kept by `score` for the datasets ({kept}): " + ", ".join(data)
    return line


def _as_rows(labeled: list[Any]) -> list[tuple[Thread, dict[str, Any], str]]:
    return [(r.thread, r.gold, r.split) for r in labeled]


def cross_validated_dev(dev: list[Any], older: list[Any], *, seed: int = 0, folds: int = 5) -> list[Outcome]:
    """Out-of-fold outcomes on the real ``dev`` part: for each of ``folds`` repository-grouped folds, every
    model is trained on the other folds (plus the older sets) and the user's code path (filter + rules
    extractor) runs on the held-out fold with those weights."""
    import os
    import tempfile

    from extract.learned.examples import train_all
    from extract.learned.train import write_models

    repos = sorted({r.repo for r in dev})
    import random

    rng = random.Random(seed)
    rng.shuffle(repos)
    fold_of = {repo: i % folds for i, repo in enumerate(repos)}
    out: list[Outcome] = []
    prev = os.environ.get("REPRODIAG_MODELS_DIR")
    try:
        for k in range(folds):
            train = [r for r in dev if fold_of[r.repo] != k]
            held = [r for r in dev if fold_of[r.repo] == k]
            if not held:
                continue
            models, _ = train_all(train, older, seed=seed)
            with tempfile.TemporaryDirectory(prefix="reprodiag-cv-") as tmp:
                write_models(models, Path(tmp))
                os.environ["REPRODIAG_MODELS_DIR"] = tmp
                out.extend(outcomes(_as_rows(held)))
    finally:
        if prev is None:
            os.environ.pop("REPRODIAG_MODELS_DIR", None)
        else:
            os.environ["REPRODIAG_MODELS_DIR"] = prev
    return out


def run_real_bench(*, sets: tuple[str, ...] = ("dev", "test"), extractor: Extractor | None = None,
                   seed: int = 0, corpus: Path | None = None) -> list[tuple[str, list[Outcome], dict[str, Estimate]]]:
    """Figures on the real-thread corpus: ``dev`` cross-validated (rules backend) or as is (LLM backends),
    ``test`` with the shipped models (or the given extractor)."""
    from extract.learned.examples import OLDER_SETS
    from extract.realcorpus import REAL_DIR, load_file

    base = corpus or REAL_DIR
    res = []
    for part in sets:
        rows = load_file(base / f"{part}.jsonl")
        if part == "dev" and extractor is None:
            older = [r for p in OLDER_SETS if p.exists() for r in load_file(p)]
            os_ = cross_validated_dev(rows, older, seed=seed)
            name = "real dev (cross-validated by repository)"
        else:
            os_ = outcomes(_as_rows(rows), extractor)
            name = f"real {part}"
        res.append((name, os_, measure(os_, seed=seed)))
    return res


def _split_note(split: str, sub: list[tuple[Thread, dict[str, Any], str]], m: dict[str, float]) -> str:
    parts = [f"{k} {v:.3f}" for k, v in m.items() if k not in ("n", "positives")]
    return f"{split} ({len(sub)} threads, {int(m.get('positives', 0))} reproduction): " + ", ".join(parts)


def run_llm_bench(*, backend: str, model: str | None, base_url: str | None, sets: tuple[str, ...],
                  store: Any = None, concurrency: int = 8, seed: int = 0, corpus: Path | None = None) -> StageReport:
    """``bench extract --backend B``: an LLM extractor over labeled real-thread parts (through the
    workspace's cache), the same figures as the rules path, plus token and cost totals."""
    from extract.pipeline import make_extractor

    ext = make_extractor(backend, model=model, base_url=base_url, store=store, concurrency=concurrency)
    notes: list[str] = []
    counts: dict[str, int] = {}
    for name, os_, m in run_real_bench(sets=sets, extractor=ext, seed=seed, corpus=corpus):
        counts[f"{name.split()[-1]}_rows"] = len(os_)
        notes.append(format_figures(f"{backend} {name}", os_, m))
    if hasattr(ext, "cost_summary"):
        notes.append("LLM usage: " + ext.cost_summary())  # type: ignore[attr-defined]
    return StageReport(stage="bench extract", counts=counts, outputs={"backend": backend, "model": model or ""},
                       notes=notes)


def _real_notes(counts: dict[str, int], sets: tuple[str, ...], seed: int) -> list[str]:
    from extract.realcorpus import REAL_DIR, load_file

    notes = []
    for name, os_, m in run_real_bench(sets=sets, seed=seed):
        counts[f"{name.split()[1]}_real_rows"] = len(os_)
        notes.append(format_figures(name, os_, m))
        notes.append(gate_line(name, os_))
    for part in sets:
        rows = load_file(REAL_DIR / f"{part}.jsonl")
        kept = [rules_positive(r.thread) for r in rows]
        npos = sum(bool(r.gold["is_reproduction"]) for r in rows)
        tp = sum(k and r.gold["is_reproduction"] for k, r in zip(kept, rows, strict=True))
        fp = sum(k and not r.gold["is_reproduction"] for k, r in zip(kept, rows, strict=True))
        notes.append(f"baseline hand-weighted cue filter on real {part}: recall {tp / max(npos, 1):.3f}, "
                     f"false-positive rate {fp / max(len(rows) - npos, 1):.3f}")
    return notes


def run_bench(dev_set: Path | None = None, *, include_sample: bool = True, real_sets: tuple[str, ...] = ("dev", "test"),
              seed: int = 0) -> StageReport:
    """Figures with 95% bootstrap intervals (threads resampled by repository): the real-thread corpus's
    ``dev`` part cross-validated by repository and its frozen ``test`` part (``real_sets``), the hand-weighted
    cue filter as a baseline, then the older sets: the splits of ``dev_set``, with ``include_sample`` the
    bundled sample corpus (values within ``SAMPLE_TOLERANCE``), the realism and realgh sets (these older
    sets are training rows of the learned models: in-sample), then the filter's CPU throughput and
    prompt-compaction savings."""
    from extract.realcorpus import REAL_DIR

    path = dev_set or DEFAULT_DEV_SET
    rows = load_dev_set(path)
    counts: dict[str, int] = {"dev_set_rows": len(rows)}
    notes: list[str] = []
    if include_sample and real_sets and (REAL_DIR / "dev.jsonl").exists():
        notes.extend(_real_notes(counts, real_sets, seed))
    def column(name: str, sub: list[tuple[Thread, dict[str, Any], str]], tol: float = 1e-6) -> None:
        os_ = outcomes(sub)
        notes.append(format_figures(name, os_, measure(os_, tol, seed)))

    for split in sorted({s for _, _, s in rows}):
        sub = [r for r in rows if r[2] == split]
        counts[f"{split}_rows"] = len(sub)
        column(f"older set {path.name} [{split}]", sub)
    sample = sample_rows() if include_sample else []
    if sample:
        counts["sample_rows"] = len(sample)
        column("sample corpus (values within 0.051)", sample, SAMPLE_TOLERANCE)
    for label, extra in (("realism", REALISM_SET), ("realgh", REALGH_SET)):
        more = load_dev_set(extra) if include_sample and extra.exists() else []
        if more:
            counts[f"{label}_rows"] = len(more)
            column(f"older set {extra.name}", more)
    tps = filter_throughput([t for t, _, _ in rows])
    counts["filter_threads_per_s"] = int(tps)
    notes.append(f"filter throughput: {tps:,.0f} threads per CPU-second, one core ({THROUGHPUT_THREADS} threads)")
    if sample:
        full, comp = compaction_savings([t for t, _, _ in sample])
        counts["sample_tokens_full"] = full
        counts["sample_tokens_compacted"] = comp
        saved = 100.0 * (full - comp) / full if full else 0.0
        notes.append(f"prompt compaction on the sample corpus ({len(sample)} threads): {full} -> {comp} "
                     f"estimated tokens ({saved:.1f}% saved)")
    full, comp = compaction_savings([t for t, _, _ in rows])
    counts["dev_tokens_full"] = full
    counts["dev_tokens_compacted"] = comp
    notes.append(f"prompt compaction on the dev set ({len(rows)} threads, with bots, quotes and logs): {full} -> "
                 f"{comp} estimated tokens ({100.0 * (full - comp) / max(full, 1):.1f}% saved)")
    return StageReport(stage="bench extract", counts=counts, outputs={"dev_set": str(path)}, notes=notes)


def _part_rows(part: str, corpus: Path | None = None) -> list[tuple[Thread, dict[str, Any], str]]:
    """Labeled rows of a real-corpus part (``dev``, ``test``) or of the bundled sample (``sample``)."""
    from extract.realcorpus import REAL_DIR, load_file

    if part == "sample":
        return sample_rows()
    return _as_rows(load_file((corpus or REAL_DIR) / f"{part}.jsonl"))


def recorded_answers_path(answers: Path, part: str) -> Path:
    """The results file of ``part``: ``answers`` itself, or ``<answers>/<part>.results.jsonl`` for a folder."""
    from extract.recorded import results_path

    if answers.is_dir():
        return results_path(answers, part)
    return answers


def run_recorded_bench(answers: Path, *, sets: tuple[str, ...] = ("test",), seed: int = 0,
                       corpus: Path | None = None, allow_stale: bool = False) -> StageReport:
    """``bench extract --answers``: recorded Batch API results (a file, or a recorded-set folder with its
    manifest) scored with the figures of the offline rows, over the labeled rows of each part that have an
    answer. Answers made for another prompt version or schema are stale: a UserError names them (unless
    ``allow_stale``, and then every line says so). Unusable answers (failed, truncated, not JSON, schema
    violations) are counted and their threads left out of the figures; quotes that do not check out drop
    their field (as ``extract --collect`` does) and are counted as ungrounded."""
    from extract.cascade import LLM_GATE, cascade_line
    from extract.recorded import RecordedExtractor, find_manifest, staleness

    if not answers.exists():
        raise UserError(f"no recorded answers at {answers}")
    manifest = find_manifest(answers)
    stale = staleness(manifest)
    if stale and not allow_stale:
        raise UserError(f"the answers in {answers} are stale ({stale}): not scored; record them again for the "
                        f"current prompt (or pass --allow-stale to see the old figures, labeled stale)")
    model = manifest.model if manifest else None
    tag = f"recorded answers ({model or 'unknown model'}" + (f", STALE: {stale}" if stale else "") + ")"
    notes = [f"{tag}: " + (f"{manifest.prompt_version}, schema {manifest.schema_hash}, {manifest.date}; "
                           f"{manifest.method}" if manifest else "no manifest beside the file: provenance unknown")]
    counts: dict[str, int] = {}
    for part in sets:
        path = recorded_answers_path(answers, part)
        if not path.exists():
            notes.append(f"{part}: no recorded answers ({path})")
            continue
        ext = RecordedExtractor(path, model=model)
        rows = [r for r in _part_rows(part, corpus) if ext.answered(r[0].id)]
        if not rows:
            notes.append(f"{part}: none of the {path.name} answers belongs to this part")
            continue
        os_ = outcomes(rows, ext)
        m = measure(os_, SAMPLE_TOLERANCE if part == "sample" else 1e-6, seed=seed)
        name = f"recorded {part}" if part == "sample" else f"recorded real {part}"
        notes.append(format_figures(name, os_, m))
        notes.append(f"  {name}: {len(rows)} answered, {len(ext.failures)} unusable ({ext.truncated} truncated), "
                     f"{len(ext.dropped)} records with a field dropped for want of a verbatim quote "
                     f"({sum(len(v) for v in ext.dropped.values())} fields); "
                     f"usage: {ext.cost_summary()}")
        if part != "sample":
            notes.append("  " + cascade_line(name, rows, os_, LLM_GATE))
        counts[f"{part}_answered"] = len(rows)
        counts[f"{part}_unusable"] = len(ext.failures)
    if not counts:
        raise UserError(f"no recorded answers in {answers} for {', '.join(sets)}")
    return StageReport(stage="bench extract", counts=counts,
                       outputs={"answers": str(answers), "model": model or "", "stale": stale or ""}, notes=notes)
