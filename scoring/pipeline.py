"""``reprodiag score``: quality score, temporal tags, dedup, splits and redaction of records, streamed.

One implementation for files and the workspace, in two passes:

1. **Batches** of :data:`BATCH` input items are read, validated (a bad item
   becomes a :class:`Reject` with its reason; a repeated ``thread_id`` keeps its
   first occurrence) and handed to the pure batch function
   :func:`scoring.batch.score_records` (quality, temporal tag and versions on
   the raw text, redaction of every free-text string, MinHash signature of the
   kept records). Each finished batch is committed to the stage
   (:mod:`scoring.stage`), so a killed run resumes without scoring it again.
2. **The corpus-level pass** reads only the light columns of every row:
   near-duplicates among the kept records (best quality first, then oldest,
   then thread id, wins; signatures from any batch are compared), then
   repository-level splits of the records still kept (dropped records get
   no split). The result is streamed out: ``--output`` JSONL in input order,
   and/or the workspace's ``scored`` table replaced in one transaction.

Memory is bounded by one batch plus the light columns (about 0.4 KB per
record, the 64-entry signature included). Every record comes out (kept, or
dropped with ``quality.drop_reason``).
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from reprodiag.batching import batched
from reprodiag.errors import UserError
from reprodiag.gc_policy import batch_collection
from reprodiag.redact import RedactionCounts
from reprodiag.schema import Record, SchemaError, StageReport, parse_record
from reprodiag.schema_mirror import RECORD_TWIN, RecordLike
from reprodiag.store import Store
from scoring.batch import final_doc, score_records
from scoring.config import MIN_RELEVANCE, ScoreConfig
from scoring.dedup import cluster_signatures
from scoring.quality import DROP_ORDER
from scoring.splits import SPLITS, assign_repo_splits
from scoring.stage import BatchMeta, ScoreStage, batch_key, encode_batch

MAX_LINE_BYTES = 16 * 1024 * 1024
#: Records per batch (the unit of memory, of resumption and of a Ray block).
BATCH = 2_000
#: Bumped when the per-record rules change, so a stage left by an older version is not reused.
SCORE_VERSION = "3"
STAGE_NAME = "score-stage.sqlite"
_DUPLICATE_ID = "duplicate thread_id (first occurrence kept)"


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


@dataclass(frozen=True)
class _Item:
    """One input item: its line (file mode), its id when the source knows it, and its bytes (None: unreadable,
    with ``error`` saying why)."""

    line: int | None
    thread_id: str | None
    raw: bytes | None
    error: str | None = None


# --------------------------------------------------------------------------- sources


def _file_items(path: Path) -> Iterator[_Item]:
    if path.is_dir():
        raise UserError(f"--input {path} is a directory, expected a records JSONL file")
    if path.suffix == ".parquet":
        yield from _parquet_items(path)
        return
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise UserError(f"cannot read --input {path}: {exc.strerror or exc}") from None
    with fh:
        try:
            for n, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                if len(raw) > MAX_LINE_BYTES:
                    yield _Item(n, None, None, f"line longer than {MAX_LINE_BYTES} bytes")
                else:
                    yield _Item(n, None, raw.rstrip(b"\r\n"))
        except OSError as exc:
            raise UserError(f"cannot read --input {path}: {exc.strerror or exc}") from None


def _parquet_items(path: Path) -> Iterator[_Item]:
    import polars as pl

    from reprodiag.exporting import from_parquet_doc

    if not path.exists():
        raise UserError(f"cannot read --input {path}: no such file")
    try:
        lf = pl.scan_parquet(path)
        total = lf.select(pl.len()).collect().item()
    except Exception as exc:  # noqa: BLE001 - polars raises many types for a bad file
        raise UserError(f"cannot read {path} as Parquet: {type(exc).__name__}") from None
    n = 0
    for start in range(0, total, BATCH):
        for row in lf.slice(start, BATCH).collect().to_dicts():
            n += 1
            yield _Item(n, None, json.dumps(from_parquet_doc(row), ensure_ascii=False).encode())


def _store_items(store: Store, page: int = BATCH) -> Iterator[_Item]:
    """The workspace's records in thread-id order, read page by page (keyset), never all at once."""
    last = ""
    while True:
        rows = store.query("SELECT thread_id, doc FROM records WHERE thread_id > ? ORDER BY thread_id LIMIT ?",
                           (last, page))
        for tid, doc in rows:
            yield _Item(None, tid, doc.encode())
        if len(rows) < page:
            return
        last = rows[-1][0]


