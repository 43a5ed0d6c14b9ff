"""Scoring over a flat polars table of records (:func:`records_to_frame`): the only scoring path.

It applies the rules whose constants and patterns live in :mod:`scoring.quality`,
:mod:`scoring.temporal` and :mod:`reprodiag.redact` (the redaction matches the
Python redactor used for exports; ``tests/scoring/test_vectorized.py`` checks it):

* quality components, score, drop reason and keep (:func:`score_frame`);
* temporal tier, weight and detected versions (:func:`versions_frame`: one
  ``str.extract_all`` pass for all frameworks; each distinct match parsed once);
* the text compared for near-duplicates (:func:`dedup_text_expr`; the clustering is :mod:`scoring.dedup`);
* redaction (:func:`redact_frame`, see :mod:`scoring.frame_redact`).

Flat table columns (:data:`FRAME_SCHEMA`): one row per record; ``labels`` is
the labels joined by newlines; ``participants`` a list of ``{login, role}``;
``created_at`` the ISO-8601 creation time (:func:`created_key`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from reprodiag.schema import Record
from scoring import frame_redact
from scoring.config import ScoreConfig
from scoring.quality import (
    CASE_FOLDS,
    ENV_LABEL_PATTERN,
    ENV_NEEDLES,
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
    "thread_id": pl.String, "repo": pl.String, "is_reproduction": pl.Boolean, "relevance": pl.Float64,
    "error_type": pl.String,
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


def _list_series(lengths: list[int], values: pa.Array) -> pl.Series:
    """A list column from flat values and per-row lengths (built by Arrow: no per-row Python objects)."""
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int32))
    return pl.from_arrow(pa.ListArray.from_arrays(offsets, values))  # type: ignore[return-value]


_I64 = (-(2 ** 63), 2 ** 63 - 1)


def _i64(v: int | None) -> int | None:
    """An integer as the table holds it: the contract allows any size, the rules only compare it with small
    thresholds, so a count beyond 64 bits reads as the largest 64-bit one."""
    return v if v is None or _I64[0] <= v <= _I64[1] else max(_I64[0], min(_I64[1], v))


def records_to_frame(records: Sequence[Record]) -> pl.DataFrame:
    """The flat scoring table (:data:`scoring.vectorized.FRAME_SCHEMA`) of a batch."""
    scalar = [k for k in FRAME_SCHEMA if k not in ("hypotheses", "participants")]
    cols: dict[str, list[Any]] = {k: [] for k in scalar}
    hyp: list[str] = []
    hyp_n: list[int] = []
    logins: list[str] = []
    roles: list[str] = []
    part_n: list[int] = []
    for r in records:
        s, sym = r.stats, r.symptom
        cols["thread_id"].append(r.thread_id)
        cols["repo"].append(r.repo)
        cols["is_reproduction"].append(r.is_reproduction)
        cols["relevance"].append(r.relevance)
        cols["error_type"].append(r.error_type)
        cols["problem_statement"].append(r.problem_statement)
        cols["environment"].append(r.environment)
        cols["tried"].append(r.tried)
        cols["root_cause"].append(r.root_cause)
        cols["resolution"].append(r.resolution)
        hyp.extend(h.text for h in r.hypothesis_chain)
        hyp_n.append(len(r.hypothesis_chain))
        cols["is_resolved"].append(r.is_resolved)
        cols["resolution_type"].append(r.resolution_type)
        cols["diagnostic_depth"].append(_i64(r.diagnostic_depth))
        cols["has_code_snippet"].append(r.has_code_snippet)
        cols["paper_value"].append(sym.paper_value)
        cols["obtained_value"].append(sym.obtained_value)
        cols["state"].append(s.state)
        cols["comments"].append(_i64(s.comments))
        cols["reactions"].append(_i64(s.reactions))
        cols["referenced"].append(s.referenced)
        cols["bot_only"].append(s.bot_only)
        cols["has_answer"].append(s.has_answer)
        cols["labels"].append("\n".join(s.labels))
        cols["created_year"].append(s.created_at.year if s.created_at else _i64(r.temporal_tag.created_year))
        logins.extend(p.login for p in s.participants)
        roles.extend(p.role for p in s.participants)
        part_n.append(len(s.participants))
        cols["metric"].append(sym.metric)
        cols["created_at"].append(s.created_at.isoformat() if s.created_at else "9999")
    df = pl.DataFrame(cols, schema={k: FRAME_SCHEMA[k] for k in scalar})
    parts = pa.StructArray.from_arrays([pa.array(logins, pa.large_string()), pa.array(roles, pa.large_string())],
                                       names=["login", "role"])
    return df.with_columns(hypotheses=_list_series(hyp_n, pa.array(hyp, pa.large_string())).cast(pl.List(pl.String)),
                           participants=_list_series(part_n, parts).cast(pl.List(PARTICIPANT))).select(
        list(FRAME_SCHEMA))


def created_key(record: Record) -> str:
    """Sort key of a record's creation time: ISO-8601 (UTC), ``"9999"`` when unknown (sorts last)."""
    return record.stats.created_at.isoformat() if record.stats.created_at else "9999"


def _text(col: str) -> pl.Expr:
    return pl.col(col).fill_null("")


