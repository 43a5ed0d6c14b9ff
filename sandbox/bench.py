"""``reprodiag bench sandbox``: start-up overhead of each usable backend against a plain subprocess.

Each measurement runs ``true`` ``repeats`` times through the backend's full path
(cgroup creation and cleanup included) and reports the median wall time in
milliseconds; the overhead is that median minus the plain ``subprocess.run``
median.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from reprodiag.schema import LimitsSpec, StageReport
from sandbox.backends.base import StepRequest
from sandbox.backends.bwrap import bwrap_status
from sandbox.backends.choose import make_backend
from sandbox.backends.container import engine_status
from sandbox.quota import open_scratch


def _median_ms(fn: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def run_bench(repeats: int = 10) -> StageReport:
    """Median start-up cost (ms) of plain subprocess, local (limits only), bwrap and any container engine."""
    repeats = max(1, int(repeats))
    report = StageReport(stage="bench-sandbox")
    plain = _median_ms(lambda: subprocess.run(["/bin/sh", "-c", "true"], check=False), repeats)
    report.counts["plain_median_us"] = round(plain * 1000)
    report.notes.append(f"plain subprocess: median {plain:.2f} ms over {repeats} runs")
    candidates = ["local"]
    ok, why = bwrap_status()
    if ok:
        candidates.append("bwrap")
    else:
        report.notes.append(f"bwrap: not measured ({why})")
    for engine in ("docker", "podman"):
        eok, ewhy = engine_status(engine)
        if eok:
            candidates.append(engine)
        else:
            report.notes.append(f"{engine}: not measured ({ewhy})")
    with tempfile.TemporaryDirectory(prefix="reprodiag-bench-") as tmp:
        scratch = Path(tmp)
        work = scratch / "work"
        work.mkdir()
        for name in candidates:
            backend = make_backend(name, scratch)
            step = StepRequest(phase="before", command="true", workdir=work, timeout_s=60,
                               limits=LimitsSpec(memory_mb=256, pids=64, cpus=1, disk_mb=64))
            backend.run(step)  # warm-up (page cache, cgroup detection)
            med = _median_ms(lambda b=backend, s=step: b.run(s), repeats)
            report.counts[f"{name}_median_us"] = round(med * 1000)
            report.counts[f"{name}_overhead_us"] = round((med - plain) * 1000)
            label = "local (no isolation; cgroup limits only)" if name == "local" else name
            report.notes.append(f"{label}: median {med:.2f} ms, overhead {med - plain:+.2f} ms vs plain")
        for mode in ("auto", "watch"):
            probe = open_scratch(64, root=scratch, mode=mode)  # type: ignore[arg-type]
            probe.close()
            if mode == "auto" and probe.mode != "tmpfs":
                report.notes.append(f"scratch tmpfs: not measured ({probe.note})")
                continue
            med = _median_ms(lambda m=mode: open_scratch(64, root=scratch, mode=m).close(), repeats)  # type: ignore[misc]
            name = "scratch_tmpfs" if mode == "auto" else "scratch_dir"
            report.counts[f"{name}_median_us"] = round(med * 1000)
            report.notes.append(f"{name.replace('_', ' ')} (disk quota, once per case): median {med:.2f} ms")
    return report
