"""Vectorized scoring over a flat polars table: the path for millions of records.

It applies the same rules as the per-record path — the constants and regexes
of :mod:`scoring.quality`, :mod:`scoring.temporal` and :mod:`reprodiag.redact`
are the single source of truth — and gives identical results
(``tests/scoring/test_vectorized.py`` checks this on a sample):

* quality components, score, drop reason and keep (:func:`score_frame`);
* temporal tier, weight and detected versions (:func:`versions_frame`: one
  ``str.extract_all`` pass for all frameworks; each distinct match parsed once);
* near-duplicates (:func:`dedup_frame`, also what :func:`scoring.pipeline.score_batch` calls);
* redaction (:func:`redact_frame`, see :mod:`scoring.frame_redact`).

Flat table columns (:data:`FRAME_SCHEMA`): one row per record; ``labels`` is
the labels joined by newlines; ``participants`` a list of ``{login, role}``;
``created_at`` the ISO-8601 creation time (:func:`created_key`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from reprodiag.schema import Record
from scoring import frame_redact
from scoring.config import ScoreConfig
from scoring.dedup import near_duplicates
from scoring.quality import (
    ENV_LABEL_PATTERN,
    ENV_PATTERN,
    ENV_TYPES,
    FEATURE_LABEL_PATTERN,
    FEATURE_PATTERN,
    FEATURE_TYPES,
    MIN_COMMENTS,
    MIN_REACTIONS,
    POINTS,
)
from scoring.temporal import (
    ALIASES,
    CUDA_TAG_KEY,
    CURRENT_FROM_YEAR,
    HISTORICAL_FROM_YEAR,
    TEXT_FIELDS,
    VERSION_PATTERN,
    VERSION_TIE_PATTERN,
)

PARTICIPANT = pl.Struct({"login": pl.String, "role": pl.String})
FRAME_SCHEMA: dict[str, Any] = {
    "thread_id": pl.String, "repo": pl.String, "is_reproduction": pl.Boolean, "error_type": pl.String,
    "problem_statement": pl.String, "environment": pl.String, "tried": pl.String, "root_cause": pl.String,
    "resolution": pl.String, "hypotheses": pl.List(pl.String), "is_resolved": pl.Boolean,
    "resolution_type": pl.String, "diagnostic_depth": pl.Int64, "has_code_snippet": pl.Boolean,
    "paper_value": pl.Float64, "obtained_value": pl.Float64, "state": pl.String, "comments": pl.Int64,
    "reactions": pl.Int64, "referenced": pl.Boolean, "bot_only": pl.Boolean, "has_answer": pl.Boolean,
    "labels": pl.String, "created_year": pl.Int64, "participants": pl.List(PARTICIPANT),
    "metric": pl.String, "created_at": pl.String,
}
#: Free-text columns redacted, in the order the per-record walk visits them.
REDACT_COLUMNS = ("problem_statement", "hypotheses", "root_cause", "resolution", "environment", "tried")


def records_to_frame(records: Sequence[Record]) -> pl.DataFrame:
    rows = []
    for r in records:
        s = r.stats
        rows.append({
            "thread_id": r.thread_id, "repo": r.repo, "is_reproduction": r.is_reproduction,
            "error_type": r.error_type, "problem_statement": r.problem_statement, "environment": r.environment,
            "tried": r.tried, "root_cause": r.root_cause, "resolution": r.resolution,
            "hypotheses": [h.text for h in r.hypothesis_chain], "is_resolved": r.is_resolved,
            "resolution_type": r.resolution_type, "diagnostic_depth": r.diagnostic_depth,
            "has_code_snippet": r.has_code_snippet, "paper_value": r.symptom.paper_value,
            "obtained_value": r.symptom.obtained_value, "state": s.state, "comments": s.comments,
            "reactions": s.reactions, "referenced": s.referenced, "bot_only": s.bot_only,
            "has_answer": s.has_answer, "labels": "\n".join(s.labels),
            "created_year": s.created_at.year if s.created_at else r.temporal_tag.created_year,
            "participants": [{"login": p.login, "role": p.role} for p in s.participants],
            "metric": r.symptom.metric, "created_at": created_key(r),
        })
    return pl.DataFrame(rows, schema=FRAME_SCHEMA)


def created_key(record: Record) -> str:
    """Sort key of a record's creation time: ISO-8601 (UTC), ``"9999"`` when unknown (sorts last)."""
    return record.stats.created_at.isoformat() if record.stats.created_at else "9999"


def _text(col: str) -> pl.Expr:
    return pl.col(col).fill_null("")