def _records_items(records: Iterable[Record]) -> Iterator[_Item]:
    for r in records:
        yield _Item(None, None, r.model_dump_json().encode())


# --------------------------------------------------------------------------- parsing


def _parse(it: _Item) -> tuple[RecordLike, dict[str, Any] | None] | Reject:
    """The item's record and, when at hand, its JSON document as ``model_dump(mode="json")`` gives it.

    The record contract's msgspec twin (:mod:`reprodiag.schema_mirror`) reads almost every item, ten times
    faster than the model; what it does not take is validated by the model (which names any problem)."""
    if it.raw is None:
        return Reject(it.line, it.thread_id, it.error or "unreadable")
    twin = RECORD_TWIN.decode(it.raw)
    if twin is not None:
        if RECORD_TWIN.encode(twin) == it.raw:  # already canonical: the parsed input is the document
            try:
                return twin, orjson.loads(it.raw)
            except orjson.JSONDecodeError:  # integers beyond 64 bits
                pass
        return twin, RECORD_TWIN.to_document(twin)
    # what the twin does not take (rare): the contract's parser decides, and names any problem
    try:
        doc = json.loads(it.raw.decode("utf-8"))
    except UnicodeDecodeError:
        return Reject(it.line, it.thread_id, "line is not valid UTF-8")
    except (json.JSONDecodeError, RecursionError) as exc:
        if it.line is None:
            return Reject(None, it.thread_id, "malformed JSON in workspace records table")
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        return Reject(it.line, it.thread_id, f"malformed JSON: {msg}")
    tid = doc.get("thread_id") if isinstance(doc, dict) and isinstance(doc.get("thread_id"), str) else None
    try:
        return parse_record(doc), None
    except SchemaError as exc:
        return Reject(it.line, it.thread_id or tid, str(exc))
    except (ValueError, TypeError, RecursionError) as exc:  # pragma: no cover - defensive
        return Reject(it.line, it.thread_id or tid, f"invalid record: {type(exc).__name__}")


def _settings_key(config: ScoreConfig) -> str:
    """What a batch's result depends on besides its input (not the corpus-level split settings)."""
    per_record = config.model_dump(mode="json", include={"threshold", "min_relevance", "valuable_min_depth",
                                                         "tier_weights", "num_perm", "seed", "dedup"})
    return f"{SCORE_VERSION}|{json.dumps(per_record, sort_keys=True)}"


@dataclass(frozen=True)
class _Accepted:
    """A batch's items parsed by the driver: what is to be scored, and what was rejected."""

    records: list[RecordLike]
    docs: list[dict[str, Any] | None]
    raws: list[bytes]
    rejects: list[Reject]
    before: list[str]
    ids: set[str]


def _accept(batch: Sequence[_Item], seen: set[str]) -> _Accepted:
    """Parse a batch; a bad item is rejected with its reason, a repeated id keeps its first occurrence."""
    out = _Accepted([], [], [], [], [], set())
    for it in batch:
        got = _parse(it)
        if isinstance(got, Reject):
            out.rejects.append(got)
            continue
        tid = got[0].thread_id
        if tid in seen or tid in out.ids:
            out.rejects.append(Reject(it.line, tid, _DUPLICATE_ID))
            if tid in seen:
                out.before.append(tid)
        else:
            out.ids.add(tid)
            out.records.append(got[0])
            out.docs.append(got[1])
            out.raws.append(it.raw)  # type: ignore[arg-type]
    return out


