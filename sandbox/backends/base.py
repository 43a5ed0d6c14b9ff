"""The one interface every isolation backend implements: ``run(step) -> StepResult``."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reprodiag.schema import LimitsSpec, Phase
from sandbox.quota import DiskWatch

#: Host variables passed into a sandbox when set (nothing else crosses; never tokens or keys).
ENV_PASSTHROUGH = ("LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

#: Where the work dir and the private HOME appear inside bwrap and containers.
SANDBOX_WORKDIR = "/replay"
SANDBOX_HOME = "/home/sandbox"


@dataclass(frozen=True)
class StepRequest:
    """One command to run in a sandbox.

    ``workdir`` is the host directory that becomes the only writable place
    (``/replay`` inside). ``timeout_s`` is wall-clock seconds for the whole
    process tree. ``gpu_devices`` are the indices of /dev/nvidiaN to expose.
    ``env`` holds extra variables for the step (e.g. SEED), added to the allowlist.
    ``network`` is honoured for the ``setup`` phase only (see :func:`network_allowed`).
    ``disk_watch``, when set, is polled during the step; passing its quota kills the step.
    """

    phase: Phase
    command: str
    workdir: Path
    timeout_s: float
    limits: LimitsSpec = field(default_factory=LimitsSpec)
    network: bool = False
    seed: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    gpu_devices: tuple[int, ...] = ()
    disk_watch: DiskWatch | None = None


def network_allowed(step: StepRequest) -> bool:
    """Whether ``step`` gets a network (never the host's own: bwrap gives it one from slirp4netns, docker a
    bridge): only a ``setup`` step that asks for it (``[setup] network = true``); run and fix steps never do,
    whatever they ask."""
    return step.network and step.phase == "setup"


@dataclass(frozen=True)
class StepResult:
    """What a step did. ``exit_code`` is None after a timeout kill; ``error`` explains a failure of the
    sandbox itself (not of the command); ``quota_exceeded`` is why the disk watch killed the step early."""

    exit_code: int | None
    duration_s: float
    stdout: str
    stderr: str
    timed_out: bool = False
    oom_killed: bool = False
    pids_limited: bool = False
    leftover: int = 0
    limiter: str = "none"
    error: str | None = None
    quota_exceeded: str | None = None


class SandboxBackend(Protocol):
    """An isolation backend. ``name`` is recorded in the verdict."""

    name: str

    def run(self, step: StepRequest) -> StepResult:
        """Run one step; never raises for a failing command (that is a non-zero exit code)."""
        ...


def python_bin_dir() -> str:
    """The directory of the project's interpreter (prepended to PATH in every sandbox)."""
    return str(Path(sys.executable).parent)


def sandbox_env(step: StepRequest, *, home: str = SANDBOX_HOME, host_env: dict[str, str] | None = None,
                extra_path: str | None = None) -> dict[str, str]:
    """The complete environment inside a sandbox: an allowlist, never the host's secrets."""
    host = dict(os.environ) if host_env is None else host_env
    threads = str(max(1, int(step.limits.cpus + 0.999)))
    path = f"{python_bin_dir()}:/usr/local/bin:/usr/bin:/bin"
    if extra_path:
        path = f"{extra_path}:{path}"
    env = {
        "PATH": path,
        "LANG": "C.UTF-8",
        "HOME": home,
        "TMPDIR": "/tmp",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "MPLCONFIGDIR": f"{home}/.cache/matplotlib",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "GIT_TERMINAL_PROMPT": "0",
    }
    for key in ENV_PASSTHROUGH:
        if key in host and key != "LANG":
            env[key] = host[key]
    if step.seed is not None:
        env["SEED"] = str(step.seed)
        env["PYTHONHASHSEED"] = str(step.seed)
    for k, v in step.env.items():
        env[k] = v
    return env


def text_tail(data: bytes, limit: int) -> str:
    """The last ``limit`` characters of a byte stream, decoded leniently."""
    return data.decode("utf-8", errors="replace")[-limit:]


def run_limited(argv: list[str], step: StepRequest, *, env: dict[str, str], cwd: str,
                pass_fds: tuple[int, ...] = ()) -> StepResult:
    """Run ``argv`` under ``step``'s limits (timeout, memory, pids, cpus, disk quota) as one StepResult;
    ``pass_fds`` are inherited by ``argv`` (bwrap's seccomp program)."""
    from sandbox.process import run_process

    lim = step.limits
    out = run_process(argv, env=env, cwd=cwd, timeout_s=step.timeout_s, memory_mb=lim.memory_mb, pids=lim.pids,
                      cpus=lim.cpus, disk_mb=lim.disk_mb, allow_rlimit_as=not step.gpu_devices,
                      watch=step.disk_watch.exceeded if step.disk_watch else None, pass_fds=pass_fds)
    return StepResult(
        exit_code=out.exit_code, duration_s=out.duration_s,
        stdout=out.stdout.decode("utf-8", errors="replace"), stderr=out.stderr.decode("utf-8", errors="replace"),
        timed_out=out.timed_out, oom_killed=out.oom_killed, pids_limited=out.pids_limited,
        leftover=out.leftover, limiter=out.limiter, quota_exceeded=out.stopped,
    )