def version_text_expr() -> pl.Expr:
    """Same text as :func:`scoring.temporal.record_text`."""
    return pl.concat_str([*(_text(f) for f in TEXT_FIELDS), pl.col("hypotheses").list.join("\n").fill_null("")],
                         separator="\n")


def score_frame(df: pl.DataFrame | pl.LazyFrame, config: ScoreConfig) -> pl.LazyFrame:
    """Add ``c_<component>``, ``score``, ``dependent``, ``tier``, ``weight``, ``still_relevant``,
    ``historical_value``, ``drop_reason`` and ``keep`` (near-duplicates are not decided here)."""
    lf = df.lazy()
    quantified = pl.col("paper_value").is_not_null() & pl.col("obtained_value").is_not_null()
    comps = {
        "resolved": (pl.col("is_resolved") & (pl.col("state") == "closed")) | pl.col("has_answer"),
        "code": pl.col("has_code_snippet"),
        "comments": pl.col("comments") >= MIN_COMMENTS,
        "engagement": (pl.col("reactions") >= MIN_REACTIONS) | pl.col("referenced"),
        "quantified_gap": quantified,
    }
    lf = lf.with_columns(
        [pl.when(v).then(POINTS[k]).otherwise(0).cast(pl.Int64).alias(f"c_{k}") for k, v in comps.items()])
    cause = pl.concat_str([_text("root_cause"), _text("resolution")], separator="\n")
    dependent = (pl.col("error_type") == "framework_version") | (
        (cause.str.strip_chars() != "")
        & (cause.str.contains(VERSION_TIE_PATTERN) | cause.str.contains(VERSION_PATTERN)))
    year = pl.col("created_year")
    tier = (pl.when(~pl.col("dependent")).then(pl.lit("current"))
            .when(year.is_null()).then(pl.lit("historical"))
            .when(year >= CURRENT_FROM_YEAR).then(pl.lit("current"))
            .when(year >= HISTORICAL_FROM_YEAR).then(pl.lit("historical"))
            .otherwise(pl.lit("filtered")))
    lf = lf.with_columns(score=pl.sum_horizontal([f"c_{k}" for k in POINTS]), dependent=dependent)
    lf = lf.with_columns(tier=tier)
    labels = _text("labels")
    text = _text("problem_statement")
    valuable = ((pl.col("resolution_type") == "unresolved_valuable")
                & (pl.col("diagnostic_depth") >= config.valuable_min_depth))
    reason = (
        pl.when(~pl.col("is_reproduction")).then(pl.lit("not_reproduction"))
        .when(pl.col("bot_only")).then(pl.lit("bot_only"))
        .when(pl.col("comments") == 0).then(pl.lit("no_replies"))
        .when(labels.str.contains(FEATURE_LABEL_PATTERN) | (
            pl.col("error_type").is_in(FEATURE_TYPES) & ~quantified & text.str.contains(FEATURE_PATTERN)))
        .then(pl.lit("feature_request"))
        .when(labels.str.contains(ENV_LABEL_PATTERN) | (
            pl.col("error_type").is_in(ENV_TYPES) & ~quantified & text.str.contains(ENV_PATTERN)))
        .then(pl.lit("environment_setup"))
        .when(pl.col("tier") == "filtered").then(pl.lit("temporal_filtered"))
        .when((pl.col("score") < config.threshold) & ~valuable).then(pl.lit("low_quality"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    weights = config.tier_weights
    return lf.with_columns(
        drop_reason=reason,
        weight=pl.col("tier").replace_strict(weights, return_dtype=pl.Float64),
        still_relevant=pl.col("tier") == "current",
        historical_value=pl.col("tier") == "historical",
    ).with_columns(keep=pl.col("drop_reason").is_null())


def versions_frame(text: pl.Series | pl.Expr, frame: pl.DataFrame | None = None) -> pl.DataFrame:
    """Long table ``row, key, version`` of detected versions (same result as ``detect_versions`` per row)."""
    if isinstance(text, pl.Expr):
        assert frame is not None
        texts = frame.select(text.alias("t")).to_series()
    else:
        texts = text.alias("t")
    matches = (pl.DataFrame({"t": texts.fill_null("")}).with_row_index("row")
               .select("row", pl.col("t").str.extract_all(VERSION_PATTERN).alias("m"))
               .explode("m").drop_nulls("m"))
    return _versions_from_matches(matches)


def record_versions_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """:func:`versions_frame` of :func:`version_text_expr`, scanning field by field (no joined copy of the text).

    Same result: a version mention never spans two fields (separators and versions hold no newline).
    """
    per_field = [_text(f).str.extract_all(VERSION_PATTERN) for f in TEXT_FIELDS]
    per_field.append(pl.col("hypotheses").list.join("\n").fill_null("").str.extract_all(VERSION_PATTERN))
    matches = (frame.lazy().select(pl.concat_list(per_field).alias("m")).with_row_index("row")
               .explode("m").drop_nulls("m").collect())
    return _versions_from_matches(matches)


def _versions_from_matches(matches: pl.DataFrame) -> pl.DataFrame:
    """``row, key, version`` from ``row, m`` (every match string of a row, in reading order)."""
    if matches.height == 0:
        return pl.DataFrame(schema={"row": pl.UInt32, "key": pl.String, "version": pl.String})
    # Mentions repeat a lot ("torch==1.8.1"): parse each distinct match string once.
    distinct = matches.select(pl.col("m").unique())
    g = distinct.with_columns(pl.col("m").str.extract_groups(VERSION_PATTERN).alias("g")).unnest("g")
    tag = pl.col("7")
    parsed = g.select(
        "m",
        key=pl.coalesce(pl.col("1"), pl.col("3"), pl.col("5")).str.to_lowercase()
        .replace_strict(ALIASES, default=None, return_dtype=pl.String).fill_null(pl.lit(CUDA_TAG_KEY)),
        version=pl.coalesce(pl.col("2"), pl.col("4"), pl.col("6"),
                            pl.concat_str([tag.str.slice(0, tag.str.len_chars() - 1), pl.lit("."),
                                           tag.str.slice(-1)])),
    )
    first = (matches.join(parsed, on="m", how="left", maintain_order="left").drop("m")
             .unique(["row", "key"], keep="first", maintain_order=True))
    has_cuda = first.filter(pl.col("key") == "cuda").select("row").unique()
    tag_rows = first.filter(pl.col("key") == CUDA_TAG_KEY)
    tag_rows = tag_rows.join(has_cuda, on="row", how="anti").with_columns(key=pl.lit("cuda"))
    return pl.concat([first.filter(pl.col("key") != CUDA_TAG_KEY), tag_rows]).sort(["row", "key"])


def versions_as_dicts(long: pl.DataFrame, n: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = [{} for _ in range(n)]
    for row, key, ver in long.iter_rows():
        out[row][key] = ver
    return out


def redact_frame(df: pl.DataFrame) -> tuple[pl.DataFrame, Counter[str]]:
    """Redact :data:`REDACT_COLUMNS` (and participant logins in them); returns the frame and counts per kind.

    See :mod:`scoring.frame_redact`.
    """
    return frame_redact.redact_frame(df, REDACT_COLUMNS)


@dataclass(frozen=True)
class FrameDedup:
    """``duplicate_of[row]``: the row kept in ``row``'s near-duplicate cluster, or -1 (kept or not compared)."""

    duplicate_of: np.ndarray
    clusters: int


def dedup_text_expr() -> pl.Expr:
    """Text compared for near-duplicates: the problem statement plus the symptom's metric and values, so that
    two templated threads with different numbers stay apart and cross-posts match."""
    return pl.concat_str([
        _text("problem_statement"), pl.lit("\n"), _text("metric"), pl.lit(" "),
        pl.col("paper_value").cast(pl.String).fill_null(""), pl.lit(" "),
        pl.col("obtained_value").cast(pl.String).fill_null(""),
    ])


def dedup_frame(frame: pl.DataFrame, config: ScoreConfig) -> FrameDedup:
    """Near-duplicates among rows with ``keep``: best ``score`` first, then oldest ``created_at``
    (:func:`created_key`), then ``thread_id`` wins its cluster (:func:`scoring.dedup.near_duplicates`).

    Needs ``keep``, ``score``, ``created_at``, ``thread_id`` and the :func:`dedup_text_expr` columns.
    """
    n = frame.height
    dup = np.full(n, -1, dtype=np.int64)
    kept = (frame.lazy().with_row_index("__row").filter(pl.col("keep"))
            .sort(["score", pl.col("created_at").fill_null("9999"), "thread_id"], descending=[True, False, False])
            .select("__row", dedup_text_expr().alias("t")).collect())
    if kept.height < 2:
        return FrameDedup(dup, 0)
    result = near_duplicates(kept["t"], threshold=config.dedup_threshold, num_perm=config.num_perm,
                             seed=config.seed)
    rows = kept["__row"].to_numpy().astype(np.int64)
    is_dup = result.duplicate_of >= 0
    dup[rows[is_dup]] = rows[result.duplicate_of[is_dup]]
    return FrameDedup(dup, result.clusters)