def score_raws(cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """``score``'s batch function on Ray: each row is one batch (``raws``: its accepted items, ``settings``:
    the ScoreConfig JSON); returns the stage's encoding of the scored batch (:func:`scoring.stage.encode_batch`)
    and its redaction counts. Parsing here repeats the driver's, so the result is the local one."""
    out: dict[str, list[Any]] = {"ordinal": [], "light": [], "docs": [], "redactions": []}
    for ordinal, raws, settings in zip(cols["ordinal"], cols["raws"], cols["settings"], strict=True):
        config = ScoreConfig.model_validate_json(settings)
        got = [_parse(_Item(None, None, raw)) for raw in raws]
        scored = score_records([g[0] for g in got], config, [g[1] for g in got])  # type: ignore[index]
        light, docs = encode_batch(scored)
        out["ordinal"].append(ordinal)
        out["light"].append(light)
        out["docs"].append(docs)
        out["redactions"].append(json.dumps(scored.redactions))
    return out


def _score_pass_ray(items: Iterable[_Item], stage: ScoreStage, config: ScoreConfig, batch_size: int,
                    address: str | None) -> tuple[list[Reject], Counter[str], int]:
    """:func:`_score_pass` with the batch function on Ray: the driver reads, parses and de-duplicates (as
    locally), exports the batches the stage does not hold, and commits each scored batch as it comes back."""
    import pyarrow as pa

    from reprodiag.ray_engine import map_rows

    skey = _settings_key(config)
    settings = config.model_dump_json()
    seen: set[str] = set()
    rejects: list[Reject] = []
    counts: Counter[str] = Counter()
    pending: dict[int, tuple[str, BatchMeta]] = {}
    reused = 0

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal reused
        for ordinal, batch in enumerate(batched(items, batch_size)):
            key = batch_key(skey, ordinal, [it.raw if it.raw is not None else (it.error or "").encode()
                                            for it in batch])
            meta = stage.reuse(key, ordinal, seen)
            if meta is not None:
                reused += 1
                rejects.extend(Reject(*r) for r in meta.rejects)
                counts.update(meta.redactions)
                continue
            acc = _accept(batch, seen)
            seen.update(acc.ids)
            rejects.extend(acc.rejects)
            pending[ordinal] = (key, BatchMeta(tuple((b.line, b.thread_id, b.reason) for b in acc.rejects),
                                               tuple(acc.before)))
            yield {"ordinal": ordinal, "raws": acc.raws, "settings": settings}

    columns = {"ordinal": pa.int64(), "raws": pa.large_list(pa.large_binary()), "settings": pa.large_string()}
    for block in map_rows(rows(), score_raws, columns=columns, batch_size=1, address=address, rows_per_file=8):
        for ordinal, light, docs, red in zip(block["ordinal"], block["light"], block["docs"], block["redactions"],
                                             strict=True):
            key, meta = pending.pop(ordinal)
            redactions = json.loads(red)
            stage.put_encoded(key, ordinal, light, docs,
                              BatchMeta(meta.rejects, meta.seen_before, redactions))
            counts.update(redactions)
    return rejects, counts, reused


def _score_pass(items: Iterable[_Item], stage: ScoreStage, config: ScoreConfig,
                batch_size: int) -> tuple[list[Reject], Counter[str], int]:
    """Pass 1 over ``items``; returns the rejects, redaction counts and how many batches were reused.

    (Scoring batch k in a thread while batch k+1 is parsed was tried: the batch function holds the GIL
    most of its time, and the overlap was slower than this loop.)"""
    skey = _settings_key(config)
    seen: set[str] = set()
    rejects: list[Reject] = []
    counts: Counter[str] = Counter()
    reused = 0
    with batch_collection() as collect:
        for ordinal, batch in enumerate(batched(items, batch_size)):
            reused += _one_batch(ordinal, batch, stage, skey, config, seen, rejects, counts)
            collect()
    return rejects, counts, reused


def _one_batch(ordinal: int, batch: Sequence[_Item], stage: ScoreStage, skey: str, config: ScoreConfig,
               seen: set[str], rejects: list[Reject], counts: Counter[str]) -> int:
    """Score (or reuse) one batch into the stage, adding its rejects and redaction counts; 1 when reused."""
    key = batch_key(skey, ordinal, [it.raw if it.raw is not None else (it.error or "").encode() for it in batch])
    meta = stage.reuse(key, ordinal, seen)
    if meta is not None:
        rejects.extend(Reject(*r) for r in meta.rejects)
        counts.update(meta.redactions)
        return 1
    acc = _accept(batch, seen)
    scored = score_records(acc.records, config, acc.docs)
    stage.put(key, ordinal, scored, BatchMeta(tuple((b.line, b.thread_id, b.reason) for b in acc.rejects),
                                              tuple(acc.before), scored.redactions))
    seen.update(acc.ids)
    rejects.extend(acc.rejects)
    counts.update(scored.redactions)
    return 0


# --------------------------------------------------------------------------- corpus-level pass


@dataclass(frozen=True)
class _Decisions:
    keep: np.ndarray
    drop_reason: list[str | None]
    duplicate_of: list[str | None]
    split: list[str | None]
    clusters: int
    notes: list[str]


def _decide(light: pl.DataFrame, config: ScoreConfig) -> _Decisions:
    n = light.height
    keep = light["keep"].to_numpy().copy()
    reason = light["drop_reason"].to_list()
    ids = light["thread_id"].to_list()
    dup_of: list[str | None] = [None] * n
    clusters = 0
    notes: list[str] = []
    if config.dedup and int(keep.sum()) >= 2:
        kept = (light.with_row_index("i").filter(pl.col("keep"))
                .sort(["score", "created", "thread_id"], descending=[True, False, False]))
        order = kept["i"].to_numpy().astype(np.int64)
        sig = np.frombuffer(b"".join(kept["signature"].to_list()), dtype="<u4").reshape(len(order), -1)
        result = cluster_signatures(sig.astype(np.uint32), kept["tokens"].to_numpy(),
                                    threshold=config.dedup_threshold)
        clusters = result.clusters
        members: dict[str, list[str]] = {}
        for j in np.flatnonzero(result.duplicate_of >= 0).tolist():
            i, w = int(order[j]), int(order[int(result.duplicate_of[j])])
            keep[i] = False
            reason[i] = "near_duplicate"
            dup_of[i] = ids[w]
            members.setdefault(ids[w], []).append(ids[i])
        for winner, dups in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:5]:
            notes.append(f"duplicate cluster: kept {winner}, dropped {', '.join(sorted(dups)[:5])}"
                         + (f" (+{len(dups) - 5} more)" if len(dups) > 5 else ""))
    split: list[str | None] = [None] * n
    kept_rows = np.flatnonzero(keep).tolist()
    repos = light["repo"].to_list()
    if config.split_date is not None:
        cut = config.split_date.timestamp()
        ts = light["created_ts"].to_list()
        for i in kept_rows:
            split[i] = ("train" if repos[i] not in config.holdout_repos and ts[i] is not None and ts[i] < cut
                        else "test")
    else:
        types = light["error_type"].to_list()
        mapping = assign_repo_splits(((repos[i], types[i]) for i in kept_rows), config.seed, config.ratios,
                                     config.holdout_repos)
        for i in kept_rows:
            split[i] = mapping[repos[i]]
    return _Decisions(keep, reason, dup_of, split, clusters, notes)


