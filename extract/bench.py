"""``reprodiag bench extract``: filter precision/recall and throughput, rules-extractor field accuracy
(dev and holdout splits reported separately), and prompt-compaction token savings on the sample corpus."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from extract.compaction import compact
from extract.relevance import classify
from extract.rules import RulesExtractor
from reprodiag.errors import UserError
from reprodiag.schema import SchemaError, StageReport, Thread, parse_thread

DEFAULT_DEV_SET = Path(__file__).with_name("data") / "devset.jsonl"
#: 40 threads in real GitHub shapes (issue templates, env dumps, logs, +1 replies, linked-PR closes).
REALISM_SET = Path(__file__).with_name("data") / "realism.jsonl"
#: 48 threads paraphrased from real GitHub issues (held out: labeled before the rules were measured on them).
REALGH_SET = Path(__file__).with_name("data") / "realgh.jsonl"
#: Threads classified for the throughput figure (the dev set repeated).
THROUGHPUT_THREADS = 5000


def load_dev_set(path: Path) -> list[tuple[Thread, dict[str, Any], str]]:
    """(thread, label, split) rows; a malformed line is a UserError naming file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"cannot read dev set {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"dev set {path} is not UTF-8 text") from None
    rows = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict) or not isinstance(doc.get("label"), dict):
                raise ValueError("expected an object with 'thread' and 'label'")
            rows.append((parse_thread(doc.get("thread")), doc["label"], str(doc.get("split", "dev"))))
        except (ValueError, SchemaError) as exc:
            raise UserError(f"{path}:{no}: {' '.join(str(exc).split())[:200]}") from None
    if not rows:
        raise UserError(f"dev set {path} holds no rows")
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


def _split_note(split: str, sub: list[tuple[Thread, dict[str, Any], str]], m: dict[str, float]) -> str:
    parts = [f"{k} {v:.3f}" for k, v in m.items() if k not in ("n", "positives")]
    return f"{split} ({len(sub)} threads, {int(m.get('positives', 0))} reproduction): " + ", ".join(parts)


def run_bench(dev_set: Path | None = None, *, include_sample: bool = True) -> StageReport:
    """Five columns: the dev and holdout splits of ``dev_set`` (exact values), with ``include_sample`` the
    bundled sample corpus (an independently written labeled set; values within ``SAMPLE_TOLERANCE``), the
    realism set (``REALISM_SET``) and the real-thread set (``REALGH_SET``, exact values), then the filter's
    CPU throughput and prompt-compaction savings."""
    path = dev_set or DEFAULT_DEV_SET
    rows = load_dev_set(path)
    counts: dict[str, int] = {"dev_set_rows": len(rows)}
    notes: list[str] = []
    for split in sorted({s for _, _, s in rows}):
        sub = [r for r in rows if r[2] == split]
        m = score_split(sub)
        counts[f"{split}_rows"] = len(sub)
        notes.append(_split_note(split, sub, m))
    if len({s for _, _, s in rows}) > 1:
        notes.append(_split_note("whole dev set", rows, score_split(rows)))
    sample = sample_rows() if include_sample else []
    if sample:
        m = score_split(sample, SAMPLE_TOLERANCE)
        counts["sample_rows"] = len(sample)
        notes.append(_split_note("sample", sample, m))
    realism = load_dev_set(REALISM_SET) if include_sample and REALISM_SET.exists() else []
    if realism:
        counts["realism_rows"] = len(realism)
        notes.append(_split_note("realism", realism, score_split(realism)))
    realgh = load_dev_set(REALGH_SET) if include_sample and REALGH_SET.exists() else []
    if realgh:
        counts["realgh_rows"] = len(realgh)
        notes.append(_split_note("realgh", realgh, score_split(realgh)))
    if realism:
        every = rows + sample + realism + realgh
        notes.append(_split_note("all labeled sets", every, score_split(every, SAMPLE_TOLERANCE)))
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
