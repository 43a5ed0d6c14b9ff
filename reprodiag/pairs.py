"""DPO rejected answers from real content, in the same shape as the chosen ones.

For a thread with a refuted claim, the rejected answer is the *swap*: the same diagnosis with the first
refuted claim presented as the cause and the true cause listed as ruled out in its place (same sections,
same sentences, near-identical length). For a thread without one, it is the confirmed diagnosis of
*another thread* of a different error type: the one that can fill the chosen answer's hypothesis sections
and, cut to their counts, comes closest in length, preferably reporting the same metric (a similar task);
its gap sentence is this thread's. One cause text serves at most
:data:`MAX_DONOR_USES` pairs, and donors come from training records only (never from eval repositories)
and never from the same repository. Nothing here is a template.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Protocol

MAX_DONOR_USES = 2


class _Diag(Protocol):
    error_type: str
    claims: tuple[str, ...]
    refuted: tuple[str, ...]
    confirmed: tuple[str, ...]
    untested: tuple[str, ...]
    cause: str | None
    resolved: bool
    gap: str | None


@dataclass(frozen=True)
class Rejected:
    """A rejected diagnosis and where its content came from (``refuted_hypothesis`` | ``other_thread``)."""

    diagnosis: _Diag
    source: str


@dataclass(frozen=True)
class Candidate:
    """One training record's chosen diagnosis, as pairing sees it."""

    key: str
    repo: str
    metric: str | None
    diagnosis: _Diag


def swapped(d: _Diag, wrong_type: str | None = None) -> _Diag | None:
    """``d`` with its first refuted claim as the cause and the true cause ruled out in its place (without an
    established cause, the first open direction is ruled out instead; None when no refuted hypothesis was
    stated as a claim). ``wrong_type``: the error type the claim points at (the
    gloss line), default the chosen one's."""
    if not d.claims:
        return None
    wrong = d.claims[0]
    untested = d.untested
    instead = d.cause
    if instead is None and untested:  # no established cause: the wrong answer rules out the open direction
        instead, untested = untested[0], untested[1:]
    ruled = tuple(instead if t == wrong else t for t in d.refuted if t != wrong or instead)
    return replace(d, error_type=wrong_type or d.error_type, refuted=ruled, untested=untested,  # type: ignore[type-var]
                   cause=wrong, claims=())


def _fit(donor: _Diag, chosen: _Diag) -> _Diag:
    """``donor`` with each hypothesis section cut to the chosen answer's count (the shapes then match
    whenever the donor has at least as many)."""
    return replace(donor, refuted=donor.refuted[:len(chosen.refuted)],  # type: ignore[type-var]
                   confirmed=donor.confirmed[:len(chosen.confirmed)], untested=donor.untested[:len(chosen.untested)])


def _deficit(donor: _Diag, chosen: _Diag) -> int:
    """Bullets the donor lacks to fill the chosen answer's sections."""
    return sum(max(0, len(c) - len(p)) for p, c in ((donor.refuted, chosen.refuted),
                                                    (donor.confirmed, chosen.confirmed),
                                                    (donor.untested, chosen.untested)))


def _size(d: _Diag) -> int:
    """Characters of the texts that vary between answers (cause and bullets)."""
    return len(d.cause or "") + sum(len(t) for t in d.refuted + d.confirmed + d.untested)


def _norm_metric(m: str | None) -> str:
    return "".join(ch for ch in (m or "").lower() if ch.isalnum())


def _text_key(c: Candidate) -> str:
    """Donors with the same cause text count as one (a rejected text may serve at most ``max_uses`` pairs)."""
    return " ".join((c.diagnosis.cause or "").lower().split())


def choose_donors(needs: list[Candidate], pool: list[Candidate], *, seed: int,
                  max_uses: int = MAX_DONOR_USES) -> dict[str, Candidate]:
    """A donor per candidate in ``needs`` (those without a refuted claim), from ``pool``: a different error
    type, another repository, a cause whose text served fewer than ``max_uses`` pairs; best by the lowest
    mismatch of shape (bullets it lacks to fill the chosen answer's sections, then length once cut to
    them) and then of task (the metric): the pair
    should differ in content, not in shape. Candidates are served in a seeded order so no thread always
    gets the best donor; those left without a donor are absent from the result."""
    uses: Counter[str] = Counter()
    order = sorted(needs, key=lambda c: hashlib.sha256(f"{seed}:{c.key}".encode()).hexdigest())
    out: dict[str, Candidate] = {}
    usable = [p for p in pool if p.diagnosis.cause]
    for c in order:
        best: tuple[float, str] | None = None
        pick: Candidate | None = None
        for p in usable:
            if p.key == c.key or p.repo == c.repo or p.diagnosis.error_type == c.diagnosis.error_type \
                    or uses[_text_key(p)] >= max_uses:
                continue
            fitted = _fit(p.diagnosis, c.diagnosis)
            score = 1.0 * _deficit(p.diagnosis, c.diagnosis) \
                + abs(math.log(max(_size(fitted), 1) / max(_size(c.diagnosis), 1))) \
                + (0.0 if _norm_metric(p.metric) and _norm_metric(p.metric) == _norm_metric(c.metric) else 0.3)
            cand = (round(score, 9), p.key)
            if best is None or cand < best:
                best, pick = cand, p
        if pick is not None:
            out[c.key] = pick
            uses[_text_key(pick)] += 1
    return out


def donor_pair(donor: Candidate, chosen: _Diag) -> tuple[_Diag, _Diag]:
    """(chosen, rejected) for a donor pair: both cut to the sections' common counts (so the two answers show
    the same sections with the same number of hypotheses), the rejected one with this thread's gap sentence and
    the chosen answer's resolved flag (so the cause label reads the same)."""
    rejected = replace(_fit(donor.diagnosis, chosen), gap=chosen.gap,  # type: ignore[type-var]
                       resolved=chosen.resolved, claims=())
    return _fit(chosen, rejected), rejected