def _report(light: pl.DataFrame, d: _Decisions, redaction: RedactionCounts, config: ScoreConfig) -> StageReport:
    c: Counter[str] = Counter()
    c["records"] = light.height
    c.update(f"tier_{t}" for t in light["tier"].to_list())
    resolved = light["resolved"].to_list()
    for i in range(light.height):
        if d.keep[i]:
            c["kept"] += 1
            c["kept_resolved" if resolved[i] else "kept_unresolved"] += 1
            c[f"split_{d.split[i]}"] += 1
        else:
            c["dropped"] += 1
            c[f"dropped_{d.drop_reason[i]}"] += 1
    c["duplicate_clusters"] = d.clusters
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
    weights = light["weight"].to_numpy()
    weight = float(sum(w for w, k in zip(weights.tolist(), d.keep.tolist(), strict=True) if k))
    notes.append(f"training weight of kept records: {weight:.1f}")
    notes.extend(d.notes)
    return StageReport(stage="score", counts=counts, notes=notes)


def _final_rows(stage: ScoreStage, light: pl.DataFrame, d: _Decisions) -> Iterator[
        tuple[str, str, bool, str | None, str | None, str]]:
    """(thread_id, repo, keep, drop_reason, split, doc) of every record, in input order."""
    ids, repos = light["thread_id"].to_list(), light["repo"].to_list()
    for i, pieces in enumerate(stage.docs()):
        keep = bool(d.keep[i])
        yield (ids[i], repos[i], keep, d.drop_reason[i], d.split[i],
               final_doc(pieces, keep=keep, drop_reason=d.drop_reason[i], duplicate_of=d.duplicate_of[i],
                         split=d.split[i]))


@dataclass(frozen=True)
class _Scored:
    rejects: list[Reject]
    redaction: RedactionCounts
    light: pl.DataFrame
    decisions: _Decisions
    report: StageReport
    reused: int


def _score_into(items: Iterable[_Item], stage: ScoreStage, config: ScoreConfig,
                batch_size: int = BATCH, engine: str = "local", address: str | None = None) -> _Scored:
    bad, counts, reused = (_score_pass(items, stage, config, batch_size) if engine == "local"
                           else _score_pass_ray(items, stage, config, batch_size, address))
    light = stage.light()
    decisions = _decide(light, config)
    redaction = RedactionCounts.of(counts)
    return _Scored(bad, redaction, light, decisions, _report(light, decisions, redaction, config), reused)


