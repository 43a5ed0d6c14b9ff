"""Vectorized scoring over a flat polars table: the path for millions of records.

It applies the same rules as the per-record path — the constants and regexes
of :mod:`scoring.quality`, :mod:`scoring.temporal` and :mod:`reprodiag.redact`
are the single source of truth — and gives identical results
(``tests/scoring/test_vectorized.py`` checks this on a sample):

* quality components, score, drop reason and keep (:func:`score_frame`);
* temporal tier, weight and detected versions (:func:`versions_frame`);
* redaction (:func:`redact_frame`): the pure regex rules run as polars
  ``str.replace_all``; rows where a checked rule or a user name could apply
  (found with vectorized ``str.contains`` per cell and rule) then go through
  the shared Python functions of :mod:`reprodiag.redact`, usually a small share.

Flat table columns (:data:`FRAME_SCHEMA`): one row per record; ``labels`` is
the labels joined by newlines; ``participants`` a list of ``{login, role}``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import polars as pl

from reprodiag.redact import CHECKED_RULES, PURE_RULES, People, Rule, apply_checked_rule, redact_people
from reprodiag.schema import Record
from scoring.config import ScoreConfig
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
        })
    return pl.DataFrame(rows, schema=FRAME_SCHEMA)


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
    if matches.height == 0:
        return pl.DataFrame(schema={"row": pl.UInt32, "key": pl.String, "version": pl.String})
    g = matches.with_columns(pl.col("m").str.extract_groups(VERSION_PATTERN).alias("g")).unnest("g")
    tag = pl.col("7")
    long = g.select(
        "row",
        key=pl.coalesce(pl.col("1"), pl.col("3"), pl.col("5")).str.to_lowercase()
        .replace_strict(ALIASES, default=None, return_dtype=pl.String).fill_null(pl.lit(CUDA_TAG_KEY)),
        version=pl.coalesce(pl.col("2"), pl.col("4"), pl.col("6"),
                            pl.concat_str([tag.str.slice(0, tag.str.len_chars() - 1), pl.lit("."),
                                           tag.str.slice(-1)])),
    )
    first = long.group_by(["row", "key"], maintain_order=True).agg(pl.col("version").first())
    has_cuda = first.filter(pl.col("key") == "cuda").select("row").with_columns(has_cuda=pl.lit(True))
    first = (first.join(has_cuda, on="row", how="left", maintain_order="left")
             .filter(~((pl.col("key") == CUDA_TAG_KEY) & pl.col("has_cuda").fill_null(False)))
             .with_columns(key=pl.col("key").replace(CUDA_TAG_KEY, "cuda"))
             .drop("has_cuda"))
    return first.sort(["row", "key"])


def versions_as_dicts(long: pl.DataFrame, n: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = [{} for _ in range(n)]
    for row, key, ver in long.iter_rows():
        out[row][key] = ver
    return out


def _checked(text: str | None, rules: list[Rule], people: People | None, counts: Counter[str]) -> str | None:
    """:func:`reprodiag.redact.redact_checked` restricted to the rules that can match."""
    if not text:
        return text
    for rule in rules:
        text = apply_checked_rule(rule, text, counts)
    if people is not None:
        text = redact_people(text, people, counts)
    return text


def redact_frame(df: pl.DataFrame) -> tuple[pl.DataFrame, Counter[str]]:
    """Redact :data:`REDACT_COLUMNS` (and participant logins); returns the frame and counts per kind."""
    counts: Counter[str] = Counter()
    cols = [c for c in REDACT_COLUMNS if c in df.columns]
    out = df
    for rule in PURE_RULES:
        exprs: dict[str, pl.Expr] = {}
        stats: list[pl.Expr] = []
        for c in cols:
            if out.schema[c] == pl.List(pl.String):
                stats.append(pl.col(c).list.eval(pl.element().str.count_matches(rule.pattern)).list.sum().sum()
                             .alias(c))
                exprs[c] = pl.col(c).list.eval(pl.element().str.replace_all(rule.pattern, rule.replacement))
            else:
                stats.append(pl.col(c).str.count_matches(rule.pattern).sum().alias(c))
                exprs[c] = pl.col(c).str.replace_all(rule.pattern, rule.replacement)
        hits = sum(int(v or 0) for v in out.select(stats).row(0))
        if hits:
            counts[rule.kind] += hits
            out = out.with_columns(**exprs)

    # Checked rules and user names: flag (row, column, rule) cells vectorized, then run the shared
    # Python functions on flagged rows only (a rule whose regex does not match is a no-op there).
    is_list = {c: out.schema[c] == pl.List(pl.String) for c in cols}

    def flat(c: str) -> pl.Expr:
        return (pl.col(c).list.join("\n") if is_list[c] else pl.col(c)).fill_null("")

    flag_exprs = [flat(c).str.contains(rule.pattern).alias(f"{c}|{k}")
                  for c in cols for k, rule in enumerate(CHECKED_RULES)]
    joined = pl.concat_str([flat(c) for c in cols], separator="\n")
    flags = out.select(*flag_exprs, people=joined.str.contains("@", literal=True),
                       low=joined.str.to_lowercase()).with_row_index("row")
    if "participants" in out.columns:
        logins = (out.select(pl.col("participants")).with_row_index("row").explode("participants")
                  .drop_nulls("participants")
                  .select("row", pl.col("participants").struct.field("login").str.to_lowercase().alias("login"))
                  .filter(pl.col("login").str.len_chars() >= 3)
                  .join(flags.select("row", "low"), on="row")
                  .filter(pl.col("low").str.contains(pl.col("login"), literal=True))
                  .select("row").unique())
        flags = flags.with_columns(pl.col("people") | pl.col("row").is_in(logins["row"].implode()))
    flags = flags.drop("low").filter(pl.any_horizontal(pl.exclude("row")))
    if flags.height:
        rows = flags["row"].to_list()
        sub = out[rows]
        parts = sub["participants"].to_list() if "participants" in out.columns else [None] * len(rows)
        col_values = {c: sub[c].to_list() for c in cols}
        flag_rows = flags.drop("row").rows()
        names = flags.drop("row").columns
        pos = {name: i for i, name in enumerate(names)}
        rule_pos = [[pos[f"{c}|{k}"] for k in range(len(CHECKED_RULES))] for c in cols]
        people_pos = pos["people"]
        for i, plist in enumerate(parts):
            f = flag_rows[i]
            people = None
            if f[people_pos]:
                ordered = sorted(plist or [], key=lambda p: p["role"] != "asker")
                people = People((p["login"], p["role"]) for p in ordered if p.get("login"))
            for ci, c in enumerate(cols):
                rules = [CHECKED_RULES[k] for k in range(len(CHECKED_RULES)) if f[rule_pos[ci][k]]]
                if not rules and people is None:
                    continue
                v = col_values[c][i]
                if is_list[c]:
                    col_values[c][i] = None if v is None else [_checked(x, rules, people, counts) for x in v]
                else:
                    col_values[c][i] = _checked(v, rules, people, counts)
        patch = pl.DataFrame({"row": pl.Series("row", rows, dtype=pl.UInt32),
                              **{c: pl.Series(c, col_values[c], dtype=out.schema[c]) for c in cols}})
        out = (out.with_row_index("row").join(patch, on="row", how="left", suffix="__new", maintain_order="left")
               .with_columns([pl.when(pl.col("row").is_in(patch["row"].implode())).then(pl.col(f"{c}__new"))
                              .otherwise(pl.col(c)).alias(c) for c in cols])
               .drop(["row", *[f"{c}__new" for c in cols]]))
    return out, counts
