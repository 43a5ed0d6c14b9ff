"""Offline grader: concept and token overlap with the acceptable directions, plus error-type agreement.

A direction *matches* when it names a specific concept that the gold root cause or an acceptable
direction also names (and that concept, or the direction as a whole, belongs to the item's error
type), or when it covers most content tokens of one acceptable direction. Generic words
("hyperparameters", "the data") never match. An answer that names all five error types or more than
eight directions is *unfocused*: it cannot hit, and its extra directions count as false positives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval_diagnosis.answers import Direction, parse_directions
from eval_diagnosis.directions import (
    _COMMON,
    CONCEPTS,
    Concept,
    acceptable_directions,
    concepts_in,
    content_tokens,
    normalize,
    specific,
    type_votes,
)
from eval_diagnosis.graders.base import DirectionGrade, Grade
from eval_diagnosis.graders.concept_features import SUBSUMES as _SUBSUMES
from reprodiag.schema import ERROR_TYPES, EvalItem

MAX_FOCUSED = 8


@dataclass(frozen=True)
class _Targets:
    concepts: frozenset[str]
    token_sets: tuple[frozenset[str], ...]


#: A more specific concept in the gold text makes a broader one incidental (shared with the concept grader).
SUBSUMES = _SUBSUMES

_PHRASE_CONCEPT = {c.phrase.lower(): c.id for c in CONCEPTS}


def _concept_ids(text: str) -> set[str]:
    """Specific concepts of a gold text; a canonical concept phrase stands for its own concept only."""
    own = _PHRASE_CONCEPT.get(" ".join(text.split()).lower())
    if own is not None:
        return {own}
    return {c.id for c in specific(concepts_in(text))}


def _targets(item: EvalItem) -> _Targets:
    phrases = list(item.acceptable_directions) or acceptable_directions(item.gold_root_cause, item.error_type)
    # subsumption applies within each text: a phrase that names the broader concept on its own ("ROUGE
    # implementation") keeps it as a target even when the gold names a narrower one ("ROUGE-Lsum")
    found: set[str] = set()
    for text in [item.gold_root_cause, *phrases]:
        ids = _concept_ids(text)
        for cid in list(ids):
            ids -= SUBSUMES.get(cid, frozenset())
        found |= ids
    sets = []
    for p in phrases:
        n = normalize(p)
        toks = frozenset(content_tokens(n, normalized=True))
        if toks:
            sets.append(toks)
    return _Targets(frozenset(found), tuple(sets))


def _top_types(concepts: list[Concept]) -> set[str]:
    votes = type_votes(concepts)
    if not votes:
        return set()
    best = max(votes.values())
    return {t for t, v in votes.items() if v == best}


_NEGATED = re.compile(r"\b(?:not (?:the|a|an|your|due to|caused by|about|related to)|isn't (?:the|a|an|your)|"
                      r"unlikely (?:to be )?|rule[sd]? out|ruling out|already (?:match|use|set)\w*|excluded?)\b"
                      r"[^,;.!?]*|(?:不是|排除)[^，,。；;]*", re.I)


def _affirmed(text: str) -> str:
    """``text`` without negated clauses ("not the warmup", "rule out the seed")."""
    return _NEGATED.sub(" ", text)


def match_direction(d: Direction, item: EvalItem, targets: _Targets) -> bool:
    """Whether one direction names the item's root cause. The justification counts only when the
    direction's head names no specific concept ("Seed: because the batch is small" is about seeds)."""
    n = normalize(_affirmed(d.text))
    found = specific(concepts_in(n, normalized=True))
    if not found:  # the direction itself names nothing specific: read its justification too
        n = normalize(_affirmed(d.full))
        found = specific(concepts_in(n, normalized=True))
    types = _top_types(found)
    shared = [c for c in found if c.id in targets.concepts]
    if shared and (item.error_type == "other" or item.error_type in types
                   or any(item.error_type in c.types for c in shared)):
        return True
    toks = content_tokens(n, normalized=True)
    for t in targets.token_sets:
        inter = t & toks
        if not inter or inter <= _COMMON:
            continue
        cover = len(inter) / len(t)
        if cover >= 0.6 and len(inter) >= min(2, len(t)):
            return True
        if cover >= 0.34 and item.error_type in types:
            return True
    return False


class WordOverlapGrader:
    """``lexical-v1``: the earlier offline grader (concept and word overlap rules, no learned weights), kept
    as the baseline the agreement figures are compared with and as a feature of the concept grader."""

    name = "lexical-v1"

    def targets(self, item: EvalItem) -> _Targets:
        return _targets(item)

    def matches(self, d: Direction, item: EvalItem, targets: _Targets) -> bool:
        return match_direction(d, item, targets)

    def grade(self, item: EvalItem, answer: str) -> Grade:
        text = answer or ""
        dirs = parse_directions(text)
        if not text.strip():
            return Grade(id=item.id, reason="miss: empty answer", grader=self.name)
        if not dirs:
            return Grade(id=item.id, reason="miss: no parsable direction (garbage answer)", grader=self.name)
        targets = _targets(item)
        graded = [DirectionGrade(text=(d.raw or d.full)[:500], matched=match_direction(d, item, targets), justified=d.justified)
                  for d in dirs]
        rank = next((i for i, g in enumerate(graded, start=1) if g.matched), None)
        types_named = {c.types[0] for d in dirs for c in specific(concepts_in(d.full))}
        unfocused = len(dirs) > MAX_FOCUSED or len(types_named & set(ERROR_TYPES)) >= len(ERROR_TYPES)
        first = _top_types(specific(concepts_in(dirs[0].full)))
        fp = sum(not g.matched for g in graded)
        if unfocused:
            why = f"{len(dirs)} directions" if len(dirs) > MAX_FOCUSED else "all five error types named"
            reason = f"miss: unfocused answer ({why})"
            hit, rank_out = False, None
        elif rank is None:
            reason = "miss: no direction matches the root cause"
            hit, rank_out = False, None
        else:
            reason = f"hit at rank {rank}"
            hit, rank_out = True, rank
        return Grade(id=item.id, hit=hit, hit_rank=rank_out, directions=graded, false_positives=fp,
                     justified=sum(g.justified for g in graded), error_type_match=item.error_type in first,
                     reason=reason, grader=self.name)