def score_batch(records: Sequence[Record], config: ScoreConfig) -> ScoreResult:
    """Score an in-memory list of records (the same two passes, with the stage in memory)."""
    stage = ScoreStage(None, _settings_key(config))
    try:
        got = _score_into(_records_items(records), stage, config)
        out = tuple(Record.model_validate_json(doc) for *_, doc in _final_rows(stage, got.light, got.decisions))
    finally:
        stage.close()
    return ScoreResult(out, got.report, got.redaction)


# --------------------------------------------------------------------------- I/O edge


def _write_jsonl(path: Path, lines: Iterable[str], what: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
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


def _stage_path(store: Store | None, output: Path | None) -> Path | None:
    if store is not None:
        return store.root / STAGE_NAME
    if output is not None:
        return Path(output).with_name(f".{Path(output).name}.{STAGE_NAME}")
    return None


def run_score(store: Store | None, *, input: Path | None, output: Path | None, threshold: int = 4,
              min_relevance: float = MIN_RELEVANCE, rejects: Path | None = None, seed: int = 0, config: ScoreConfig | None = None,
              split_date: str | date | datetime | None = None,
              holdout_repos: Iterable[str] = (), batch_size: int = BATCH, engine: str = "local",
              ray_address: str | None = None) -> StageReport:
    """Score the workspace records (``store``) or ``input`` (JSONL/Parquet) into the store and/or ``output``.

    Workspace mode (``input`` is None) replaces the ``scored`` table and this
    stage's rejects in one transaction, so a killed run leaves the previous
    result, and the rerun reuses the batches the killed run finished. File
    mode (``input`` given) does not touch the workspace; its stage file sits
    beside ``output`` (in a temporary directory without one). ``output``:
    JSONL of every scored record (kept and dropped), in input order.
    ``rejects``: JSONL ``{line, thread_id, reason}``. ``split_date``
    (``YYYY-MM-DD``, UTC): time-based split (train before, test from that day
    on); ``holdout_repos``: repositories whose records all go to test. Both
    are ignored when ``config`` is given. ``batch_size``: records per batch (memory, and the unit a killed
    run resumes from; the result does not depend on it). ``engine="ray"``: the batches are scored on Ray
    (:mod:`reprodiag.ray_engine`; the corpus-level pass stays here), same result.
    """
    from reprodiag.ray_engine import check_engine

    check_engine(engine, ray_address)
    if batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {batch_size}")
    if config is None:
        cut = parse_split_date(split_date)
        holdout = _holdout(holdout_repos)
        try:
            config = ScoreConfig(threshold=threshold, min_relevance=min_relevance, seed=seed, split_date=cut,
                                 holdout_repos=holdout)
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
    tmpdir = None
    try:
        path = _stage_path(store, output)
        if path is None:
            tmpdir = tempfile.TemporaryDirectory(prefix="reprodiag-score-")
            path = Path(tmpdir.name) / STAGE_NAME
        stage = ScoreStage(path, _settings_key(config))
        items = (_file_items(Path(input)) if input is not None
                 else _store_items(store, batch_size))  # type: ignore[arg-type]
        got = _score_into(items, stage, config, batch_size, engine, ray_address)
        bad, report, reused = got.rejects, got.report, got.reused
        if output is not None:
            _write_jsonl(Path(output), (doc for *_, doc in _final_rows(stage, got.light, got.decisions)),
                         "--output")
        if rejects is not None:
            _write_jsonl(Path(rejects), (json.dumps({"line": b.line, "thread_id": b.thread_id, "reason": b.reason},
                                                    ensure_ascii=False, separators=(",", ":")) for b in bad), "--rejects")
        if store is not None:
            with store.transaction() as c:
                c.execute("DELETE FROM rejects WHERE stage='score'")
                store.put_rejects("score", [(b.thread_id or f"line:{b.line}", b.reason) for b in bad])
                store.put_scored_rows(_final_rows(stage, got.light, got.decisions), replace_all=True)
        stage.remove()
    except BaseException:
        if store is not None and run_id is not None:
            store.finish_run(run_id, {}, status="failed")
        raise
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    report.counts["rejects"] = len(bad)
    if reused:
        report.notes.append(f"{reused} batch(es) finished by an earlier, interrupted run were reused")
    if output is not None:
        report.outputs["scored"] = str(output)
    if rejects is not None:
        report.outputs["rejects"] = str(rejects)
    if bad:
        report.notes.append(f"{len(bad)} input item(s) rejected" + (f"; see {rejects}" if rejects else ""))
    if store is not None and run_id is not None:
        store.finish_run(run_id, report.counts)
    return report
