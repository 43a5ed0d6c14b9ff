"""``lexical``: the offline grader. Deterministic, no model calls.

Each direction of the answer gets a calibrated probability that it names the item's root cause (the
``grader_direction`` model over :func:`direction_features`: shared cause concepts, confusable concepts,
negation, generic wording, word and character similarity to the gold texts); the answer gets a calibrated
probability of being a hit (the ``grader_answer`` model over the best directions' scores and hedging
features). A list whose directions name ``HEDGE_TYPES`` (4) or more error types is a hedge, never a hit. ``hit`` is that probability ≥
``HIT_THRESHOLD`` (chosen on the labeled dev answers for precision, so an answer written for another problem is
not credited); ``hit_rank`` is the first direction whose probability reaches the direction model's threshold or
whose head names the gold root cause's own concept (else the best direction). A grade whose answer probability
lies within ``UNCERTAIN_BAND`` of the threshold is marked ``uncertain``: ``--grader lexical+llm:SPEC`` sends
exactly those to the LLM judge.
"""

from __future__ import annotations

from eval_diagnosis.answers import parse_directions
from eval_diagnosis.graders.base import DirectionGrade, Grade
from eval_diagnosis.graders.concept_features import (
    ItemTargets,
    answer_features,
    direction_features,
    names_core_cause,
    types_named,
)
from eval_diagnosis.graders.lexical import WordOverlapGrader
from extract.learned.linear import LinearModel, shipped
from reprodiag.schema import EvalItem

#: An answer whose directions name this many error types is a hedge list: never a hit.
HEDGE_TYPES = 4
#: An answer is a hit when its calibrated probability reaches this. Chosen on the labeled ``dev`` answers for
#: precision: on a 0.03 grid from 0.50, the threshold with the best accuracy among those at which the hit answers
#: of other items of another error type are graded hits at most 5% of the time (0.68: accuracy 0.853, precision
#: 0.928, other-type control 1.6%; the answer model's own accuracy threshold, 0.37, let 12% of them through).
HIT_THRESHOLD = 0.68
#: Half-width of the band of answer probabilities (around the threshold) graded ``uncertain``.
UNCERTAIN_BAND = 0.2


def direction_probs(item: EvalItem, answer: str, model: LinearModel | None = None,
                    tg: ItemTargets | None = None) -> tuple[list, list[float]]:
    """(directions, probability that each names the root cause)."""
    m = model or shipped("grader_direction")
    dirs = parse_directions(answer)
    tg = tg or ItemTargets(item)
    v1 = WordOverlapGrader()
    targets = v1.targets(item)
    probs = [m.prob(direction_features(d, tg, v1.matches(d, item, targets))) for d in dirs]
    return dirs, probs


class ConceptGrader:
    name = "lexical"

    def __init__(self, direction_model: LinearModel | None = None, answer_model: LinearModel | None = None) -> None:
        self.dm = direction_model or shipped("grader_direction")
        self.am = answer_model or shipped("grader_answer")

    def answer_prob(self, item: EvalItem, answer: str,
                    tg: ItemTargets | None = None) -> tuple[list, list[float], float]:
        dirs, probs = direction_probs(item, answer, self.dm, tg)
        if not dirs:
            return dirs, probs, 0.0
        return dirs, probs, self.am.prob(answer_features(dirs, probs))

    def grade(self, item: EvalItem, answer: str) -> Grade:
        text = answer or ""
        if not text.strip():
            return Grade(id=item.id, reason="miss: empty answer", grader=self.name)
        tg = ItemTargets(item)
        dirs, probs, p = self.answer_prob(item, text, tg)
        if not dirs:
            return Grade(id=item.id, reason="miss: no parsable direction (garbage answer)", grader=self.name)
        t_dir = self.dm.threshold
        hedge = len(dirs) >= HEDGE_TYPES and types_named(dirs) >= HEDGE_TYPES
        core = [names_core_cause(d, tg) for d in dirs]
        hit = p >= HIT_THRESHOLD and not hedge  # a shared concept alone is no hit: the probability decides
        uncertain = abs(p - HIT_THRESHOLD) < UNCERTAIN_BAND and not hedge
        matched = [q >= t_dir or c for q, c in zip(probs, core, strict=True)]
        rank: int | None = None
        if hit:
            rank = next((i for i, m in enumerate(matched, start=1) if m), None)
            if rank is None:
                rank = max(range(len(probs)), key=lambda i: probs[i]) + 1
                matched[rank - 1] = True
        else:
            matched = [False] * len(dirs)
        graded = [DirectionGrade(text=(d.raw or d.full)[:500], matched=m, justified=d.justified)
                  for d, m in zip(dirs, matched, strict=True)]
        reason = (f"hit at rank {rank}" if hit else "miss: hedge list (names every error type)" if hedge
                  else "miss: a direction names the cause's concept, below the hit threshold" if any(core)
                  else "miss: no direction names the root cause") + \
            f" (p={p:.2f}{', uncertain' if uncertain else ''})"
        return Grade(id=item.id, hit=hit, hit_rank=rank, directions=graded,
                     false_positives=sum(not g.matched for g in graded), justified=sum(g.justified for g in graded),
                     error_type_match=None, reason=reason, grader=self.name, uncertain=uncertain,
                     confidence=round(p, 4))