def version_text_expr() -> pl.Expr:
    """Same text as :func:`scoring.temporal.record_text`."""
    return pl.concat_str([*(_text(f) for f in TEXT_FIELDS), pl.col("hypotheses").list.join("\n").fill_null("")],
                         separator="\n")


def contains_where(text: pl.Series, pattern: str, needles: Sequence[str], where: pl.Series | None = None) -> pl.Series:
    """``text.str.contains(pattern)`` (nulls false), the regex run only where ``where`` holds and the text
    holds one of ``needles`` (ASCII case-insensitively; every match of ``pattern`` must hold one) or a letter
    ``(?i)`` folds to ASCII; false elsewhere. The needles turn a slow regex over every text (Unicode word
    boundaries under ``(?i)``: about 45 µs a text) into a literal scan."""
    cand = text.str.contains_any([*needles, *CASE_FOLDS], ascii_case_insensitive=True).fill_null(False)
    if where is not None:
        cand = cand & where.fill_null(False)
    idx = cand.arg_true()
    out = np.zeros(len(text), dtype=bool)
    if len(idx):
        out[idx.to_numpy()] = text.gather(idx).str.contains(pattern).fill_null(False).to_numpy()
    return pl.Series(text.name, out, dtype=pl.Boolean)


def score_frame(df: pl.DataFrame | pl.LazyFrame, config: ScoreConfig) -> pl.LazyFrame:
    """Add ``c_<component>``, ``score``, ``dependent``, ``tier``, ``weight``, ``still_relevant``,
    ``historical_value``, ``drop_reason`` and ``keep`` (near-duplicates are not decided here)."""
    if isinstance(df, pl.DataFrame):  # the environment-text test only where it can decide (see contains_where)
        env_rows = (df["error_type"].is_in(ENV_TYPES)
                    & ~(df["paper_value"].is_not_null() & df["obtained_value"].is_not_null()))
        env_text = contains_where(df["problem_statement"].fill_null(""), ENV_PATTERN, ENV_NEEDLES, env_rows)
    else:
        env_text = None
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
        .when(pl.col("relevance") < config.min_relevance).then(pl.lit("low_relevance"))
        .when(pl.col("bot_only")).then(pl.lit("bot_only"))
        .when(pl.col("comments") == 0).then(pl.lit("no_replies"))
        .when(labels.str.contains(FEATURE_LABEL_PATTERN) | (
            pl.col("error_type").is_in(FEATURE_TYPES) & ~quantified & text.str.contains(FEATURE_PATTERN)))
        .then(pl.lit("feature_request"))
        .when(labels.str.contains(ENV_LABEL_PATTERN) | (
            pl.col("error_type").is_in(ENV_TYPES) & ~quantified
            & (pl.lit(env_text) if env_text is not None else text.str.contains(ENV_PATTERN))))
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


#: Literals one of which every version mention holds (ASCII case-insensitively): the framework names and
#: the wheel tag; plus the non-ASCII letters a case-insensitive pattern matches as ASCII ones.
VERSION_NEEDLES = tuple(sorted(ALIASES)) + ("+cu", "\u0130", "\u0131", "\u212a", "\u017f")


def record_versions_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """:func:`versions_frame` of :func:`version_text_expr`, scanning field by field (no joined copy of the text)
    and only the cells that hold a framework name (:data:`VERSION_NEEDLES`).

    Same result: a version mention never spans two fields (separators and versions hold no newline).
    """
    fields = [_text(f) for f in TEXT_FIELDS] + [pl.col("hypotheses").list.join("\n").fill_null("")]
    lf = frame.lazy().select([e.alias(f"f{i}") for i, e in enumerate(fields)]).with_row_index("row")
    pieces = [lf.filter(pl.col(f"f{i}").str.contains_any(list(VERSION_NEEDLES), ascii_case_insensitive=True))
              .select("row", pl.lit(i, dtype=pl.UInt8).alias("field"),
                      pl.col(f"f{i}").str.extract_all(VERSION_PATTERN).alias("m"))
              for i in range(len(fields))]
    matches = (pl.concat(pieces).sort(["row", "field"], maintain_order=True).explode("m").drop_nulls("m")
               .select("row", "m").collect())
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
    for row, key, ver in zip(long["row"].to_list(), long["key"].to_list(), long["version"].to_list(), strict=True):
        out[row][key] = ver
    return out


def redact_frame(df: pl.DataFrame) -> tuple[pl.DataFrame, Counter[str]]:
    """Redact :data:`REDACT_COLUMNS` (and participant logins in them); returns the frame and counts per kind.

    See :mod:`scoring.frame_redact`.
    """
    return frame_redact.redact_frame(df, REDACT_COLUMNS)


def dedup_text_expr() -> pl.Expr:
    """Text compared for near-duplicates: the problem statement plus the symptom's metric and values, so that
    two templated threads with different numbers stay apart and cross-posts match."""
    return pl.concat_str([
        _text("problem_statement"), pl.lit("\n"), _text("metric"), pl.lit(" "),
        pl.col("paper_value").cast(pl.String).fill_null(""), pl.lit(" "),
        pl.col("obtained_value").cast(pl.String).fill_null(""),
    ])
