"""``reprodiag bench score``: the ``score`` command itself on N grown records, beside a JSONL round-trip.

Records are grown from extractions of real threads (:mod:`scoring.grow`: the facts of one seed record,
the sentences of others, planted secrets, cross-posts), written to a JSONL file. Three child processes
are timed (:mod:`reprodiag.measure`: wall, CPU, peak RSS of that process alone):

* **round-trip**: a plain Python read of the file (``json.loads`` per line) and write of every record
  (``json.dumps``), the floor any JSONL stage pays;
* **file**: ``reprodiag score --input records.jsonl --output scored.jsonl``;
* **workspace**: ``reprodiag -w WS score`` after the same records were put into a workspace.

The ratio of each to the round-trip is the figure the README quotes. ``digest``: sha256 of the scored
file; the same N and seed give the same digest.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from reprodiag.measure import Measured, reprodiag_argv, run_measured
from reprodiag.schema import StageReport
from reprodiag.store import Store
from scoring.grow import write_grown

ROUNDTRIP = (
    "import json, sys\n"
    "with open(sys.argv[1], encoding='utf-8') as src, open(sys.argv[2], 'w', encoding='utf-8') as dst:\n"
    "    for line in src:\n"
    "        dst.write(json.dumps(json.loads(line), ensure_ascii=False) + '\\n')\n"
)


def load_workspace(ws: Path, records: Path) -> int:
    """Put the records of a JSONL file into workspace ``ws``'s ``records`` table (as ``extract`` leaves them)."""
    Store(ws).close()
    conn = sqlite3.connect(ws / "reprodiag.sqlite")
    n = 0
    now = time.time()
    with conn, records.open(encoding="utf-8") as fh:
        batch = []
        for line in fh:
            d = json.loads(line)
            batch.append((d["thread_id"], d["repo"], d.get("error_type", "other"), line.rstrip("\n"), now))
            if len(batch) >= 5000:
                conn.executemany("INSERT OR REPLACE INTO records VALUES (?,?,?,?,?)", batch)
                n += len(batch)
                batch = []
        conn.executemany("INSERT OR REPLACE INTO records VALUES (?,?,?,?,?)", batch)
        n += len(batch)
    conn.close()
    return n


def _line(name: str, m: Measured, n: int, base: Measured | None) -> str:
    ratio = f", {m.wall_s / base.wall_s:.1f}x round-trip" if base is not None else ""
    return (f"{name}: {m.wall_s:.1f} s wall, {m.cpu_s:.1f} s CPU, peak RSS {m.peak_rss_mb:,.0f} MB, "
            f"{n / max(m.wall_s, 1e-9):,.0f} records/s{ratio}")


def run_bench(n: int = 200_000, seed: int = 0, workspace: bool = True) -> StageReport:
    """Grow ``n`` records and time the round-trip, ``score`` on the file and (``workspace``) on a workspace."""
    report = StageReport(stage="bench score")
    with tempfile.TemporaryDirectory(prefix="reprodiag-bench-score-") as tmp:
        d = Path(tmp)
        src = d / "records.jsonl"
        t = time.perf_counter()
        size = write_grown(src, n, seed=seed)
        report.counts.update({"records": n, "input_mb": round(size / 2**20, 1),
                              "ms_generate": round((time.perf_counter() - t) * 1000)})
        rt = run_measured([sys.executable, "-c", ROUNDTRIP, str(src), str(d / "roundtrip.jsonl")])
        runs: dict[str, Measured] = {"round-trip": rt}
        out = d / "scored.jsonl"
        runs["file"] = run_measured(reprodiag_argv("-q", "score", "--input", str(src), "--output", str(out)))
        if runs["file"].rc != 0:
            raise RuntimeError("score --input failed: " + runs["file"].output[-500:])
        digest = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
        summary = json.loads(runs["file"].output.strip().splitlines()[-1])["counts"]
        if workspace:
            ws = d / "ws"
            load_workspace(ws, src)
            runs["workspace"] = run_measured(reprodiag_argv("-q", "-w", str(ws), "score"))
            if runs["workspace"].rc != 0:
                raise RuntimeError("score (workspace) failed: " + runs["workspace"].output[-500:])
    for name, m in runs.items():
        key = name.replace("-", "_")
        report.counts.update({f"{key}_wall_ms": round(m.wall_s * 1000), f"{key}_cpu_ms": round(m.cpu_s * 1000),
                              f"{key}_peak_rss_mb": round(m.peak_rss_mb)})
        if name != "round-trip":
            report.counts[f"{key}_x_roundtrip"] = round(m.wall_s / rt.wall_s, 2)
        report.notes.append(_line(name, m, n, None if name == "round-trip" else rt))
    report.counts.update({k: summary[k] for k in ("kept", "dropped", "duplicate_clusters", "redacted")
                          if k in summary})
    report.notes.append(f"digest {digest} (same N and seed: same digest); targets: <= 5x round-trip, "
                        "<= 1,536 MB peak RSS")
    return report
