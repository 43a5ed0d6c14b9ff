"""Features of the concept grader: one feature dict per (item, direction) and one per answer.

A direction is read for the *cause concepts* it names (``eval_diagnosis/data/taxonomy.json``, through
:mod:`eval_diagnosis.directions`) after negated clauses are removed; the item's gold concepts come from its
``gold_concepts`` (set at build time) or, for older rows, from its gold root cause and acceptable directions.
Beside shared concepts the model sees confusable concepts, generic-only directions, negated gold concepts,
word coverage and character 4-gram similarity to the gold texts, and the older word-overlap grader's verdict.
Answer-level features describe hedging: how many error types the directions name, how many are generic.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from eval_diagnosis.answers import Direction
from eval_diagnosis.directions import (
    CONCEPT_BY_ID,
    acceptable_directions,
    concepts_in,
    content_tokens,
    key_terms,
    normalize,
    specific,
    type_votes,
)
from reprodiag.schema import ERROR_TYPES, EvalItem

Features = dict[str, float]

#: A more specific concept in a gold text makes a broader one incidental ("warmup of the learning rate" is
#: about warmup: an answer blaming the learning rate itself names another cause).
SUBSUMES: dict[str, frozenset[str]] = {
    "warmup": frozenset({"lr", "schedule"}),
    "schedule": frozenset({"lr"}),
    "label_smoothing": frozenset({"loss_weight"}),
    "summary_level": frozenset({"metric_impl", "split"}),
    "answer_normalization": frozenset({"tokenization", "normalization"}),
    "metric_threshold": frozenset({"postprocess"}),
    "train_data": frozenset({"split"}),
    "metric_averaging": frozenset({"metric_impl"}),
    "bleu_tokenization": frozenset({"metric_impl", "tokenization"}),
    "gpu_scaling": frozenset({"batch", "lr"}),
}

_NEGATED = re.compile(
    r"\b(?:not (?:the|a|an|your|due to|caused by|about|related to|because of)|isn'?t (?:the|a|an|your)|"
    r"is not (?:the|a|an)|unlikely (?:to be )?|rules? out|ruled out|ruling out|already (?:match|use|set|\w+ed\b)\w*|"
    r"exclude[sd]?|rather than|instead of|no need to|can be excluded|is fine|are fine)\b[^,;.!?]*|"
    r"(?:不是|排除|并非|无关)[^，,。；;]*", re.I)


#: A clause that rules its own subject out ("the seed is not the cause", "batch size cannot explain a
#: ten-point drop", "X is not what differs", "X does not matter here").
_RULED_OUT = re.compile(
    r"\b(?:is|are|was|were|'s)(?: certainly| probably| definitely| clearly)? (?:not|n't|unlikely to be) "
    r"(?:the |an? )?(?:\w+ )?(?:cause|issue|problem|reason|culprit|explanation|what differs|at fault|to blame)\b|"
    r"\b(?:isn'?t|aren'?t|wasn'?t) (?:the |an? )?(?:\w+ )?(?:cause|issue|problem|reason|culprit)\b|"
    r"\b(?:can ?not|can'?t|could not|couldn'?t|does not|doesn'?t|do not|don'?t|would not|won'?t) "
    r"(?:possibly |really |fully )?(?:explain|account for|matter|cause|be (?:the )?(?:cause|reason|issue))\b|"
    r"\bnot what (?:differs|changed|matters)\b|\bhas nothing to do with\b|\bis irrelevant\b|"
    r"\b(?:rule[sd]?|ruling) (?:it|this|that) out\b|^\s*(?:it is|it's) not\b|\bnot (?:the|an?) (?:issue|problem|cause) here\b|"
    r"不是(?:原因|问题)|不是.{0,8}的(?:原因|问题)|可以排除|无关|不影响", re.I)
_CLAUSES = re.compile(r"[.;!?。；！？]+\s*|\s+[—–-]{1,2}\s+|,\s+(?:so|since|because|as)\s+")


def affirmed(text: str) -> str:
    """``text`` without its negated clauses: clauses that rule their subject out ("the seed is not the
    cause", "batch size cannot explain it") are dropped whole; "not the warmup" / "rule out the seed" drop
    what follows the negation."""
    kept = [c for c in _CLAUSES.split(text) if c and not _RULED_OUT.search(c)]
    return _NEGATED.sub(" ", " . ".join(kept))


#: Concepts named by naming all of their parts ("the learning rate was not scaled with the batch size").
COMPOSED: dict[str, frozenset[str]] = {"gpu_scaling": frozenset({"lr", "batch"})}


def _ids(text: str) -> set[str]:
    ids = {c.id for c in specific(concepts_in(text))}
    for whole, parts in COMPOSED.items():
        if parts <= ids:
            ids.add(whole)
    for cid in list(ids):
        ids -= SUBSUMES.get(cid, frozenset())
    return ids


def gold_concepts(root_cause: str, acceptable: list[str], error_type: str) -> list[str]:
    """The specific concepts of a gold root cause and its acceptable directions (each text read on its own,
    broader concepts subsumed by narrower ones in the same text), sorted."""
    phrases = list(acceptable) or acceptable_directions(root_cause, error_type)
    found: set[str] = set()
    for text in [root_cause, *phrases]:
        found |= _ids(text)
    return sorted(found)


@lru_cache(maxsize=4096)
def _grams(text: str) -> Counter[str]:
    t = " " + normalize(text) + " "
    return Counter(t[i:i + 4] for i in range(max(len(t) - 3, 1)))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


class ItemTargets:
    """What a direction is compared with: gold concepts, their confusables, gold texts and tokens."""

    __slots__ = ("item", "concepts", "core", "confusable", "texts", "token_sets", "grams", "keys")

    def __init__(self, item: EvalItem) -> None:
        self.item = item
        gc = list(getattr(item, "gold_concepts", None) or []) or gold_concepts(
            item.gold_root_cause, list(item.acceptable_directions), item.error_type)
        self.concepts = frozenset(gc)
        #: concepts of the gold root cause sentence itself (the acceptable directions may add broader ones)
        self.core = frozenset(_ids(item.gold_root_cause)) & self.concepts or self.concepts
        conf: set[str] = set()
        for cid in gc:
            c = CONCEPT_BY_ID.get(cid)
            if c is not None:
                conf |= set(c.confusable_with)
        self.confusable = frozenset(conf - self.concepts)
        self.texts = [item.gold_root_cause, *item.acceptable_directions]
        self.token_sets = [frozenset(content_tokens(t)) for t in self.texts if t.strip()]
        self.grams = [_grams(t) for t in self.texts if t.strip()]
        self.keys = [k for k in key_terms(item.gold_root_cause) if len(k) >= 3]


def direction_features(d: Direction, tg: ItemTargets, v1_match: bool) -> Features:
    item = tg.item
    head = affirmed(d.text)
    ids = _ids(head)
    read_full = False
    if not ids:
        ids = _ids(affirmed(d.full))
        read_full = bool(ids)
    f: Features = {"bias_feature": 1.0}
    shared = ids & tg.concepts
    f[f"gold_n:{min(len(tg.concepts), 4)}"] = 1.0
    if shared:
        f["shared"] = 1.0
        f["shared_n"] = float(min(len(shared), 3))
        f["shared_frac"] = len(shared) / len(ids)
        if shared & tg.core:
            f["shared_core"] = 1.0
        if any(item.error_type in CONCEPT_BY_ID[c].types for c in shared):
            f["shared_in_type"] = 1.0
        if read_full:
            f["shared_in_justification"] = 1.0
    elif ids & tg.confusable:
        f["confusable"] = 1.0
    elif ids:
        f["other_specific"] = 1.0
    else:
        generic = [c for c in concepts_in(affirmed(d.full)) if c.generic]
        f["generic_only" if generic else "no_concept"] = 1.0
    if ids and not shared:
        f["unshared_n"] = float(min(len(ids), 3))
    toks = content_tokens(affirmed(d.full))
    cov = jac = 0.0
    for ts in tg.token_sets:
        if ts and toks:
            inter = len(ts & toks)
            cov = max(cov, inter / len(ts))
            jac = max(jac, inter / len(ts | toks))
    f["cov"] = cov
    f["jac"] = jac
    f[f"cov_b:{'>=.6' if cov >= 0.6 else '>=.34' if cov >= 0.34 else '>0' if cov > 0 else '0'}"] = 1.0
    g = _grams(affirmed(d.full))
    sim = max((_cosine(g, x) for x in tg.grams), default=0.0)
    f["char_sim"] = sim
    f[f"char_sim_b:{'>=.5' if sim >= 0.5 else '>=.3' if sim >= 0.3 else '>=.15' if sim >= 0.15 else '<.15'}"] = 1.0
    low = d.full.lower()
    if any(k in low for k in tg.keys):
        f["key_term"] = 1.0
    if v1_match:
        f["v1_match"] = 1.0
    return f


def types_named(dirs: list[Direction]) -> int:
    """How many of the five error types the directions name (each direction counts for its top type)."""
    types: set[str] = set()
    for d in dirs:
        votes = type_votes(concepts_in(affirmed(d.full)))
        if votes:
            types.add(max(votes, key=lambda t: votes[t]))
    return len(types & set(ERROR_TYPES))


def answer_features(dirs: list[Direction], probs: list[float]) -> Features:
    """Answer-level features: the best direction's score, whether the answer is a hedge list (it names four
    or more error types) and how much of it is generic. (How many lines an answer has, how wrong its other
    lines are, or how often it says "may" are left out on purpose: they describe how the answers were
    written, not whether the cause is named.)"""
    f: Features = {"bias_feature": 1.0}
    best = max(probs, default=0.0)
    p = min(max(best, 1e-4), 1 - 1e-4)
    f["best_logit"] = math.log(p / (1 - p))
    if types_named(dirs) >= 4:
        f["hedge_types"] = 1.0
    generic = sum(1 for d in dirs if (cs := concepts_in(affirmed(d.full))) and all(c.generic for c in cs))
    if dirs:
        f["generic_share"] = generic / len(dirs)
    return f


def names_core_cause(d: Direction, tg: ItemTargets) -> bool:
    """The direction's head (negations removed) names a concept of the gold root cause sentence itself, of
    the item's error type, and no concept the taxonomy marks as confusable with the gold's: a hit by
    definition (a shared cause concept)."""
    ids = _ids(affirmed(d.text))
    core = ids & tg.core
    return bool(core) and not (ids - tg.concepts) & tg.confusable and any(
        tg.item.error_type in CONCEPT_BY_ID[c].types for c in core)
