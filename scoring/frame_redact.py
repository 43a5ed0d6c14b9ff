"""Redaction of a flat records table (:data:`scoring.vectorized.FRAME_SCHEMA`), vectorized with polars.

Same result as :func:`reprodiag.redact.redact_record` on the free-text
columns (:data:`scoring.vectorized.REDACT_COLUMNS`, visited in the order of
the per-record walk), and the same counts per kind:

1. pure regex rules (:data:`reprodiag.redact.PURE_RULES`): one combined
   ``str.contains`` finds the cells any rule can touch; only those cells go
   through the rules' ``str.replace_all``, rule by rule;
2. checked rules (:data:`reprodiag.redact.CHECKED_RULES`): the shared Python
   checks, run only on cells where a rule's regex matches (usually few);
3. user names, vectorized: ``@mentions`` by splitting cells on ``@`` (the
   context around each ``@`` decides, as the per-record regex does), with
   placeholders from a join on the row's participants and ``user_<n>``
   numbered by first appearance; bare participant logins by splitting cells
   on the login (whole-word check at each boundary). Rows whose participants
   fall outside the vectorized case (a placeholder or non-login characters
   as login, an unknown role) run the per-record Python function instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import polars as pl

from reprodiag.redact import (
    BARE_AFTER_BLOCK,
    BARE_BEFORE_BLOCK,
    CHECKED_RULES,
    COMMON_WORDS,
    DECORATORS,
    LOGIN_PATTERN,
    MENTION_BEFORE_BLOCK,
    MENTION_WORD_PATTERN,
    PLACEHOLDER_PATTERN,
    PURE_RULES,
    People,
    Rule,
    apply_checked_rule,
    redact_people,
)
from scoring.quality import CASE_FOLDS

ROLES4 = ("asker", "maintainer", "contributor", "bot")
#: Logins the vectorized path handles; rows with another participant login run the Python path.
SIMPLE_LOGIN_PATTERN = r"^[A-Za-z0-9_\-]+(?:\[bot\])?$"
_WORD = r"[A-Za-z0-9_]"


def _class_of(chars: frozenset[str]) -> str:
    return "[" + "".join("\\" + c if c in r"\-[]^" else c for c in sorted(chars)) + "]"


_MENTION_BEFORE_CLASS = _class_of(MENTION_BEFORE_BLOCK)
_BEFORE_BLOCK_CLASS = _class_of(BARE_BEFORE_BLOCK)
_AFTER_BLOCK_CLASS = _class_of(BARE_AFTER_BLOCK)


class _Cells:
    """The redacted text columns while they are being rewritten.

    String columns are held as a Series (index = row); the list column as its
    exploded elements with their row and position, rebuilt at the end for the
    rows that changed.
    """

    def __init__(self, df: pl.DataFrame, cols: Sequence[str]) -> None:
        self.df = df
        self.cols = list(cols)
        self.values: dict[str, pl.Series] = {}
        self.rows: dict[str, np.ndarray] = {}
        self.changed_rows: dict[str, list[np.ndarray]] = {}
        for c in self.cols:
            if df.schema[c] == pl.List(pl.String):
                ex = df.select(pl.col(c).alias("v")).with_row_index("row").explode("v")
                self.values[c] = ex["v"]
                self.rows[c] = ex["row"].to_numpy()
                self.changed_rows[c] = []
            else:
                self.values[c] = df[c]

    def is_list(self, c: str) -> bool:
        return c in self.rows

    def row_of(self, c: str, idx: np.ndarray) -> np.ndarray:
        return self.rows[c][idx] if self.is_list(c) else idx

    def update(self, c: str, idx: np.ndarray, new: pl.Series) -> None:
        if len(idx) == 0:
            return
        self.values[c] = self.values[c].scatter(idx, new)
        if self.is_list(c):
            self.changed_rows[c].append(self.rows[c][idx])

    def frame(self) -> pl.DataFrame:
        out = self.df.with_columns([self.values[c].alias(c) for c in self.cols if not self.is_list(c)])
        for c in self.cols:
            if not self.is_list(c) or not self.changed_rows[c]:
                continue
            changed = np.unique(np.concatenate(self.changed_rows[c]))
            el = pl.DataFrame({"row": self.rows[c], "v": self.values[c]}).filter(
                pl.col("row").is_in(pl.Series(changed, dtype=pl.UInt32).implode()))
            new = el.group_by("row", maintain_order=True).agg(pl.col("v").alias("__new"))
            out = (out.with_row_index("__row")
                   .join(new, left_on="__row", right_on="row", how="left", maintain_order="left")
                   .with_columns(pl.when(pl.col("__row").is_in(new["row"].implode())).then(pl.col("__new"))
                                 .otherwise(pl.col(c)).alias(c))
                   .drop("__row", "__new"))
        return out


def _matching(values: pl.Series, pattern: str, literal: bool = False) -> np.ndarray:
    return values.str.contains(pattern, literal=literal).fill_null(False).arg_true().to_numpy()


#: A cell holding a letter that ``(?i)`` folds to ASCII is a candidate of every ``(?i)`` rule whatever its needles.
_FOLDS = CASE_FOLDS


def _candidates(values: pl.Series, rule: Rule) -> np.ndarray:
    """Positions of the cells ``rule`` may match: a cheap necessary test (needles, prefilter), never the
    full pattern over every cell."""
    if rule.needles:
        needles = list(rule.needles) + (list(_FOLDS) if "(?i)" in rule.pattern else [])
        hit = values.str.contains_any(needles, ascii_case_insensitive=True)
    else:
        hit = values.str.contains(rule.prefilter or rule.pattern)
    return hit.fill_null(False).arg_true().to_numpy()


def _apply_pure(cells: _Cells, counts: Counter[str]) -> None:
    for c in cells.cols:
        for rule in PURE_RULES:  # in order: a rule sees the text the rules before it left
            idx = _candidates(cells.values[c], rule)
            if not len(idx):
                continue
            sub = cells.values[c].gather(idx)
            n = sub.str.count_matches(rule.pattern).fill_null(0).to_numpy()
            if not n.any():
                continue
            counts[rule.kind] += int(n.sum())
            hit = np.flatnonzero(n)
            cells.update(c, idx[hit], sub.gather(hit).str.replace_all(rule.pattern, rule.replacement))


def _apply_checked(cells: _Cells, counts: Counter[str]) -> None:
    for c in cells.cols:
        for rule in CHECKED_RULES:  # in order; each rule only on the cells its regex matches
            idx = _candidates(cells.values[c], rule)
            if not len(idx):
                continue
            sub = cells.values[c].gather(idx)
            pos = _matching(sub, rule.pattern)
            if len(pos):
                cells.update(c, idx[pos], _checked_distinct(rule, sub.gather(pos), counts))


def _checked_distinct(rule: Rule, values: pl.Series, counts: Counter[str]) -> pl.Series:
    """``apply_checked_rule`` on each distinct text once (texts repeat, e.g. environment strings)."""
    vc = values.rename("v").value_counts(name="n")
    olds: list[str] = vc["v"].to_list()
    news: list[str] = []
    for text, k in zip(olds, vc["n"].to_list(), strict=True):
        one: Counter[str] = Counter()
        news.append(apply_checked_rule(rule, text, one))
        for kind, v in one.items():
            counts[kind] += v * k
    return values.replace_strict(olds, news, return_dtype=pl.String)


def _run_positions(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ids in contiguous runs: (position inside the run, run length) per element."""
    n = len(ids)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    lengths = np.diff(np.r_[start, n])
    run = np.repeat(np.arange(len(start)), lengths)
    return np.arange(n) - start[run], lengths[run]


