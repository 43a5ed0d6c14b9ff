"""Run one command under limits: wall timeout that kills the whole process tree,
cgroup (or rlimit) memory/pids limits, an optional polled watch (the disk
quota) that kills the tree early, and bounded capture of stdout/stderr.

Only the last :data:`CAPTURE_BYTES` of each stream are kept in memory, so a step
printing gigabytes cannot exhaust the host. Every kill is SIGKILL (a process
ignoring SIGTERM changes nothing), to the process group and then to every
member of the step's cgroup, so daemons that double-forked or called setsid
die with the step, before the next step starts.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from sandbox.limits import open_cgroup

#: Bytes of each output stream kept (the tail).
CAPTURE_BYTES = 1 << 20


@dataclass(frozen=True)
class ProcessOutcome:
    """What happened to one process tree. ``exit_code`` is None when it was killed at the timeout;
    a negative code is the signal that ended it. ``leftover`` counts processes still alive after cleanup.
    ``stopped`` is the watch's reason when the watch (e.g. a disk quota) killed the tree early."""

    exit_code: int | None
    duration_s: float
    stdout: bytes
    stderr: bytes
    timed_out: bool
    oom_killed: bool
    pids_limited: bool
    leftover: int
    limiter: str
    stopped: str | None = None


class _Tail:
    """Reads a stream to EOF, keeping only its last ``cap`` bytes."""

    def __init__(self, stream: IO[bytes], cap: int = CAPTURE_BYTES) -> None:
        self.buf = bytearray()
        self.cap = cap
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        try:
            while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
                self.buf += chunk
                if len(self.buf) > 2 * self.cap:
                    del self.buf[: len(self.buf) - self.cap]
        except (OSError, ValueError):
            pass
        finally:
            try:
                stream.close()
            except OSError:
                pass

    def result(self) -> bytes:
        self.thread.join(timeout=5)
        return bytes(self.buf[-self.cap:])


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str | None,
    timeout_s: float,
    memory_mb: int,
    pids: int,
    cpus: float,
    disk_mb: int,
    allow_rlimit_as: bool = True,
    use_cgroup: bool = True,
    limit_file_size: bool = True,
    on_kill: list[str] | None = None,
    watch: Callable[[], str | None] | None = None,
    watch_interval_s: float = 0.25,
    pass_fds: tuple[int, ...] = (),
) -> ProcessOutcome:
    """Run ``argv`` in a new session and process group; kill the whole tree at ``timeout_s`` (seconds).

    Limits go to a fresh cgroup when the host allows one (memory in MiB, pids,
    cpus as a CFS quota). Otherwise ``prlimit`` applies RLIMIT_NPROC, RLIMIT_AS
    (only when ``allow_rlimit_as``; never with GPUs) and, unless
    ``limit_file_size`` is off, RLIMIT_FSIZE of ``disk_mb``. ``on_kill`` is an extra command run when the tree is killed
    early (e.g. ``docker kill NAME``). ``watch``, when given, is called every
    ``watch_interval_s`` seconds while the command runs (and on a thread of its
    own); the first non-None reason it returns kills the whole tree at once and
    becomes ``ProcessOutcome.stopped``. ``pass_fds`` stay open in the child (e.g. bwrap's ``--seccomp FD``).
    """
    cg = open_cgroup(memory_mb=memory_mb, pids=pids, cpus=cpus) if use_cgroup else None
    prlimit = shutil.which("prlimit")
    full = list(argv)
    limiter = "none"
    rl: list[str] = []
    if prlimit:
        if limit_file_size:
            rl.append(f"--fsize={disk_mb * 1024 * 1024}")
        if cg is None and use_cgroup:
            rl.append(f"--nproc={pids}")
            if allow_rlimit_as:
                rl.append(f"--as={memory_mb * 1024 * 1024}")
        full = [prlimit, *rl, "--", *full] if rl else full
    if cg is not None:
        full = ["/bin/sh", "-c", cg.join_script(), "sh", *full]
        limiter = f"cgroup-{cg.mode.kind}"
    elif use_cgroup and prlimit:
        limiter = "rlimit"
    start = time.monotonic()
    timed_out = False
    try:
        proc = subprocess.Popen(
            full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=cwd, start_new_session=True, close_fds=True, pass_fds=pass_fds,
        )
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument or the environment
        if cg is not None:
            cg.close()
        msg = f"cannot start {argv[0]}: {getattr(exc, 'strerror', None) or exc}".encode()
        return ProcessOutcome(None, 0.0, b"", msg, False, False, False, 0, limiter)
    out, err = _Tail(proc.stdout), _Tail(proc.stderr)  # type: ignore[arg-type]

    def kill_tree() -> None:
        _kill_group(proc.pid)
        if on_kill:
            try:
                subprocess.run(on_kill, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30,
                               check=False)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if cg is not None:
            cg.kill_all()

    done = threading.Event()
    stopped: list[str] = []

    def watchdog() -> None:
        while not done.wait(watch_interval_s):
            reason = watch() if watch is not None else None
            if reason:
                stopped.append(reason)
                kill_tree()
                return

    dog = threading.Thread(target=watchdog, daemon=True) if watch is not None else None
    if dog is not None:
        dog.start()
    try:
        code: int | None = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        code = None
        kill_tree()
        proc.wait()
    finally:
        done.set()
        if dog is not None:
            dog.join()
    duration = time.monotonic() - start
    # Anything the step left behind (daemons, stragglers) dies with it.
    _kill_group(proc.pid)
    leftover = 0
    oom = pids_hit = False
    if cg is not None:
        leftover = cg.kill_all()
        oom, pids_hit = cg.oom_killed(), cg.pids_hit()
        cg.close()
    stdout, stderr = out.result(), err.result()
    return ProcessOutcome(code, duration, stdout, stderr, timed_out and not stopped, oom, pids_hit, leftover, limiter,
                          stopped[0] if stopped else None)
