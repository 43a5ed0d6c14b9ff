"""The learned models at run time: each function applies one shipped model to the rules' reading of a
thread. Models are read once per weights-file version (:func:`extract.learned.linear.shipped`); a missing
or corrupt file is a one-line :class:`reprodiag.errors.UserError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from extract.causetype import cause_scores
from extract.learned.features import (
    Features,
    ValueCandidate,
    filter_features,
    resolved_features,
    type_features,
    value_candidates,
)
from extract.learned.linear import LinearModel, shipped
from extract.signals import Signals
from extract.threadtext import strip_code
from reprodiag.schema import Thread

if TYPE_CHECKING:
    from extract.reading import Reading
    from extract.symptom import SymptomFound

#: The extractor's models ``reprodiag train`` writes and the runtime reads (the grader's two models,
#: ``grader_direction`` and ``grader_answer``, live beside them: eval_diagnosis.graders.concept).
MODEL_NAMES = ("filter", "resolved", "values_paper", "values_obtained", "error_type")
GRADER_MODEL_NAMES = ("grader_direction", "grader_answer")


def shipped_model(name: str) -> LinearModel:
    return shipped(name)


def filter_prob(thread: Thread, sig: Signals) -> float:
    """Calibrated probability that the thread is a paper-result reproduction."""
    return shipped("filter").prob(filter_features(thread, sig))


def resolved_prob(thread: Thread, rd: Reading) -> float:
    """Calibrated probability that the thread establishes the root cause."""
    return shipped("resolved").prob(resolved_features(thread, rd.posts, rd.exchange))


def type_feats(rd: Reading) -> Features:
    ex = rd.exchange
    settled = next((i for i in (ex.cause, ex.self_diagnosis, ex.closing, ex.maintainer_explanation)
                    if i is not None), None)
    scores = {"w": rd.type_decision.scores}
    if settled is not None:
        scores["s"] = cause_scores(strip_code(rd.posts[settled].body[:4000]).lower())
    return type_features(rd.posts, rd.roles, rd.type_decision.error_type, scores)


def type_of(rd: Reading) -> str:
    """The learned error type when the shipped model replaces the rules (``meta.use``), else the rules'."""
    m = shipped("error_type")
    if not m.meta.get("use", False):
        return rd.type_decision.error_type
    probs = m.probs(type_feats(rd))
    return max(m.classes, key=lambda c: (probs[c], -m.classes.index(c)))


def scored_candidates(thread: Thread, rd: Reading) -> list[tuple[ValueCandidate, float, float]]:
    """Each value candidate with its calibrated (paper, obtained) probabilities."""
    sym = rd.symptom
    cands = value_candidates(thread, rd.posts, sym.paper.value if sym.paper else None,
                             sym.obtained.value if sym.obtained else None)
    mp, mo = shipped("values_paper"), shipped("values_obtained")
    return [(c, mp.prob(c.feats), mo.prob(c.feats)) for c in cands]


def _quote(rd: Reading, c: ValueCandidate) -> str:
    text = rd.posts[c.post].body
    ls = text.rfind("\n", 0, c.start) + 1
    le = text.find("\n", c.start)
    line = text[ls:le if le >= 0 else len(text)]
    off = c.start - ls
    lo = max(0, off - 120)
    return line[lo:off + 120].strip() or c.quote


def rank_values(thread: Thread, rd: Reading) -> tuple[SymptomFound, str | None]:
    """The rules' symptom with paper / obtained values replaced by the rankers' choice (null below the
    threshold). Paper and obtained are never the same occurrence of a number."""
    from extract.symptom import SymptomFound, Value

    scored = scored_candidates(thread, rd)
    mp, mo = shipped("values_paper"), shipped("values_obtained")
    paper = max(scored, key=lambda t: t[1], default=None)
    pv = ov = None
    cid = None
    if paper is not None and paper[1] >= mp.threshold:
        c = paper[0]
        pv = Value(c.value, _quote(rd, c), c.start)
        cid = c.comment_id
    # the number the paper ranker likes best is not the obtained value when it looks more like the paper's
    rest = [t for t in scored if paper is None or t[0] is not paper[0] or (pv is None and t[2] > t[1])]
    obtained = max(rest, key=lambda t: t[2], default=None)
    if obtained is not None and obtained[2] >= mo.threshold:
        c = obtained[0]
        if pv is None or abs(c.value - pv.value) > 1e-9:
            ov = Value(c.value, _quote(rd, c), c.start)
            cid = cid if cid is not None else c.comment_id
    sym = rd.symptom
    return SymptomFound(metric=sym.metric, metric_quote=sym.metric_quote, paper=pv, obtained=ov), (
        cid if cid is not None else rd.symptom_comment)
