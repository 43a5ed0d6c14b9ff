"""The per-record part of ``reprodiag score`` as one pure batch function (records in, scored rows out).

:func:`score_records` does, for a batch, everything that needs only the
record itself, vectorized over the batch with polars: quality components,
score, drop reason (:func:`scoring.vectorized.score_frame`), temporal tier,
weight and detected framework versions (:func:`scoring.vectorized.record_versions_frame`),
redaction of every free-text string of the record (:func:`scoring.frame_redact.redact_strings`
over the batch's strings, each record's in document order) and
the MinHash signature of the kept records' dedup text. What needs the whole
corpus (near-duplicates, splits) is decided afterwards from the rows' light
columns (:mod:`scoring.pipeline`), so a batch's result never depends on other
batches: the batch is the unit of resumption and of distribution (Ray
``map_batches``).

A record's finished document comes out in three JSON pieces (:attr:`ScoredBatch.docs`);
:func:`final_doc` joins
them with the corpus-level fields into the same document, key for key, as
``Record.model_dump(mode="json")`` of the scored, redacted record.
"""

from __future__ import annotations

import json
import types
import typing
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import polars as pl
from pydantic import BaseModel

from reprodiag.redact import LOGIN_KEYS, SKIP_KEYS, SKIP_TREES, People, record_people, redact_doc
from reprodiag.schema import Record
from scoring import frame_redact
from scoring.config import ScoreConfig
from scoring.dedup import signatures_and_tokens
from scoring.quality import POINTS
from scoring.vectorized import (
    dedup_text_expr,
    record_versions_frame,
    records_to_frame,
    score_frame,
    versions_as_dicts,
)

#: Record fields after ``quality`` that :func:`final_doc` appends itself (the corpus-level decisions).
CORPUS_FIELDS = ("duplicate_of", "split")
_FIELDS = tuple(Record.model_fields)
_HEAD = _FIELDS[: _FIELDS.index("quality")]
_TAIL = tuple(f for f in _FIELDS[_FIELDS.index("quality") + 1:] if f not in CORPUS_FIELDS)
assert _FIELDS[-len(CORPUS_FIELDS):] == CORPUS_FIELDS, "final_doc appends duplicate_of and split last"


def _dumps(doc: Any) -> str:
    """Compact JSON (orjson; the standard library for what orjson refuses, e.g. integers beyond 64 bits)."""
    try:
        return orjson.dumps(doc).decode()
    except TypeError:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


#: The light columns of a scored batch: what the corpus-level pass reads (``keep``/``drop_reason`` before
#: near-duplicate removal; ``created``: the dedup sort key, :func:`scoring.vectorized.created_key`;
#: ``created_ts``: creation time in seconds since the epoch, null when unknown, for ``--split-date``;
#: ``signature``: the MinHash signature of the dedup text, ``num_perm`` little-endian uint32, kept rows
#: only; ``tokens``: its word count).
LIGHT_SCHEMA: dict[str, Any] = {
    "thread_id": pl.String, "repo": pl.String, "error_type": pl.String, "keep": pl.Boolean,
    "drop_reason": pl.String, "score": pl.Int64, "tier": pl.String, "weight": pl.Float64, "resolved": pl.Boolean,
    "created": pl.String, "created_ts": pl.Float64, "tokens": pl.Int64, "signature": pl.Binary,
}


@dataclass(frozen=True)
class ScoredBatch:
    """A batch after the per-record part of scoring, in input order.

    ``docs[i]``: record i's finished document in three JSON pieces — the fields before ``quality``, the
    quality object without ``keep``/``drop_reason`` and its closing brace, the fields after it without
    ``duplicate_of``/``split`` — joined by :func:`final_doc`."""

    light: pl.DataFrame
    docs: tuple[tuple[str, str, str], ...]
    #: Redacted spans per kind (``EMAIL``, ``USER``, …) over the batch.
    redactions: dict[str, int]


def final_doc(pieces: tuple[str, str, str], *, keep: bool, drop_reason: str | None, duplicate_of: str | None,
              split: str | None) -> str:
    """The scored record's JSON document (the keys of ``Record``, in order), with the corpus-level decisions."""
    head, quality, tail = pieces
    return (f'{head[:-1]},"quality":{quality},"keep":{"true" if keep else "false"},'
            f'"drop_reason":{_dumps(drop_reason)}}},{tail[1:-1]},'
            f'"duplicate_of":{_dumps(duplicate_of)},"split":{_dumps(split)}}}')


