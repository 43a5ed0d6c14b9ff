"""``baseline:prior``: the most frequent directions for the item's symptom keyword, no reading.

The symptom's metric family (BLEU, FID, top-1, mAP, F1, …) selects a prior over error types: a
shipped table (pseudo-counts from the SPEC's shares and common knowledge, e.g. BLEU → evaluation
protocol and tokenization) plus the error types of the *other* eval items with the same keyword
(leave-one-out, so an item's own label never informs its answer). Each of the three most likely
types contributes its most frequent specific direction among those other items, else a default.
"""

from __future__ import annotations

import re
from collections import Counter

from eval_diagnosis.answers import render_directions
from eval_diagnosis.directions import CONCEPT_BY_ID, concepts_in, normalize, specific
from reprodiag.schema import ERROR_TYPES, EvalItem

KEYWORDS: tuple[tuple[str, str], ...] = (
    ("bleu", r"\bbleu\b|sacrebleu|\bchrf\b|translation|\bwmt"),
    ("rouge", r"\brouge|summari[sz]"),
    ("fid", r"\bfid\b|inception score|\bgan\b|diffusion"),
    ("map", r"\bmap\b|\bap\b|coco|detection|\bmiou\b|segmentation"),
    ("top1", r"top ?1|top ?5|imagenet|classification"),
    ("f1", r"\bf1\b|exact match|\bem\b|squad|\bner\b|glue"),
    ("wer", r"\bwer\b|\bcer\b|speech|asr"),
    ("ppl", r"perplexity|\bppl\b"),
    ("reward", r"reward|return|atari|mujoco|episode"),
    ("accuracy", r"accura\w*|\bacc\b"),
)

#: Shipped pseudo-counts over error types per keyword (sum 3 each: a weak prior).
SHIPPED: dict[str, dict[str, float]] = {
    "bleu": {"evaluation_protocol": 1.6, "data": 0.8, "hyperparameter": 0.6},
    "rouge": {"evaluation_protocol": 1.6, "data": 0.7, "hyperparameter": 0.7},
    "fid": {"evaluation_protocol": 1.5, "seed_hardware": 0.8, "hyperparameter": 0.7},
    "map": {"hyperparameter": 1.2, "evaluation_protocol": 1.0, "data": 0.8},
    "top1": {"hyperparameter": 1.1, "data": 1.1, "framework_version": 0.4, "seed_hardware": 0.4},
    "f1": {"evaluation_protocol": 1.2, "data": 1.0, "hyperparameter": 0.8},
    "wer": {"data": 1.4, "evaluation_protocol": 1.2, "hyperparameter": 0.4},
    "ppl": {"data": 1.5, "hyperparameter": 1.0, "evaluation_protocol": 0.5},
    "reward": {"seed_hardware": 1.5, "hyperparameter": 1.0, "framework_version": 0.5},
    "accuracy": {"hyperparameter": 1.0, "data": 0.8, "evaluation_protocol": 0.6, "framework_version": 0.3,
                 "seed_hardware": 0.3},
    "": {"hyperparameter": 0.9, "data": 0.75, "evaluation_protocol": 0.6, "framework_version": 0.45,
         "seed_hardware": 0.3},
}

#: Default direction (concept id) per (keyword, type), then per type.
DEFAULT_CONCEPT: dict[tuple[str, str], str] = {
    ("bleu", "evaluation_protocol"): "metric_impl", ("bleu", "data"): "tokenization",
    ("rouge", "evaluation_protocol"): "metric_impl", ("fid", "evaluation_protocol"): "metric_impl",
    ("map", "evaluation_protocol"): "metric_impl", ("top1", "data"): "preprocess",
    ("f1", "evaluation_protocol"): "metric_impl", ("wer", "data"): "normalization",
    ("ppl", "data"): "tokenization", ("top1", "evaluation_protocol"): "tta",
}
TYPE_DEFAULT: dict[str, str] = {
    "hyperparameter": "lr", "data": "preprocess", "evaluation_protocol": "metric_impl",
    "framework_version": "framework_version", "seed_hardware": "seed",
}


def keyword(item: EvalItem) -> str:
    """The symptom's metric family ('' when none is recognised)."""
    text = " " + normalize(f"{item.symptom} {item.paper}") + " "
    for name, rx in KEYWORDS:
        if re.search(rx, text):
            return name
    return ""


class PriorBaseline:
    spec = "baseline:prior"
    cacheable = False

    def __init__(self, items: list[EvalItem]) -> None:
        self._items = list(items)
        self._kw = {it.id: keyword(it) for it in self._items}
        self._concepts = {it.id: [c.id for c in specific(concepts_in(
            " ; ".join([it.gold_root_cause, *it.acceptable_directions])))] for it in self._items}

    def answer(self, item: EvalItem) -> str:
        kw = keyword(item)
        others = [o for o in self._items if o.id != item.id and self._kw[o.id] == kw]
        votes: Counter[str] = Counter()
        for t, w in SHIPPED.get(kw, SHIPPED[""]).items():
            votes[t] += w
        for o in others:
            if o.error_type in ERROR_TYPES:
                votes[o.error_type] += 1
        types = [t for t, _ in sorted(votes.items(), key=lambda kv: (-kv[1], ERROR_TYPES.index(kv[0])))][:3]
        picks: list[tuple[str, str | None]] = []
        for t in types:
            freq: Counter[str] = Counter()
            for o in others:
                if o.error_type == t:
                    freq.update(c for c in self._concepts[o.id] if t in CONCEPT_BY_ID[c].types)
            cid = freq.most_common(1)[0][0] if freq else DEFAULT_CONCEPT.get((kw, t), TYPE_DEFAULT[t])
            label = kw.upper() if kw else "this kind of"
            picks.append((CONCEPT_BY_ID[cid].phrase, f"the most frequent cause of {label} gaps ({t})"))
        return render_directions(picks)
