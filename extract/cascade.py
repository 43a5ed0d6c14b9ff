"""The cascade: the offline filter as a cost gate in front of an LLM reader.

In front of an LLM the filter does not judge: the LLM decides ``is_reproduction`` itself (false-positive
rate 0.00 on unseen threads). The filter only spares the calls it is sure about, so its gate is set for
recall: ``LLM_GATE`` is the highest probability gate at which at least ``TARGET_RECALL`` of the ``dev``
reproductions pass, with each thread's probability taken out of fold (models trained without its
repository; ``reprodiag bench cascade`` recomputes it). ``extract --backend openai|anthropic|…`` sends the
threads whose filter probability is at or above the gate, answered or not (an unanswered thread is short, so
its call is cheap; ``score`` drops its record until someone replies); ``--no-filter`` sends every thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reprodiag.schema import FilterDecision, Thread

#: Share of the dev reproductions the gate must let through (cross-validated by repository).
TARGET_RECALL = 0.99
#: Gates are chosen on this grid (probabilities), so a small change of the corpus does not move them.
GRID_STEP = 0.005
#: The shipped gate: ``reprodiag bench cascade`` on the real-thread corpus's dev part chose it.
LLM_GATE = 0.08


def passes(decision: FilterDecision, gate: float = LLM_GATE) -> bool:
    """The thread goes to the LLM reader."""
    return decision.score >= gate


def choose_gate(scores: Sequence[float], positives: Sequence[bool], target: float = TARGET_RECALL) -> float:
    """The highest gate on the ``GRID_STEP`` grid at which at least ``target`` of the positives have a score
    at or above it (0.0 when there is no positive)."""
    pos = sorted(s for s, p in zip(scores, positives, strict=True) if p)
    if not pos:
        return 0.0
    best = 0.0
    steps = int(round(1.0 / GRID_STEP))
    for k in range(steps + 1):
        g = round(k * GRID_STEP, 6)
        if sum(s >= g for s in pos) / len(pos) >= target:
            best = g
        else:
            break
    return best


def gate_figures(scores: Sequence[float], positives: Sequence[bool], gate: float) -> dict[str, float]:
    """``recall`` (reproductions that reach the LLM), ``sent`` (share of threads sent), ``saved`` (share of
    calls spared), ``negatives_sent`` (share of non-reproductions sent)."""
    n = len(scores)
    npos = sum(positives)
    sent = [s >= gate for s in scores]
    return {"recall": sum(a and p for a, p in zip(sent, positives, strict=True)) / max(npos, 1),
            "sent": sum(sent) / max(n, 1), "saved": 1 - sum(sent) / max(n, 1),
            "negatives_sent": sum(a and not p for a, p in zip(sent, positives, strict=True)) / max(n - npos, 1)}


def cascade_line(name: str, rows: Sequence[tuple[Thread, dict[str, Any], str]], outcomes: Sequence[Any],
                 gate: float) -> str:
    """The cascade on labeled rows read by an LLM (``outcomes`` of :func:`extract.bench.outcomes`): what the
    gate sends, and the whole path's recall and false-positive rate (gate, then the LLM's decision)."""
    from extract.relevance import classify

    threads = [t for t, _, _ in rows]
    gold = [bool(lab.get("is_reproduction")) for _, lab, _ in rows]
    dec = classify(threads)
    f = gate_figures([d.score for d in dec], gold, gate)
    said = {o.record.thread_id: o.kept for o in outcomes}
    through = [d.score >= gate and said.get(t.id, False) for d, t in zip(dec, threads, strict=True)]
    npos, nneg = sum(gold), len(gold) - sum(gold)
    rec = sum(a and g for a, g in zip(through, gold, strict=True)) / max(npos, 1)
    fpr = sum(a and not g for a, g in zip(through, gold, strict=True)) / max(nneg, 1)
    return (f"{name}, cascade (filter gate {gate:g}, then the LLM): {f['recall']:.3f} of the reproductions reach "
            f"the LLM, {f['saved']:.3f} of the calls saved; whole path recall {rec:.3f}, false-positive rate "
            f"{fpr:.3f}")
