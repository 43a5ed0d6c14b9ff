"""``reprodiag score``: quality score, temporal tags, dedup, splits and redaction of records.

:func:`score_batch` is the pure batch function (records in, scored records
out); :func:`run_score` is the thin I/O edge (workspace or JSONL/Parquet files).

Order inside a batch: temporal tag and quality on the raw text (version
strings must be read before redaction) → near-duplicate removal among the
records still kept (best quality first, then oldest, then thread id, wins) →
repository-level splits of the kept records (dropped records get no split) →
full redaction of every record (:func:`reprodiag.redact.redact_record`).
Every record comes out (kept or dropped with ``quality.drop_reason``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from reprodiag.errors import UserError
from reprodiag.exporting import read_parquet_docs
from reprodiag.redact import RedactionCounts, redact_record_doc
from reprodiag.schema import Record, SchemaError, StageReport, parse_record
from reprodiag.store import Store
from scoring.config import ScoreConfig
from scoring.quality import DROP_ORDER, quality
from scoring.splits import SPLITS, assign_splits
from scoring.temporal import temporal_tag
from scoring.vectorized import created_key, dedup_frame

MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Reject:
    """An input item that could not be scored. ``line``: 1-based input line (None in workspace mode)."""

    line: int | None
    thread_id: str | None
    reason: str


@dataclass(frozen=True)
class ScoreResult:
    records: tuple[Record, ...]
    report: StageReport
    redaction: RedactionCounts


def _dedup_columns(records: list[Record]) -> pl.DataFrame:
    return pl.DataFrame({
        "thread_id": [r.thread_id for r in records], "keep": [r.quality.keep for r in records],
        "score": [r.quality.score for r in records], "created_at": [created_key(r) for r in records],
        "problem_statement": [r.problem_statement for r in records],
        "metric": [r.symptom.metric for r in records], "paper_value": [r.symptom.paper_value for r in records],
        "obtained_value": [r.symptom.obtained_value for r in records],
    }, schema={"thread_id": pl.String, "keep": pl.Boolean, "score": pl.Int64, "created_at": pl.String,
               "problem_statement": pl.String, "metric": pl.String, "paper_value": pl.Float64,
               "obtained_value": pl.Float64})


def score_batch(records: list[Record], config: ScoreConfig) -> ScoreResult:
    """Score, tag, dedupe, split and redact ``records`` (see module docstring)."""
    scored: list[Record] = []
    for r in records:
        tag = temporal_tag(r, config.tier_weights)
        scored.append(r.model_copy(update={"temporal_tag": tag, "quality": quality(r, tag.tier, config),
                                           "duplicate_of": None, "split": None}))

    clusters = 0
    dedup_notes: list[str] = []
    if config.dedup:
        result = dedup_frame(_dedup_columns(scored), config)
        clusters = result.clusters
        members: dict[str, list[str]] = {}
        for i, keep_i in enumerate(result.duplicate_of.tolist()):
            if keep_i < 0:
                continue
            winner = scored[keep_i].thread_id
            q = scored[i].quality.model_copy(update={"keep": False, "drop_reason": "near_duplicate"})
            scored[i] = scored[i].model_copy(update={"quality": q, "duplicate_of": winner})
            members.setdefault(winner, []).append(scored[i].thread_id)
        for winner, dups in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:5]:
            dedup_notes.append(f"duplicate cluster: kept {winner}, dropped {', '.join(sorted(dups)[:5])}"
                               + (f" (+{len(dups) - 5} more)" if len(dups) > 5 else ""))

    kept_pos = [i for i, r in enumerate(scored) if r.quality.keep]
    split_records = assign_splits([scored[i] for i in kept_pos], config.seed, config.ratios,
                                  config.holdout_repos, config.split_date)
    for i, r in zip(kept_pos, split_records, strict=True):
        scored[i] = r

    counts: Counter[str] = Counter()
    out: list[Record] = []
    for r in scored:
        out.append(parse_record(redact_record_doc(r.model_dump(mode="json"), counts)))
    redaction = RedactionCounts.of(counts)
    report = _report(out, clusters, redaction, config)
    report.notes.extend(dedup_notes)
    return ScoreResult(tuple(out), report, redaction)


def _is_resolved(r: Record) -> bool:
    return r.resolution_type == "resolved" or r.is_resolved


def _report(records: list[Record], clusters: int, redaction: RedactionCounts, config: ScoreConfig) -> StageReport:
    c: Counter[str] = Counter()
    c["records"] = len(records)
    for r in records:
        c[f"tier_{r.temporal_tag.tier}"] += 1
        if r.quality.keep:
            c["kept"] += 1
            c["kept_resolved" if _is_resolved(r) else "kept_unresolved"] += 1
            c[f"split_{r.split}"] += 1
        else:
            c["dropped"] += 1
            c[f"dropped_{r.quality.drop_reason}"] += 1
    c["duplicate_clusters"] = clusters
    counts = {k: c[k] for k in ("records", "kept", "dropped")}
    counts.update({f"dropped_{k}": c[f"dropped_{k}"] for k in DROP_ORDER if c[f"dropped_{k}"]})
    counts.update({k: c[k] for k in ("tier_current", "tier_historical", "tier_filtered", "kept_resolved",
                                      "kept_unresolved", "duplicate_clusters")})
    counts.update({f"split_{s}": c[f"split_{s}"] for s in SPLITS})
    counts["redacted"] = redaction.total
    counts.update({f"redacted_{k.lower()}": v for k, v in redaction.by_kind.items()})
    notes = []
    kept = c["kept"]
    if kept:
        share = c["kept_resolved"] / kept
        target = config.target_resolved_share
        notes.append(f"resolved/unresolved mix of kept records: {share:.0%}/{1 - share:.0%} "
                     f"(target {target:.0%}/{1 - target:.0%}; "
                     + ("on target" if abs(share - target) <= 0.1 else
                        "more unresolved than targeted" if share < target else "fewer unresolved than targeted")
                     + ")")
    weight = sum(r.temporal_tag.weight for r in records if r.quality.keep)
    notes.append(f"training weight of kept records: {weight:.1f}")
    return StageReport(stage="score", counts=counts, notes=notes)


# --------------------------------------------------------------------------- I/O edge


def _read_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise UserError(f"cannot read --input {path}: {exc.strerror or exc}") from None
    with fh:
        try:
            yield from enumerate(fh, start=1)
        except OSError as exc:
            raise UserError(f"cannot read --input {path}: {exc.strerror or exc}") from None


def _parse_doc(doc: Any, line: int | None) -> Record | Reject:
    tid = doc.get("thread_id") if isinstance(doc, dict) and isinstance(doc.get("thread_id"), str) else None
    try:
        return parse_record(doc)
    except SchemaError as exc:
        return Reject(line, tid, str(exc))
    except (ValueError, TypeError, RecursionError) as exc:  # pragma: no cover - defensive
        return Reject(line, tid, f"invalid record: {type(exc).__name__}")


def read_records_file(path: Path) -> tuple[list[Record], list[Reject]]:
    """Records of a JSONL (or ``.parquet``) file; bad lines become :class:`Reject`s, never exceptions."""
    if path.is_dir():
        raise UserError(f"--input {path} is a directory, expected a records JSONL file")
    items: list[tuple[int | None, Record | Reject]] = []
    if path.suffix == ".parquet":
        if not path.exists():
            raise UserError(f"cannot read --input {path}: no such file")
        rows = read_parquet_docs(path)
        items = [(n, _parse_doc(d, n)) for n, d in enumerate(rows, start=1)]
    else:
        for n, raw in _read_lines(path):
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE_BYTES:
                items.append((n, Reject(n, None, f"line longer than {MAX_LINE_BYTES} bytes")))
                continue
            try:
                doc = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                items.append((n, Reject(n, None, "line is not valid UTF-8")))
                continue
            except (json.JSONDecodeError, RecursionError) as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
                items.append((n, Reject(n, None, f"malformed JSON: {msg}")))
                continue
            items.append((n, _parse_doc(doc, n)))
    return _dedupe_ids(items)


def _dedupe_ids(items: Iterable[tuple[int | None, Record | Reject]]) -> tuple[list[Record], list[Reject]]:
    records: list[Record] = []
    rejects: list[Reject] = []
    seen: set[str] = set()
    for n, it in items:
        if isinstance(it, Reject):
            rejects.append(it)
        elif it.thread_id in seen:
            rejects.append(Reject(n, it.thread_id, "duplicate thread_id (first occurrence kept)"))
        else:
            seen.add(it.thread_id)
            records.append(it)
    return records, rejects


def read_records_store(store: Store) -> tuple[list[Record], list[Reject]]:
    rows = store.query("SELECT thread_id, doc FROM records ORDER BY thread_id")
    items: list[tuple[int | None, Record | Reject]] = []
    for tid, doc in rows:
        try:
            obj = json.loads(doc)
        except (json.JSONDecodeError, RecursionError):
            items.append((None, Reject(None, tid, "malformed JSON in workspace records table")))
            continue
        item = _parse_doc(obj, None)
        items.append((None, Reject(None, tid, item.reason) if isinstance(item, Reject) else item))
    return _dedupe_ids(items)


def _write_jsonl(path: Path, docs: Iterable[dict[str, Any]], what: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for d in docs:
                fh.write(json.dumps(d, ensure_ascii=False, separators=(",", ":")) + "\n")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {what} {path}: {exc.strerror or exc}") from None


def parse_split_date(value: str | date | datetime | None) -> datetime | None:
    """``YYYY-MM-DD`` (or a date/datetime) → a UTC datetime at midnight; a bad value is a UserError."""
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip()
    try:
        if len(text) != 10:
            raise ValueError
        d = date.fromisoformat(text)
    except ValueError:
        raise UserError(f"--split-date must be a date YYYY-MM-DD, got {text[:40]!r}") from None
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _holdout(repos: Iterable[str]) -> frozenset[str]:
    out = set()
    for repo in repos:
        r = str(repo).strip()
        if r.count("/") != 1 or not all(r.split("/")) or any(c.isspace() for c in r):
            raise UserError(f"--holdout-repo must be owner/name, got {r[:80]!r}")
        out.add(r)
    return frozenset(out)


def run_score(store: Store | None, *, input: Path | None, output: Path | None, threshold: int = 4,
              rejects: Path | None = None, seed: int = 0, config: ScoreConfig | None = None,
              split_date: str | date | datetime | None = None,
              holdout_repos: Iterable[str] = ()) -> StageReport:
    """Score the workspace records (``store``) or ``input`` (JSONL/Parquet) into the store and/or ``output``.

    Workspace mode (``input`` is None) replaces the ``scored`` table and this
    stage's rejects in one transaction, so a killed run leaves the previous
    result and a rerun gives the same result. File mode (``input`` given) is
    pure: ``store`` is ignored, nothing is read from or written to it.
    ``output``: JSONL of every scored record (kept and dropped). ``rejects``:
    JSONL ``{line, thread_id, reason}``. ``split_date`` (``YYYY-MM-DD``,
    UTC): time-based split (train before, test from that day on);
    ``holdout_repos``: repositories whose records all go to test. Both are
    ignored when ``config`` is given.
    """
    if config is None:
        cut = parse_split_date(split_date)
        holdout = _holdout(holdout_repos)
        try:
            config = ScoreConfig(threshold=threshold, seed=seed, split_date=cut, holdout_repos=holdout)
        except ValueError as exc:
            raise UserError(f"invalid score settings: {' '.join(str(exc).split())[:200]}") from None
    if input is not None:
        store = None
    if input is None and store is None:
        raise UserError("score needs a workspace or --input FILE")
    run_id = store.start_run("score", {
        "threshold": config.threshold, "seed": config.seed,
        "split_date": config.split_date.date().isoformat() if config.split_date else None,
        "holdout_repos": sorted(config.holdout_repos)}) if store is not None else None
    try:
        records, bad = read_records_file(Path(input)) if input is not None else read_records_store(store)
        result = score_batch(records, config)
        if output is not None:
            _write_jsonl(Path(output), (r.model_dump(mode="json") for r in result.records), "--output")
        if rejects is not None:
            _write_jsonl(Path(rejects), ({"line": b.line, "thread_id": b.thread_id, "reason": b.reason}
                                         for b in bad), "--rejects")
        if store is not None:
            with store.transaction() as c:
                c.execute("DELETE FROM rejects WHERE stage='score'")
                store.put_rejects("score", [(b.thread_id or f"line:{b.line}", b.reason) for b in bad])
                store.put_scored(result.records, replace_all=True)
    except BaseException:
        if store is not None and run_id is not None:
            store.finish_run(run_id, {}, status="failed")
        raise
    report = result.report
    report.counts["rejects"] = len(bad)
    if output is not None:
        report.outputs["scored"] = str(output)
    if rejects is not None:
        report.outputs["rejects"] = str(rejects)
    if bad:
        report.notes.append(f"{len(bad)} input item(s) rejected" + (f"; see {rejects}" if rejects else ""))
    if store is not None and run_id is not None:
        store.finish_run(run_id, report.counts)
    return report
