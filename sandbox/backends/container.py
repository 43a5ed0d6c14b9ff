"""docker / podman backend: one throw-away container per step.

The image (``$REPRODIAG_SANDBOX_IMAGE``, default ``python:3.11-slim``) provides
the base system; the project's interpreter directories are bound read-only at
their host paths so cases see the same libraries as under bwrap. No network,
read-only root, tmpfs /tmp and HOME, the work dir as the only writable bind,
all capabilities dropped, ``no-new-privileges``. Network (``bridge``) only for
a ``setup`` step of a case with ``[setup] network = true``; never for run or fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from functools import lru_cache

from sandbox.backends.base import (
    SANDBOX_HOME,
    SANDBOX_WORKDIR,
    StepRequest,
    StepResult,
    network_allowed,
    sandbox_env,
)
from sandbox.backends.bwrap import python_dirs
from sandbox.process import run_process

DEFAULT_IMAGE = "python:3.11-slim"


def container_image() -> str:
    return os.environ.get("REPRODIAG_SANDBOX_IMAGE") or DEFAULT_IMAGE


def build_container_argv(engine: str, step: StepRequest, *, image: str, name: str, env: dict[str, str],
                         user: str, ro_dirs: list[str]) -> list[str]:
    """The ``docker run`` / ``podman run`` command line for ``step`` (pure).

    Memory in MiB (swap equal to memory: no swap), cpus as a fraction of cores,
    ``--gpus device=I,J`` when the step has GPU devices.
    """
    lim = step.limits
    tmp = f"rw,nosuid,nodev,size={max(16, lim.disk_mb)}m,mode=1777"
    a = [engine, "run", "--rm", "--name", name, "--init",
         "--network", "bridge" if network_allowed(step) else "none",
         "--read-only",
         "--memory", f"{lim.memory_mb}m", "--memory-swap", f"{lim.memory_mb}m",
         "--cpus", f"{lim.cpus:g}", "--pids-limit", str(lim.pids),
         "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
         "--user", user,
         "--tmpfs", f"/tmp:{tmp}", "--tmpfs", f"{SANDBOX_HOME}:{tmp}",
         "-v", f"{step.workdir}:{SANDBOX_WORKDIR}:rw", "-w", SANDBOX_WORKDIR]
    if step.gpu_devices:
        a += ["--gpus", "device=" + ",".join(str(i) for i in step.gpu_devices)]
    for d in ro_dirs:
        a += ["-v", f"{d}:{d}:ro"]
    for k, v in sorted(env.items()):
        a += ["-e", f"{k}={v}"]
    a += [image, "/bin/sh", "-c", step.command]
    return a


@lru_cache(maxsize=4)
def engine_status(engine: str) -> tuple[bool, str]:
    """(usable, reason): the client is installed and its engine answers."""
    exe = shutil.which(engine)
    if exe is None:
        return False, f"{engine} is not installed"
    try:
        proc = subprocess.run([exe, "info", "--format", "{{json .}}"], capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False, f"{engine} engine does not answer"
    if proc.returncode != 0:
        return False, f"{engine} client found but no engine answers"
    return True, f"{engine} engine answers"


class ContainerBackend:
    """docker or podman isolation."""

    def __init__(self, engine: str) -> None:
        self.name = engine
        self.exe = shutil.which(engine) or engine

    def run(self, step: StepRequest) -> StepResult:
        name = f"reprodiag-{uuid.uuid4().hex[:12]}"
        env = sandbox_env(step)
        argv = build_container_argv(self.exe, step, image=container_image(), name=name, env=env,
                                    user=f"{os.getuid()}:{os.getgid()}", ro_dirs=python_dirs())
        lim = step.limits
        out = run_process(argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                     "HOME": os.environ.get("HOME", "/root")},
                          cwd=None, timeout_s=step.timeout_s, memory_mb=lim.memory_mb, pids=lim.pids,
                          cpus=lim.cpus, disk_mb=lim.disk_mb, use_cgroup=False,
                          on_kill=[self.exe, "kill", name],
                          watch=step.disk_watch.exceeded if step.disk_watch else None)
        return StepResult(
            exit_code=out.exit_code, duration_s=out.duration_s,
            stdout=out.stdout.decode("utf-8", errors="replace"), stderr=out.stderr.decode("utf-8", errors="replace"),
            timed_out=out.timed_out, oom_killed=out.exit_code == 137 and not out.timed_out and not out.stopped,
            limiter=self.name, quota_exceeded=out.stopped,
        )
