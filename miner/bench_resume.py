"""``reprodiag bench resume``: what a mine killed early costs when it is run again, against the fake GitHub.

A week-long crawl is killed and resumed many times; each resume should cost only what was left. For each
repeat, on a fresh fake GitHub serving a synthetic corpus (20 repositories) with a fault mix (by default 5%
of requests answered 502, 2% a secondary rate limit) and a latency per answer:

1. a fresh ``reprodiag mine`` of every repository;
2. the same mine in a new workspace, killed with SIGKILL as soon as its first page is committed (a fixed point
   of progress, not a time), then run again to its end: the *resumed* run;
3. the same kill, then a run again whose first queries all time out (502 on every try): the resume that costs
   most when the query weight a timeout lowers is not raised again.

Points are the fake's own count (GitHub's formula). Every workspace must end with the same threads as the
fresh one (``mismatched`` must be 0).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from miner.fake_github import FakeGitHubThread, Faults
from miner.synthetic import synthetic_corpus
from reprodiag.schema import StageReport
from reprodiag.store import Store

_TOKEN = "bench-resume-token-1"
_ROOT = Path(__file__).resolve().parent.parent
#: Requests that answer 502 at the start of the "timeouts first" resume (three queries' worth of tries).
_TIMEOUTS_FIRST = 9


def _cmd(ws: Path, url: str, repos: list[str]) -> list[str]:
    return [sys.executable, "-m", "reprodiag", "-q", "-w", str(ws), "mine", "--api-url", url, "--include-prs",
            "--concurrency", "4", *[a for r in repos for a in ("--repos", r)]]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRODIAG_", "GITHUB_TOKEN"))}
    env["GITHUB_TOKENS"] = _TOKEN
    return env


def _committed(ws: Path) -> int:
    db = ws / "reprodiag.sqlite"
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT count(*) FROM sync_checkpoints").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:  # not created yet
        return 0


def _export(ws: Path) -> list[str]:
    with Store(ws) as s:
        return sorted(t.model_dump_json() for t in s.iter_threads())


def _points(srv: FakeGitHubThread) -> int:
    return sum(srv.state.stats.points.values())


def _mine(srv: FakeGitHubThread, ws: Path, repos: list[str]) -> int:
    """Points one complete mine into ``ws`` spent."""
    p0 = _points(srv)
    proc = subprocess.run(_cmd(ws, srv.url, repos), env=_env(), cwd=_ROOT, capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"mine failed: {proc.stderr.strip()[-300:]}")
    return _points(srv) - p0


def _kill_early(srv: FakeGitHubThread, ws: Path, repos: list[str]) -> tuple[int, bool]:
    """Start a mine into ``ws`` and SIGKILL it at its first committed page: (points spent, killed in time)."""
    p0 = _points(srv)
    proc = subprocess.Popen(_cmd(ws, srv.url, repos), env=_env(), cwd=_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        if _committed(ws) >= 1:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait(timeout=3600)
    time.sleep(0.5)  # what the killed mine left in flight is answered (and charged) before counting
    return _points(srv) - p0, proc.returncode == -signal.SIGKILL


def run_resume_bench(threads: int = 2400, latency_ms: float = 100.0, p_502: float = 0.05,
                     p_secondary: float = 0.02, repeats: int = 3) -> StageReport:
    """Fresh vs resumed mines (see the module doc); figures per repeat and their medians/maxima."""
    corpus = synthetic_corpus(threads, 20, seed=11, big_threads=1, discussion_share=0.15)
    repos = list(corpus.repos_meta)
    rows: list[dict[str, Any]] = []
    mismatched = 0
    for rep in range(max(1, repeats)):
        faults = Faults(seed=100 + rep, p_502=p_502, p_secondary=p_secondary, retry_after_s=0)
        with tempfile.TemporaryDirectory(prefix="bench-resume-") as d, \
                FakeGitHubThread(corpus.threads, corpus.repos_meta, tokens=[_TOKEN], faults=faults,
                                 latency_ms=latency_ms) as srv:
            root = Path(d)
            fresh = _mine(srv, root / "fresh", repos)
            want = _export(root / "fresh")
            row: dict[str, Any] = {"fresh": fresh}
            for name in ("resumed", "timeouts_first"):
                spent, killed = _kill_early(srv, root / name, repos)
                if name == "timeouts_first":
                    srv.state.faults = replace(faults, fail_first=srv.state.served + _TIMEOUTS_FIRST)
                row[name] = _mine(srv, root / name, repos)
                row[f"{name}_spent_before_kill"] = spent
                row[f"{name}_killed"] = killed
                srv.state.faults = faults
                mismatched += _export(root / name) != want
            rows.append(row)
    ratio = max(r["resumed"] / max(1, r["fresh"]) for r in rows)
    ratio_t = max(r["timeouts_first"] / max(1, r["fresh"]) for r in rows)
    counts = {
        "threads": len(corpus.threads), "repeats": len(rows),
        "fresh_points_median": int(median(r["fresh"] for r in rows)),
        "resumed_points_median": int(median(r["resumed"] for r in rows)),
        "resumed_points_max": max(r["resumed"] for r in rows),
        "timeouts_first_points_max": max(r["timeouts_first"] for r in rows),
        "kills_too_late": sum(not r[f"{n}_killed"] for r in rows for n in ("resumed", "timeouts_first")),
        "mismatched": mismatched,
    }
    per = "; ".join(f"fresh {r['fresh']}, resumed {r['resumed']} (+{r['resumed_spent_before_kill']} before the "
                    f"kill), timeouts first {r['timeouts_first']}" for r in rows)
    notes = [
        f"{len(corpus.threads)} threads in 20 repositories, {p_502:.0%} of requests answered 502 and {p_secondary:.0%} "
        f"a secondary limit, {latency_ms:g} ms per answer; killed at the first committed page",
        f"resumed / fresh points: at most {ratio:.2f} (target <= 1.20); when the resumed run's first queries all "
        f"time out: at most {ratio_t:.2f}",
        f"per repeat: {per}",
        f"workspaces whose threads differ from the fresh mine's: {mismatched} (must be 0)",
    ]
    return StageReport(stage="bench resume", counts=counts, notes=notes)
