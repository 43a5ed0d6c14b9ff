"""``reprodiag replay``: load cases, choose a backend, replay them concurrently,
persist verdicts (resumable), write verdict JSON/JSONL, and draft new cases."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.markup import escape

from reprodiag import console
from reprodiag.errors import UserError
from reprodiag.schema import ReplaySpec, StageReport, Verdict
from reprodiag.store import Store
from sandbox.backends.choose import Choice, choose_backend, make_backend
from sandbox.replay import replay_case
from sandbox.spec import load_spec
from sandbox.verdict import error_verdict, skipped_verdict

#: Stored verdicts that a rerun replays again (they depend on the host, not on the case).
RETRY_VERDICTS = frozenset({"skipped"})


def _write_output(path: Path, verdicts: list[Verdict]) -> None:
    """One case: a verdict JSON document; several: JSONL. Written atomically."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8") as fh:
            if len(verdicts) == 1:
                fh.write(json.dumps(verdicts[0].model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n")
            else:
                for v in verdicts:
                    fh.write(json.dumps(v.model_dump(mode="json"), ensure_ascii=False) + "\n")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


def _collect(store: Store | None, cases: list[Path], bundled: bool) -> tuple[list[tuple[Path, ReplaySpec]],
                                                                          list[Verdict]]:
    """Specs to replay, plus error verdicts for workspace cases whose spec no longer loads."""
    from sandbox.cases import bundled_case_paths

    loaded: list[tuple[Path, ReplaySpec]] = [(Path(p), load_spec(p)) for p in cases]
    if bundled:
        loaded += [(p, load_spec(p)) for p in bundled_case_paths()]
    broken: list[Verdict] = []
    if not cases and not bundled:
        if store is None:
            raise UserError("nothing to replay: pass --case FILE, --bundled, or a workspace with ready cases")
        for row in store.cases(status="ready"):
            if not row["path"]:
                broken.append(error_verdict(row["case_id"], "workspace case has no spec path"))
                continue
            try:
                loaded.append((Path(row["path"]), load_spec(row["path"])))
            except UserError as exc:
                broken.append(error_verdict(row["case_id"], f"spec does not load: {exc}"))
        if not loaded and not broken:
            raise UserError("no ready cases in the workspace: pass --case FILE or --bundled, or review drafts "
                            "(reprodiag replay --draft) and mark them ready")
    seen: dict[str, Path] = {}
    for path, spec in loaded:
        if spec.id in seen and seen[spec.id].resolve() != path.resolve():
            raise UserError(f"case id {spec.id!r} is used by both {seen[spec.id]} and {path}")
        seen[spec.id] = path
    unique: dict[str, tuple[Path, ReplaySpec]] = {}
    for path, spec in loaded:
        unique.setdefault(spec.id, (path, spec))
    return list(unique.values()), broken


def run_replay(store: Store | None, *, cases: list[Path], backend: str = "auto", unsafe_local: bool = False,
               output: Path | None = None, bundled: bool = False, draft: bool = False, concurrency: int = 1,
               force: bool = False, engine: str = "local", ray_address: str | None = None) -> StageReport:
    """Replay cases and return counts per verdict plus ``mismatched_expected``.

    With a store, each verdict is stored as soon as it is known, and a rerun
    skips cases that already have one (``force`` replays them; stored
    ``skipped`` verdicts are always retried). With ``output``, writes the
    verdict JSON (one case) or JSONL (several), stored verdicts included.
    ``engine="ray"``: one Ray task per case (:mod:`sandbox.ray_replay`), each verdict stored as it arrives;
    ``concurrency`` then bounds the tasks submitted at a time (default: the cluster's CPUs).
    """
    from reprodiag.ray_engine import check_engine

    check_engine(engine, ray_address)
    if draft:
        if store is None:
            raise UserError("--draft needs a workspace (it reads its records)")
        from sandbox.draft import run_draft

        return run_draft(store)
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    specs, broken = _collect(store, list(cases), bundled)
    choice = choose_backend(backend, unsafe_local=unsafe_local)
    if engine == "ray":  # each worker chooses on its own node; this host's answer is only shown
        choice = Choice(backend, f"chosen on each Ray worker's node; on this host: {choice.reason}")
    if choice.name == "local":
        console.warn("LOCAL BACKEND: case code runs on this host with NO isolation (--unsafe-local)")
    console.info(escape(f"sandbox backend: {choice.name or 'none'} ({choice.reason})"))
    report = StageReport(stage="replay")
    run_id = store.start_run("replay", {"backend": backend, "cases": len(specs)}) if store is not None else None

    done: dict[str, Verdict] = {}
    if store is not None and not force:
        stored = {v.case_id: v for v in store.iter_verdicts()}
        done = {cid: v for cid, v in stored.items() if v.verdict not in RETRY_VERDICTS}
    todo = [(p, s) for p, s in specs if s.id not in done]
    results: dict[str, Verdict] = {}
    for v in broken:
        results[v.case_id] = v
        if store is not None:
            store.put_verdict(v)

    with tempfile.TemporaryDirectory(prefix="reprodiag-sandbox-") as scratch:
        impl = make_backend(choice.name, Path(scratch)) if choice.name and engine == "local" else None

        def one(item: tuple[Path, ReplaySpec]) -> Verdict:
            path, spec = item
            if impl is None:
                v = skipped_verdict(spec, choice.reason)
            else:
                try:
                    v = replay_case(spec, path, impl)
                except UserError as exc:
                    v = error_verdict(spec.id, str(exc), spec)
            keep(v)
            return v

        def keep(v: Verdict) -> None:
            if store is not None:
                store.put_verdict(v)
            console.info(escape(f"{v.case_id}: {v.verdict} ({v.reason})"))

        if engine == "ray":
            from sandbox.ray_replay import replay_on_ray

            for v in replay_on_ray(todo, backend=backend, unsafe_local=unsafe_local, address=ray_address,
                                   in_flight=concurrency if concurrency > 1 else None):
                keep(v)
                results[v.case_id] = v
        else:
            with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(todo) or 1))) as pool:
                for v in pool.map(one, todo):
                    results[v.case_id] = v

    ordered = [results.get(s.id) or done[s.id] for _, s in specs] + [v for v in broken]
    counts: Counter[str] = Counter(v.verdict for v in ordered)
    mismatched = [v for v in ordered if v.expected is not None and v.verdict != v.expected
                  and v.verdict != "skipped"]
    report.counts = {"cases": len(ordered), "replayed": len(todo), "already_done": len(specs) - len(todo),
                     **{k: counts[k] for k in sorted(counts)}, "mismatched_expected": len(mismatched)}
    report.notes.append(f"backend: {choice.name or 'none'} ({choice.reason})")
    for v in mismatched:
        report.notes.append(f"{v.case_id}: expected {v.expected}, got {v.verdict} ({v.reason})")
    if output is not None:
        _write_output(Path(output), ordered)
        report.outputs["verdicts"] = str(output)
    if store is not None and run_id is not None:
        store.finish_run(run_id, report.counts)
    return report


def default_concurrency() -> int:
    """A sensible ``--concurrency`` for this host: half the cores, at least 1."""
    return max(1, (os.cpu_count() or 2) // 2)
