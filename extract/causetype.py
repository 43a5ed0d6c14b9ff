"""Which of the five root-cause types a thread settled on (or, unresolved, best supports).

Each clause of each post is scored with the cue families of
:mod:`extract.cues` (strong cue 2, weak cue 1, at most 4 per type and clause).
A cue ruled out by its neighbours ("not the lr", "warmup didn't help") or in a
clause that reports a failed attempt ("tried 300 epochs, no difference")
counts against its type. Clauses that explain (``CAUSAL``) count 1.5x.

Posts are weighted by their role in the exchange (:mod:`extract.exchange`):
the confirmed reply or accepted answer 3, the closing explanation 2.5, the
asker's confirmation 1.5, maintainers 1.5, other replies 1, the asker's
follow-ups 0.6, the opening question 0.4 (its title 0.6), a "+1, same here" reply 0.2; a reply the
asker refuted counts 0.3. The type with the highest total wins (ties by the prior
order of SPEC.md); below ``MIN_SCORE`` the type is ``other``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extract.cues import (
    CAUSAL,
    CAUSE_FAMILIES,
    LIBRARY_CHANGE,
    NEGATED_LEFT,
    NEGATED_RIGHT,
    PAPER_ERROR,
    REFUTE,
    TEST_TIME,
    TYPE_ORDER,
)
from extract.threadtext import Post, sentences, strip_code

#: Weight of a "+1, same here" reply by another user (it reports a number, it does not diagnose).
CORROBORATION_WEIGHT = 0.2
#: Total below which no type is claimed.
MIN_SCORE = 1.5
#: Cap of one type's points in one clause.
CLAUSE_CAP = 4.0
#: Characters of one post that are read (long logs pasted as prose add nothing).
POST_CHARS = 4000
MAX_SENTENCE = 400

_CLAUSE = re.compile(r";|(?:,\s*|\s+)(?=but\b|however\b|although\b|whereas\b)|；|，但|但是")


def _clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.split(text) if c.strip()]


def cause_scores(low: str) -> dict[str, float]:
    """Signed cue points per type in lower-cased text (types with no cue are absent)."""
    out: dict[str, float] = {}
    for clause in _clauses(low):
        refuted = bool(REFUTE.search(clause))
        got: dict[str, float] = {}
        for fam in CAUSE_FAMILIES:
            pts = 0.0
            for rx, w in ((fam.strong, 2.0), (fam.weak, 1.0)):
                for m in rx.finditer(clause):
                    left, right = clause[max(0, m.start() - 40):m.start()], clause[m.end():m.end() + 40]
                    neg = refuted or bool(NEGATED_LEFT.search(left)) or bool(NEGATED_RIGHT.search(right))
                    pts += -w if neg else w
            if pts:
                got[fam.name] = max(-CLAUSE_CAP, min(CLAUSE_CAP, pts))
        if got.get("data", 0) > 0 and TEST_TIME.search(clause):
            got["evaluation_protocol"] = min(CLAUSE_CAP, got.get("evaluation_protocol", 0.0) + got.pop("data"))
        if got.get("framework_version", 0) > 0 and LIBRARY_CHANGE.search(clause):
            got = {t: (v if t == "framework_version" or v < 0 else v / 2) for t, v in got.items()}
        for t, v in got.items():
            out[t] = out.get(t, 0.0) + v
    return out


@dataclass(frozen=True)
class TypeDecision:
    """The decided type, the sentence that most supports it and where it is (None = body/title)."""

    error_type: str
    quote: str | None
    comment_id: str | None
    scores: dict[str, float]


def _weight(p: Post, roles: dict[int, float]) -> float:
    if p.index in roles:
        return roles[p.index]
    if p.index == 0:
        return 0.4
    if p.is_corroboration:
        return CORROBORATION_WEIGHT
    if p.is_asker:
        return 0.6
    return 1.5 if p.is_maintainer else 1.0


def decide_type(ps: list[Post], roles: dict[int, float]) -> TypeDecision:
    """``roles``: post index → weight overriding the default (confirmed reply, refuted reply, …).

    A post that says a library changed (a framework cue in a ``LIBRARY_CHANGE`` clause) counts its other
    types at half: the version change is what explains whatever it changed."""
    scores = dict.fromkeys(TYPE_ORDER, 0.0)
    best: dict[str, tuple[float, str, str | None]] = {}
    for p in ps:
        if p.is_bot:
            continue
        w = _weight(p, roles)
        body = p.body[:POST_CHARS]
        gains: list[tuple[str, float, str, str | None]] = []
        if p.index == 0:
            title, _, body = body.partition("\n")
            gains += _gains(title, None, 0.6 if 0 not in roles else w)
        for s in sentences(body, p.comment_id):
            if len(s.text) <= MAX_SENTENCE:
                gains += _gains(s.text, p.comment_id, w)
        lib_change = any(t == "framework_version" and g > 0 and LIBRARY_CHANGE.search(q.lower())
                         for t, g, q, _ in gains)
        for t, g, q, cid in gains:
            if lib_change and t != "framework_version" and g > 0:
                g /= 2
            scores[t] += g
            if g > 0 and (t not in best or g > best[t][0]):
                best[t] = (g, q, cid)
    top = max(TYPE_ORDER, key=lambda t: (scores[t], -TYPE_ORDER.index(t)))
    # a maintainer (or a confirmed reply) says the paper's number is wrong or the code changed since: "other"
    for p in ps:
        if p.is_bot or p.index == 0 or not (p.is_maintainer or roles.get(p.index, 0.0) >= 2.5):
            continue
        if not PAPER_ERROR.search(strip_code(p.body[:POST_CHARS]).lower()):
            continue
        # "a mistake in the paper in tokenizing punctuation" names a type: that type is the cause
        hit = next((x for x in sentences(p.body[:POST_CHARS], p.comment_id) if PAPER_ERROR.search(x.text.lower())
                    and not any(v > 0 for v in cause_scores(x.text.lower()).values())), None)
        if hit is not None:
            return TypeDecision("other", hit.text, p.comment_id, scores)
    if scores[top] < MIN_SCORE or top not in best:
        return TypeDecision("other", None, None, scores)
    _, quote, cid = best[top]
    return TypeDecision(top, quote, cid, scores)


def _gains(text: str, cid: str | None, w: float) -> list[tuple[str, float, str, str | None]]:
    """(type, weighted points, sentence, comment id) for one sentence."""
    text = strip_code(text).strip()
    if not text:
        return []
    boost = 1.5 if CAUSAL.search(text) else 1.0
    return [(t, w * pts * boost, text, cid) for t, pts in cause_scores(text.lower()).items()]
