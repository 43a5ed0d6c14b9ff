"""The named configurations of a build: what each holds and which experiment group of the proposal it serves.

A build writes one folder per configuration (``DatasetDict.save_to_disk`` plus ``<split>.parquet``), and its
dataset card lists them under ``configs:``, so both ``load_from_disk(OUT / "sft_full")`` and
``load_dataset(OUT, "sft_full")`` (the hub's convention, also for a pushed copy) read them:

- ``sft``: every SFT row (resolved, unresolved-valuable and other unresolved threads with a diagnosis);
- ``sft_resolved``: the SFT rows of resolved threads only (experiment group "+ resolved threads");
- ``sft_full``: resolved plus unresolved-valuable rows (group "+ resolved and unresolved-valuable threads"),
  at most the target share of unresolved-valuable rows (SPEC: 70% resolved, 30% unresolved-valuable); where a
  split holds more, a seeded choice of them is kept and the rest counted as left out;
- ``dpo``: preference pairs, trained after SFT (group "+ DPO");
- ``eval``: the diagnosis benchmark every group is measured on.

SFT mixes keep every column of ``sft``, ``weight`` (the temporal tier weight, 0–1) included: a trainer
may use it as a per-sample loss weight. The baseline group trains on nothing.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: SPEC's target share of resolved rows in the full SFT mix (the rest: unresolved-valuable rows); the same
#: figure as ``scoring.config.ScoreConfig.target_resolved_share``'s default, which scoring reports against.
TARGET_RESOLVED_SHARE = 0.7


@dataclass(frozen=True)
class Mix:
    """One configuration of a build. ``source``: the dataset its rows come from (``sft``, ``dpo``, ``eval``);
    ``resolution``: the ``resolution_type`` values an SFT mix keeps (None: every row of ``source``);
    ``group``: the proposal's experiment group it serves; ``use``: one line on how to train or measure
    with it."""

    name: str
    source: str
    resolution: tuple[str, ...] | None
    group: str
    use: str


MIXES: tuple[Mix, ...] = (
    Mix("sft", "sft", None, "(all SFT rows)",
        "every SFT row, unresolved threads without a valuable diagnosis included"),
    Mix("sft_resolved", "sft", ("resolved",), "+ resolved threads",
        "SFT on resolved threads only"),
    Mix("sft_full", "sft", ("resolved", "unresolved_valuable"), "+ resolved and unresolved-valuable threads",
        "SFT on resolved and unresolved-valuable threads (the target mix)"),
    Mix("dpo", "dpo", None, "+ DPO (after SFT on sft_full)",
        "DPO on top of the sft_full model"),
    Mix("eval", "eval", None, "every group is measured on it",
        "reprodiag eval --eval-set OUT/eval --model hf:CHECKPOINT"),
)
#: Configuration names in the order the card lists them.
CONFIGS: tuple[str, ...] = tuple(m.name for m in MIXES)
#: The SFT mixes a build derives from the ``sft`` rows.
SFT_MIXES: tuple[Mix, ...] = tuple(m for m in MIXES if m.source == "sft" and m.resolution is not None)


def mix_named(name: str) -> Mix:
    """The configuration called ``name`` (KeyError for an unknown name)."""
    for m in MIXES:
        if m.name == name:
            return m
    raise KeyError(name)


@dataclass(frozen=True)
class MixFacts:
    """What the card states about one SFT mix of a build: rows per split, rows per resolution type (all
    splits), and the unresolved-valuable rows left out to keep the target share."""

    name: str
    rows: dict[str, int]
    resolution: Counter[str] = field(default_factory=Counter)
    capped: int = 0

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def _order(thread_id: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}\x1f{thread_id}".encode()).hexdigest()


def unresolved_cap(resolved: int, target: float = TARGET_RESOLVED_SHARE) -> int:
    """The most unresolved-valuable rows that ``resolved`` resolved rows admit at the target share
    (``round(resolved · (1 − target) / target)``; 0 when there is no resolved row)."""
    if resolved <= 0 or not 0 < target <= 1:
        return 0
    return int(round(resolved * (1 - target) / target))


def select_mix(rows: Sequence[dict[str, Any]], mix: Mix, *, seed: int,
               target: float = TARGET_RESOLVED_SHARE) -> tuple[list[dict[str, Any]], int]:
    """The rows of one split that ``mix`` keeps, in their input order, and how many unresolved-valuable rows
    were left out to hold the target share (a seeded choice by thread id, so the same build keeps the same
    rows). Rows of a resolution type the mix does not name are not kept and not counted."""
    if mix.resolution is None:
        return list(rows), 0
    kept = [r for r in rows if r.get("resolution_type") in mix.resolution]
    if "unresolved_valuable" not in mix.resolution or "resolved" not in mix.resolution:
        return kept, 0
    valuable = [r for r in kept if r.get("resolution_type") == "unresolved_valuable"]
    cap = unresolved_cap(len(kept) - len(valuable), target)
    if len(valuable) <= cap:
        return kept, 0
    chosen = sorted(valuable, key=lambda r: _order(str(r.get("thread_id")), seed))[:cap]
    keep_ids = {id(r) for r in chosen}
    out = [r for r in kept if r.get("resolution_type") != "unresolved_valuable" or id(r) in keep_ids]
    return out, len(valuable) - cap


def sft_mixes(splits: dict[str, list[dict[str, Any]]], *, seed: int,
              target: float = TARGET_RESOLVED_SHARE) -> dict[str, tuple[dict[str, list[dict[str, Any]]], MixFacts]]:
    """mix name → (split → rows, facts) for every SFT mix (:data:`SFT_MIXES`) of the ``sft`` rows ``splits``;
    every split of ``sft`` is present in each mix, possibly empty."""
    out: dict[str, tuple[dict[str, list[dict[str, Any]]], MixFacts]] = {}
    for mix in SFT_MIXES:
        by_split: dict[str, list[dict[str, Any]]] = {}
        capped = 0
        for split, rows in splits.items():
            by_split[split], n = select_mix(rows, mix, seed=seed, target=target)
            capped += n
        res = Counter(str(r.get("resolution_type")) for rows in by_split.values() for r in rows)
        out[mix.name] = (by_split, MixFacts(mix.name, {s: len(r) for s, r in by_split.items()}, res, capped))
    return out