def _participants(df: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """(row, key, login, ph, bare) of the vectorizable rows, and the rows that need the Python path."""
    empty = pl.DataFrame(schema={"row": pl.UInt32, "key": pl.String, "login": pl.String, "ph": pl.String,
                                 "bare": pl.Boolean})
    if "participants" not in df.columns:
        return empty, np.zeros(0, dtype=np.int64)
    p = (df.select(pl.col("participants")).with_row_index("row").explode("participants")
         .drop_nulls("participants").unnest("participants")
         .filter(pl.col("login").is_not_null() & (pl.col("login") != "")))
    odd = p.filter(~pl.col("role").is_in(ROLES4).fill_null(False)
                   | ~pl.col("login").str.contains(SIMPLE_LOGIN_PATTERN)
                   | pl.col("login").str.contains(PLACEHOLDER_PATTERN))
    fallback = odd["row"].unique().sort().to_numpy()
    login = pl.col("login")
    p = (p.filter(~pl.col("row").is_in(odd["row"].unique().implode()))
         .sort(["row", pl.col("role") != "asker"], maintain_order=True)  # stable: the asker first
         .with_columns(key=login.str.to_lowercase())
         .filter(pl.struct("row", "key").is_first_distinct()))
    # n-th participant of its role in the row (People.add numbers roles in this order)
    p = p.with_row_index("seq").sort(["row", "role", "seq"])
    nth, _ = _run_positions(p.select(pl.struct("row", "role").rank("dense")).to_series().to_numpy())
    p = (p.with_columns(n=pl.Series(nth)).sort("seq")
         .with_columns(ph=pl.format("{}_{}", "role", "n"),
                       bare=(login.str.len_chars() >= 3) & ~login.str.contains("[", literal=True)
                       & (login.str.contains(r"[0-9_\-]")
                          | (login.str.contains("[A-Z]") & login.str.contains("[a-z]"))
                          | ((login.str.len_chars() >= 6)
                             & ~pl.col("key").is_in(pl.Series(sorted(COMMON_WORDS)).implode()))))
         .select("row", "key", "login", "ph", "bare"))
    return p, fallback


def _gather_cells(cells: _Cells, exclude_rows: pl.Series, needle: str) -> pl.DataFrame:
    """(row, ci, idx, text) of the cells that contain ``needle``, outside ``exclude_rows``."""
    parts = []
    for ci, c in enumerate(cells.cols):
        vals = cells.values[c]
        idx = _matching(vals, needle, literal=True)
        if not len(idx):
            continue
        parts.append(pl.DataFrame({
            "row": pl.Series(cells.row_of(c, idx), dtype=pl.UInt32),
            "ci": pl.Series(np.full(len(idx), ci), dtype=pl.UInt8),
            "idx": pl.Series(idx, dtype=pl.UInt32), "text": vals.gather(idx)}))
    if not parts:
        return pl.DataFrame(schema={"row": pl.UInt32, "ci": pl.UInt8, "idx": pl.UInt32, "text": pl.String})
    return pl.concat(parts).filter(~pl.col("row").is_in(exclude_rows.implode()))


def _write_back(cells: _Cells, done: pl.DataFrame) -> None:
    """``done``: (ci, idx, text) cells with their new text."""
    for ci, c in enumerate(cells.cols):
        part = done.filter(pl.col("ci") == ci)
        if part.height:
            cells.update(c, part["idx"].to_numpy(), part["text"])


def _mentions(cells: _Cells, parts: pl.DataFrame, fallback: pl.Series, counts: Counter[str]) -> None:
    cell = _gather_cells(cells, fallback, "@")
    if not cell.height:
        return
    cell = cell.sort(["row", "ci", "idx"]).with_row_index("cell")
    seg = cell.select("cell", "row", pl.col("text").str.split("@").alias("seg")).explode("seg")
    k, m = _run_positions(seg["cell"].to_numpy())
    seg = seg.with_columns(k=pl.Series(k), m=pl.Series(m))
    s = pl.col("seg")
    prev = s.shift(1)  # used only when k >= 1: the same cell
    prev_char = (pl.when(prev.str.len_bytes() > 0).then(prev.str.slice(-1))
                 .when(pl.col("k") >= 2).then(pl.lit("@")).otherwise(pl.lit("")))
    cand = s.str.extract("^(" + MENTION_WORD_PATTERN + ")", 1)
    seg = seg.with_columns(cand=pl.when(pl.col("k") >= 1).then(cand), prev_char=prev_char)
    rest = s.str.slice(pl.col("cand").str.len_chars())
    nxt = (pl.when(rest.str.len_bytes() > 0).then(rest.str.slice(0, 1))
           .when(pl.col("k") < pl.col("m") - 1).then(pl.lit("@")).otherwise(pl.lit("")))
    ok = (pl.col("cand").is_not_null()
          & ~pl.col("prev_char").str.contains("^" + _MENTION_BEFORE_CLASS + "$")
          & ~nxt.str.contains(r"^[A-Za-z0-9_(/\-]$")
          & ~((nxt == ".") & rest.str.slice(1, 1).str.contains("^" + _WORD + "$")))
    seg = seg.with_columns(ok=ok.fill_null(False), key=pl.col("cand").str.to_lowercase(),
                           valid=pl.col("cand").str.contains(LOGIN_PATTERN).fill_null(False))
    hits = (seg.filter("ok").select("cell", "row", "k", "key", "valid")
            .join(parts.select("row", "key", "ph"), on=["row", "key"], how="left", maintain_order="left")
            # a participant's recorded login counts even when it is not a valid GitHub login (anonymised data)
            .filter(pl.col("valid") | pl.col("ph").is_not_null())
            .filter(pl.col("ph").is_not_null() | ~pl.col("key").is_in(pl.Series(sorted(DECORATORS)).implode())))
    if not hits.height:
        return
    order = pl.col("cell").cast(pl.Int64) * (1 << 32) + pl.col("k")  # reading order: cell, then position
    unknown = (hits.filter(pl.col("ph").is_null()).group_by(["row", "key"], maintain_order=True)
               .agg(first=order.min())
               .with_columns(uph=pl.format("user_{}", pl.col("first").rank("ordinal").over("row") - 1))
               .select("row", "key", "uph"))
    hits = (hits.join(unknown, on=["row", "key"], how="left", maintain_order="left")
            .select("cell", "k", ph=pl.coalesce("ph", "uph")))
    counts["USER"] += hits.height
    new = (seg.join(hits, on=["cell", "k"], how="left", maintain_order="left")
           .with_columns(seg=pl.when(pl.col("ph").is_not_null())
                         .then(pl.concat_str([pl.col("ph"), s.str.slice(pl.col("cand").str.len_chars())]))
                         .otherwise(s))
           .group_by("cell", maintain_order=True).agg(pl.col("seg").str.join("@").alias("new")))
    changed = cell.filter(pl.col("cell").is_in(hits["cell"].unique().implode()))
    done = changed.join(new, on="cell", how="left", maintain_order="left").select("ci", "idx", text="new")
    _write_back(cells, done)


def _bare(cells: _Cells, parts: pl.DataFrame, counts: Counter[str]) -> None:
    logins = parts.filter("bare").select("row", "login", "ph")
    if not logins.height:
        return
    pairs_all = []
    for ci, c in enumerate(cells.cols):
        vals = cells.values[c]
        if cells.is_list(c):
            el = pl.DataFrame({"row": cells.rows[c], "idx": np.arange(len(vals), dtype=np.uint32), "text": vals})
            cand = el.join(logins, on="row", how="inner")
        else:
            cand = logins.with_columns(idx=pl.col("row"), text=vals.gather(logins["row"]))
        hit = cand.filter(pl.col("text").str.contains(pl.col("login"), literal=True).fill_null(False))
        if hit.height:
            pairs_all.append(hit.select("row", pl.lit(ci, dtype=pl.UInt8).alias("ci"),
                                        pl.col("idx").cast(pl.UInt32), "login", "ph"))
    if not pairs_all:
        return
    pairs = pl.concat(pairs_all).sort(["ci", "idx"], maintain_order=True)
    pairs = pairs.with_columns(r=pl.Series(_run_positions(
        pairs.select(pl.struct("ci", "idx").rank("dense")).to_series().to_numpy())[0]))
    for rnd in range(int(pairs["r"].max()) + 1):  # one login per cell per round (matches never overlap)
        todo = pairs.filter(pl.col("r") == rnd)
        chunks = []
        for ci, c in enumerate(cells.cols):
            part = todo.filter(pl.col("ci") == ci)
            if part.height:
                chunks.append(part.with_columns(text=cells.values[c].gather(part["idx"])))
        texts = pl.concat(chunks).with_row_index("cell")
        login = pl.col("login")
        seg = texts.select("cell", "login", "ph", pl.col("text").str.split(login).alias("seg")).explode("seg")
        j, m = _run_positions(seg["cell"].to_numpy())
        seg = seg.with_columns(j=pl.Series(j), m=pl.Series(m))
        s = pl.col("seg")
        nxt = s.shift(-1)  # used only when j < m - 1: the same cell
        before = (pl.when(s.str.len_bytes() > 0).then(s.str.slice(-1))
                  .when(pl.col("j") > 0).then(login.str.slice(-1)).otherwise(pl.lit("")))
        after = (pl.when(nxt.str.len_bytes() > 0).then(nxt.str.slice(0, 1))
                 .when(pl.col("j") + 1 < pl.col("m") - 1).then(login.str.slice(0, 1)).otherwise(pl.lit("")))
        after2 = (pl.when(nxt.str.len_chars() >= 2).then(nxt.str.slice(1, 1))
                  .when(pl.col("j") + 1 < pl.col("m") - 1).then(login.str.slice(0, 1)).otherwise(pl.lit("")))
        valid = ((pl.col("j") < pl.col("m") - 1)
                 & ~before.str.contains("^" + _BEFORE_BLOCK_CLASS + "$")
                 & ~after.str.contains("^" + _AFTER_BLOCK_CLASS + "$")
                 & ~((after == "/") & after2.str.contains("^[A-Za-z0-9]$")))
        seg = seg.with_columns(valid=valid.fill_null(False))
        n = int(seg["valid"].sum())
        if not n:
            continue
        counts["USER"] += n
        new = (seg.with_columns(piece=pl.concat_str([
            s, pl.when(pl.col("valid")).then(pl.col("ph"))
            .when(pl.col("j") < pl.col("m") - 1).then(login).otherwise(pl.lit(""))]))
            .group_by("cell", maintain_order=True).agg(pl.col("piece").str.join("").alias("new"),
                                                       pl.col("valid").any().alias("any")))
        done = (texts.join(new, on="cell", how="left", maintain_order="left").filter("any")
                .select("ci", "idx", text="new"))
        _write_back(cells, done)


def _python_people(cells: _Cells, df: pl.DataFrame, rows: np.ndarray, counts: Counter[str]) -> None:
    """The per-record function on rows the vectorized user-name pass does not cover."""
    if not len(rows):
        return
    parts = df["participants"].gather(rows).to_list()
    peoples = {}
    for r, plist in zip(rows.tolist(), parts, strict=True):
        ordered = sorted(plist or [], key=lambda p: p["role"] != "asker")
        peoples[r] = People((p["login"], p["role"]) for p in ordered if p.get("login"))
    wanted = pl.Series(rows, dtype=pl.UInt32)
    jobs: list[tuple[int, int, str, np.ndarray]] = []  # (row, ci, col, positions)
    for ci, c in enumerate(cells.cols):
        if cells.is_list(c):
            pos = np.flatnonzero(np.isin(cells.rows[c], rows))
            for r in np.unique(cells.rows[c][pos]).tolist():
                jobs.append((r, ci, c, pos[cells.rows[c][pos] == r]))
        else:
            jobs.extend((int(r), ci, c, np.array([r])) for r in wanted.to_list())
    jobs.sort(key=lambda j: (j[0], j[1]))
    for r, _, c, pos in jobs:
        old = cells.values[c].gather(pos).to_list()
        new = [None if t is None else redact_people(t, peoples[r], counts) if t else t for t in old]
        if new != old:
            cells.update(c, pos, pl.Series(new, dtype=pl.String))


def redact_frame(df: pl.DataFrame, cols: Sequence[str]) -> tuple[pl.DataFrame, Counter[str]]:
    """Redact ``cols`` of ``df`` (and replace participant logins in them); returns the frame and counts per kind."""
    cols = [c for c in cols if c in df.columns]
    cells = _Cells(df, cols)
    counts = _redact(cells, df)
    return cells.frame(), counts


def redact_strings(texts: pl.Series, rows: np.ndarray, participants: pl.Series) -> tuple[pl.Series, Counter[str]]:
    """Redact many strings per row given flat: ``texts[k]`` belongs to row ``rows[k]`` (non-decreasing; a row's
    strings in reading order, which numbers unknown ``@mentions``); ``participants``: one list of
    ``{login, role}`` per row. Returns the redacted strings (same positions) and counts per kind."""
    df = pl.DataFrame({"participants": participants})
    cells = _Cells(df, ())
    cells.cols = ["texts"]
    cells.values["texts"] = texts.cast(pl.String)
    cells.rows["texts"] = np.asarray(rows)
    cells.changed_rows["texts"] = []
    counts = _redact(cells, df)
    return cells.values["texts"], counts


def _redact(cells: _Cells, df: pl.DataFrame) -> Counter[str]:
    counts: Counter[str] = Counter()
    _apply_pure(cells, counts)
    _apply_checked(cells, counts)
    parts, fallback = _participants(df)
    fb = pl.Series(fallback, dtype=pl.UInt32)
    _mentions(cells, parts, fb, counts)
    _bare(cells, parts, counts)
    _python_people(cells, df, fallback, counts)
    return counts