_NEVER_TEXT = (bool, int, float, type(None))


@dataclass(frozen=True)
class _Each:
    """Walk plan of a list of models: ``plan`` for each item."""

    plan: tuple[tuple[str, Any], ...]


_TEXT, _LOGIN, _KEEP = 0, 1, 2


def _plan(model: type[BaseModel]) -> tuple[tuple[str, Any, int], ...]:
    """The fields of ``model`` that can hold text, in order, each with how to walk its value (the plan of a
    nested model, :class:`_Each` for a list of models, or None: walk whatever is there) and what a string
    value of it is (``_TEXT``: redacted, ``_LOGIN``: a placeholder, ``_KEEP``: kept)."""
    out = []
    for name, info in model.model_fields.items():
        if name in SKIP_TREES:
            continue
        ann = info.annotation
        args = [a for a in typing.get_args(ann) if a is not type(None)] if typing.get_origin(ann) in (
            typing.Union, types.UnionType) else [ann]
        if all(isinstance(a, type) and issubclass(a, _NEVER_TEXT) for a in args):
            continue  # numbers and flags: nothing to redact
        sub: Any = None
        if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            sub = _plan(args[0])
        elif (len(args) == 1 and typing.get_origin(args[0]) is list and typing.get_args(args[0])
              and isinstance(typing.get_args(args[0])[0], type) and issubclass(typing.get_args(args[0])[0], BaseModel)):
            sub = _Each(_plan(typing.get_args(args[0])[0]))
        out.append((name, sub, _LOGIN if name in LOGIN_KEYS else _KEEP if name in SKIP_KEYS else _TEXT))
    return tuple(out)


class _Strings:
    """The free-text strings of a record document in the order :func:`reprodiag.redact.redact_doc` visits
    them, with where each one sits, so redacted values can be written back; login fields become
    placeholders. The walk follows :func:`_plan` of ``Record`` (fields that cannot hold text are not
    visited) and, below it, every value as ``redact_doc`` does."""

    def __init__(self, doc: dict[str, Any], people: People) -> None:
        self.texts: list[str] = []
        self.slots: list[tuple[Any, Any]] = []
        self.unknown_login = False
        self.users = 0
        self._people = people
        self._planned(doc, _RECORD_PLAN)

    def _planned(self, d: dict[str, Any], plan: tuple[tuple[str, Any, int], ...]) -> None:
        texts, slots = self.texts, self.slots
        for k, sub, mode in plan:
            x = d.get(k)
            if x is None:
                continue
            if type(x) is str:
                if mode == _TEXT:
                    texts.append(x)
                    slots.append((d, k))
                elif mode == _LOGIN:
                    self._string(d, k, k, x)
            elif isinstance(sub, _Each) and type(x) is list:
                if all(type(i) is dict for i in x):
                    for item in x:
                        self._planned(item, sub.plan)
                else:
                    self._walk(x, k)
            elif type(sub) is tuple and type(x) is dict:
                self._planned(x, sub)
            elif isinstance(x, dict | list):
                self._walk(x, k)

    def _string(self, container: Any, slot: Any, key: str | None, x: str) -> None:
        if key in LOGIN_KEYS:
            known = self._people.get(x)
            if known is None:
                self.unknown_login = True  # redact_doc would add it mid-walk: the Python path decides
            elif known != x:
                container[slot] = known
                self.users += 1
        elif key not in SKIP_KEYS:
            self.texts.append(x)
            self.slots.append((container, slot))

    def _walk(self, v: Any, key: str | None) -> None:
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for k, x in items:
            here = k if isinstance(v, dict) else key
            if here in SKIP_TREES and isinstance(v, dict):
                continue
            if isinstance(x, str):
                self._string(v, k, here, x)
            elif isinstance(x, dict | list):
                self._walk(x, here)

    def write_back(self, texts: Sequence[str]) -> None:
        for (container, k), t in zip(self.slots, texts, strict=True):
            container[k] = t


_RECORD_PLAN = _plan(Record)


