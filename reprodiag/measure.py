"""Run a command as a child process and measure it: wall time, CPU time and peak memory of that child.

Benchmarks time the commands users run (``reprodiag score …``), each in a fresh process, so a stage's
peak RSS is its own and not the benchmark driver's. ``os.wait4`` gives the child's own resource usage.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    """``wall_s``: seconds from start to exit; ``cpu_s``: user + system CPU seconds of the child;
    ``peak_rss_mb``: its maximum resident set size (MiB, see :func:`run_measured`); ``rc``: exit status; ``output``: the
    last 4,000 characters of stdout and stderr together."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    rc: int
    output: str


def reprodiag_argv(*args: str) -> list[str]:
    """argv that runs this installation's ``reprodiag`` CLI with ``args``."""
    return [sys.executable, "-m", "reprodiag", *args]


def _hwm_kb(pid: int) -> int | None:
    """The peak RSS (``VmHWM``, KiB) of process ``pid``'s current program, or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run_measured(argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> Measured:
    """Run ``argv`` and measure it. Peak RSS is the child program's own ``VmHWM`` (sampled every 20 ms
    from ``/proc``; it starts at the ``exec``, so the memory a forked child shares with this process before
    it is replaced does not count); without ``/proc`` it is ``ru_maxrss``, which includes that."""
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"reprodiag-measure-{os.getpid()}-{time.monotonic_ns()}.log"
    peak = [0]
    done = threading.Event()
    with out_path.open("w+b") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)

        def sample() -> None:
            while not done.is_set():
                kb = _hwm_kb(proc.pid)
                if kb is not None:
                    peak[0] = max(peak[0], kb)
                done.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")[-4000:]
    out_path.unlink(missing_ok=True)
    rss_kb = peak[0] or (usage.ru_maxrss if sys.platform != "darwin" else usage.ru_maxrss / 1024)
    return Measured(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, peak_rss_mb=rss_kb / 1024,
                    rc=proc.returncode, output=text)
