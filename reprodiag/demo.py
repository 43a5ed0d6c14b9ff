"""``reprodiag demo``: the whole flow, offline, on the bundled sample.

A loopback fake GitHub (``miner.fake_github``) serves the bundled corpus; the
real miner mines it over GraphQL, then filter → extract → score → replay of the
bundled sandbox cases → build datasets → diagnosis eval with the offline
baselines. Extraction is the LLM reader's path by default: the project's OpenAI
backend (the official SDK) sends each thread's request to a loopback server
that answers with a capable model's recorded answer for that thread
(:mod:`extract.replay_server`, :mod:`extract.recorded`), so the datasets and the
benchmark are what a user with a key gets; ``reader="rules"`` runs the offline
reader instead. The summary is computed from the workspace and the outputs (not
from per-run deltas), so a demo killed and re-run ends with the same summary as
a clean run.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from reprodiag import console as out
from reprodiag.config import Secret, temporary_env
from reprodiag.schema import StageReport
from reprodiag.store import Store

DEMO_TOKEN = "demo-token-not-a-secret"
DEMO_MODELS = ["baseline:prior", "baseline:rules"]
#: The key the demo's OpenAI client sends to the loopback recorded-answers server (nothing else sees it).
DEMO_LLM_KEY = "demo-key-not-a-secret"
#: ``reprodiag demo --backend``: the LLM reader on recorded answers, or the offline reader.
DEMO_READERS = ("recorded", "rules")


def demo_repo_meta(repos: list[str]) -> dict[str, dict[str, Any]]:
    """Deterministic star counts etc. for the fictional repositories (the fake GitHub serves them)."""
    meta = {}
    for repo in repos:
        h = int(hashlib.sha256(repo.encode()).hexdigest()[:6], 16)
        meta[repo] = {"stars": 210 + h % 4000, "archived": False, "has_issues": True, "has_discussions": True}
    return meta


def summarize(store: Store, out_dir: Path) -> dict[str, Any]:
    """Workspace totals after a demo (stable across kill-and-rerun)."""
    verdicts = Counter(v.verdict for v in store.iter_verdicts())
    kept = list(store.iter_scored(kept_only=True))
    summary: dict[str, Any] = {
        "repos_indexed": len(store.repos()),
        "threads": store.count("threads"),
        "relevant": store.count("decisions", "is_reproduction=1"),
        "records": store.count("records"),
        "kept": len(kept),
        "dropped": store.count("scored", "keep=0"),
        "resolved_kept": sum(r.resolution_type == "resolved" for r in kept),
        "verdicts": dict(sorted(verdicts.items())),
        "datasets": {},
        "eval": {},
    }
    ds_dir = out_dir / "datasets"
    for name in ("sft", "dpo", "eval"):
        n = 0
        for pq in sorted((ds_dir / name).glob("*.parquet")):
            import polars as pl

            n += pl.scan_parquet(pq).select(pl.len()).collect().item()
        summary["datasets"][name] = n
    results = out_dir / "eval" / "results.json"
    if results.exists():
        data = json.loads(results.read_text(encoding="utf-8"))
        for model, res in (data.get("models") or {}).items():
            overall = res.get("overall", res)
            summary["eval"][model] = {k: overall.get(k) for k in ("hit_any", "hit_at_1", "false_positive_rate")
                                      if k in overall}
    return summary


def run_demo(workspace: Path, *, out_dir: Path | None = None, replay: bool = True,
             reader: str = "recorded") -> StageReport:
    """Run the offline demo into ``workspace``; outputs go to ``out_dir`` (default ``<workspace>/demo-out``).
    ``reader``: ``recorded`` (the LLM reader on recorded answers) or ``rules`` (the offline reader; its
    records may become eval items, flagged on the card)."""
    from miner.fake_github import serve_fake_github
    from miner.index import run_index
    from reprodiag.errors import UserError
    from reprodiag.pipeline import PipelineOptions, run_stages
    from reprodiag.sample import load_sample_threads, sample_links_path

    if reader not in DEMO_READERS:
        raise UserError(f"demo --backend must be one of {', '.join(DEMO_READERS)}, got {reader!r}")
    t0 = time.monotonic()
    store = Store(workspace)
    out_dir = Path(out_dir) if out_dir else Path(workspace) / "demo-out"
    out_dir.mkdir(parents=True, exist_ok=True)
    threads = load_sample_threads()
    meta = demo_repo_meta(sorted({t.repo for t in threads}))
    tokens = [Secret(DEMO_TOKEN, "token #1")]
    timings: dict[str, float] = {}
    with ExitStack() as stack:
        api_url = stack.enter_context(serve_fake_github(threads, meta, tokens={DEMO_TOKEN}))
        out.info(f"fake GitHub serving {len(threads)} sample threads at {api_url}")
        llm: dict[str, Any] = {"backend": "rules", "eval_from": "offline"}
        if reader == "recorded":
            llm, line = _recorded_reader(stack, threads)
            out.info(line)
        t = time.monotonic()
        run_index(store, dump=sample_links_path(), repos_file=None, repos=[], official_only=False, min_stars=200,
                  api_url=api_url, token_file=None, tokens=tokens)
        timings["index"] = time.monotonic() - t
        opts = PipelineOptions(out_dir=out_dir, api_url=api_url, tokens=tokens, concurrency=4, replay=replay,
                               replay_bundled=True, per_type_min=1, per_type_max=40, eval_models=DEMO_MODELS,
                               **llm)
        t = time.monotonic()
        for report in run_stages(store, opts):
            timings[report.stage] = time.monotonic() - t
            t = time.monotonic()
            out.debug(json.dumps(report.model_dump(mode="json"))[:2000])
    summary = summarize(store, out_dir)
    summary["reader"] = _reader_line(store, reader)
    summary["seconds"] = round(time.monotonic() - t0, 1)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True), encoding="utf-8")
    store.close()

    counts = {
        "repositories indexed": summary["repos_indexed"],
        "threads mined": summary["threads"],
        "relevant (filter)": summary["relevant"],
        "records (extract)": summary["records"],
        "kept (score)": summary["kept"],
        "dropped (score)": summary["dropped"],
        **{f"replay {k}": v for k, v in summary["verdicts"].items()},
        **{f"dataset {k} rows": v for k, v in summary["datasets"].items()},
    }
    notes = [summary["reader"]]
    notes += [f"{m}: " + ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items())
              for m, r in summary["eval"].items()]
    notes.append("stage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    notes.append(f"total {summary['seconds']} s")
    return StageReport(
        stage="demo",
        counts=counts,
        outputs={
            "workspace": str(workspace),
            "datasets": str(out_dir / "datasets"),
            "eval report": str(out_dir / "eval" / "report.html"),
            "summary": str(out_dir / "summary.json"),
        },
        notes=notes,
    )


def _recorded_reader(stack: ExitStack, threads: list[Any]) -> tuple[dict[str, Any], str]:
    """Start the loopback server of the sample's recorded answers; the pipeline options that send the
    extraction through it (the OpenAI backend), and a line saying what answers."""
    from extract.recorded import RECORDED_DIR, read_manifest, results_path, staleness
    from extract.replay_server import serve_recorded
    from reprodiag.errors import UserError

    manifest = read_manifest(RECORDED_DIR)
    stale = staleness(manifest)
    if stale:
        raise UserError(f"the recorded answers in {RECORDED_DIR} are stale ({stale}); run `reprodiag demo "
                        "--backend rules` or record them again (scripts/record_answers.py)")
    srv = stack.enter_context(serve_recorded(results_path(RECORDED_DIR, "sample"), threads, model=manifest.model))
    stack.enter_context(temporary_env("OPENAI_API_KEY", DEMO_LLM_KEY))
    opts = {"backend": "openai", "model": f"recorded {manifest.model}", "base_url": srv.url, "eval_from": "llm"}
    return opts, (f"LLM reader: recorded answers of {manifest.model} ({manifest.prompt_version}, recorded "
                  f"{manifest.date}) served over the OpenAI protocol at {srv.url}")


def _reader_line(store: Store, reader: str) -> str:
    """Who read the sample's threads, for the summary."""
    if reader == "rules":
        return "extract: the offline reader (rules and learned models, no LLM); eval items from its records"
    from extract.recorded import RECORDED_DIR, read_manifest

    m = read_manifest(RECORDED_DIR)
    return (f"extract: the LLM reader (prompt {m.prompt_version}, strict schema, quote check) through the OpenAI "
            f"backend, answered by a loopback server replaying recorded answers of {m.model} ({m.date}); "
            f"`reprodiag demo --backend rules` runs the offline reader")