def score_records(records: Sequence[Record], config: ScoreConfig,
                  parsed: Sequence[dict[str, Any] | None] | None = None) -> ScoredBatch:
    """Score, tag, redact and sign one batch (see the module docstring). Order preserved.

    ``parsed[i]``, when given and not None, is ``records[i].model_dump(mode="json")`` already at hand (the
    caller's parsed input); it is consumed (changed in place)."""
    if not records:
        return ScoredBatch(pl.DataFrame(schema=LIGHT_SCHEMA), (), {})
    frame = records_to_frame(records)
    scored = score_frame(frame, config).collect()
    versions = versions_as_dicts(record_versions_frame(scored), scored.height)
    keep = scored["keep"].to_list()
    reasons = scored["drop_reason"].to_list()
    scores = scored["score"].to_list()
    tiers = scored["tier"].to_list()
    weights = scored["weight"].to_list()
    comps = {k: scored[f"c_{k}"].to_list() for k in POINTS}
    years = frame["created_year"].to_list()

    kept_idx = np.flatnonzero(np.asarray(keep, dtype=bool))
    sig_of: dict[int, bytes] = {}
    tokens = np.zeros(len(records), dtype=np.int64)
    if len(kept_idx):
        texts = scored.select(dedup_text_expr().alias("t"))["t"].gather(kept_idx)
        sig, tok = signatures_and_tokens(texts, num_perm=config.num_perm, seed=config.seed)
        sig = sig.astype("<u4", copy=False)
        for j, i in enumerate(kept_idx.tolist()):
            sig_of[i] = sig[j].tobytes()
        tokens[kept_idx] = tok

    counts: Counter[str] = Counter()
    docs: list[dict[str, Any]] = []
    walks: list[_Strings | None] = []
    for i, r in enumerate(records):
        doc = parsed[i] if parsed is not None and parsed[i] is not None else orjson.loads(r.model_dump_json())
        tag = doc["temporal_tag"]
        tag["created_year"] = years[i]
        tag["framework_versions"] = dict(sorted({**versions[i], **tag["framework_versions"]}.items()))
        tag["tier"] = tiers[i]
        tag["still_relevant"] = tiers[i] == "current"
        tag["historical_value"] = tiers[i] == "historical"
        tag["weight"] = float(weights[i])
        doc["quality"] = {"score": int(scores[i]), "components": {k: int(comps[k][i]) for k in POINTS}}
        doc["duplicate_of"] = None
        doc["split"] = None
        walk = _Strings(doc, record_people(r))
        if walk.unknown_login:
            doc = redact_doc(doc, record_people(doc), counts)
            walk = None
        else:
            counts["USER"] += walk.users
        docs.append(doc)
        walks.append(walk)

    vec = [i for i, w in enumerate(walks) if w is not None]
    if vec:
        flat: list[str] = []
        lens: list[int] = []
        for i in vec:
            flat.extend(walks[i].texts)  # type: ignore[union-attr]
            lens.append(len(walks[i].texts))  # type: ignore[union-attr]
        rows = np.repeat(np.arange(len(vec)), lens)
        red, got = frame_redact.redact_strings(pl.Series(flat, dtype=pl.String), rows,
                                               frame["participants"].gather(vec))
        counts.update(got)
        out = red.to_list()
        at = 0
        for i, n in zip(vec, lens, strict=True):
            walks[i].write_back(out[at:at + n])  # type: ignore[union-attr]
            at += n

    light = pl.DataFrame({
        "thread_id": [r.thread_id for r in records], "repo": [r.repo for r in records],
        "error_type": [r.error_type for r in records], "keep": keep, "drop_reason": reasons, "score": scores,
        "tier": tiers, "weight": weights,
        "resolved": [r.resolution_type == "resolved" or r.is_resolved for r in records],
        "created": frame["created_at"],
        "created_ts": [r.stats.created_at.timestamp() if r.stats.created_at else None for r in records],
        "tokens": tokens, "signature": [sig_of.get(i) for i in range(len(records))],
    }, schema=LIGHT_SCHEMA)
    pieces = tuple((_dumps({k: doc[k] for k in _HEAD}),
                    _dumps({"score": doc["quality"]["score"], "components": doc["quality"]["components"]})[:-1],
                    _dumps({k: doc[k] for k in _TAIL})) for doc in docs)
    return ScoredBatch(light, pieces, {k: v for k, v in sorted(counts.items()) if v})
