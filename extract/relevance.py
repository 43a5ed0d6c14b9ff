"""The relevance filter: is a thread about reproducing a *paper's number*?

Positive: someone compares their own run with a number or claim from the
paper / README / model zoo, or asks how to reach it. Negative: software bug
reports ("steps to reproduce"), feature requests, install/CUDA/driver help,
out-of-memory, weight-download and licence questions, "which equation is this"
questions. English and Chinese cues.

The cue signals (:mod:`extract.signals`: positive and negative cues over the
title, the asker's body and the first comments) are features of a learned, calibrated linear model
(:func:`classify`; trained by ``reprodiag train filter``), beside words of the
title and opening and thread facts. ``_decide`` is the older hand-weighted cue
sum, kept as the bench's baseline (:func:`rules_positive`).
"""

from __future__ import annotations

import math

from extract.signals import Signals, signals
from reprodiag.schema import FilterDecision, Thread

#: Cues of a crash, setup or memory problem: with no quantified result of the asker's, the thread is about
#: getting the code to run, not about a number.
_RUN_PROBLEMS = ("install", "error_trace", "oom")


#: Decision threshold on ``pos - neg`` (and a floor on ``pos``).
MARGIN = 1.5
MIN_POS = 2.5


def _decide(s: Signals) -> tuple[bool, float]:
    anchor = any(n in s.names for n in ("paper_ref", "number_pair", "template_pair", "repro_intent", "label:positive"))
    margin = s.pos - s.neg
    # the asker says they have not run it ("haven't run anything", "not trying to reproduce") and reports no
    # result of their own: a question about the paper, not a reproduction
    no_run = ("no_own_run" in s.names or "no_own_run:body" in s.names) and "own_result" not in s.names
    # "not an issue, just sharing my logs": a success report, whatever numbers it compares
    shared = "success_report" in s.names
    quantified = any(n in s.names for n in ("metric_number", "number_pair", "template_pair", "mine"))
    run_problem = not quantified and any(n in s.names for n in _RUN_PROBLEMS)
    # "can you provide instructions / the training code to reproduce the paper?" with no result of the
    # asker's own: a request, not a reproduction gap
    request = ("feature" in s.names and not quantified and "gap" not in s.names
               and "failed_attempt" not in s.names)
    ok = anchor and s.pos >= MIN_POS and margin >= MARGIN and not (no_run or shared or run_problem or request)
    score = 1.0 / (1.0 + math.exp(-(margin - MARGIN + 0.5)))
    return ok, round(score, 4)


def classify(threads: list[Thread]) -> list[FilterDecision]:
    """One decision per thread, same order: the learned filter (``extract/data/models/filter.json``) over the
    cue signals, words of the title and opening and thread facts. ``score`` is its calibrated probability
    that the thread is a paper-result reproduction; ``is_reproduction`` is ``score >= threshold`` (chosen
    for cross-validated recall >= 0.97 on the real-thread corpus). A thread with no non-bot reply keeps its
    content decision and gets the signal ``no_reply``; the extract stage skips such threads and scoring
    drops them (SPEC: threads with no reply are not kept)."""
    from extract.learned.features import filter_features
    from extract.learned.linear import shipped

    model = shipped("filter")
    out: list[FilterDecision] = []
    for t in threads:
        s = signals(t)
        f = filter_features(t, s)
        p = model.prob(f)
        names = list(s.names)
        if "no_reply" in f:  # the feature is exactly "no human reply"
            names.append("no_reply")
        out.append(FilterDecision(thread_id=t.id, is_reproduction=p >= model.threshold, score=round(p, 4),
                                  signals=names))
    return out


def rules_positive(thread: Thread) -> bool:
    """The hand-weighted cue decision the learned filter replaced (kept as a baseline for the bench)."""
    return _decide(signals(thread))[0]
