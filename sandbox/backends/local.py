"""The local backend: NO isolation. The command runs on the host in the work
dir with a cleared environment and the same cgroup/rlimit limits; it can read
and write anything the current user can. Only with ``--unsafe-local``."""

from __future__ import annotations

from sandbox.backends.base import StepRequest, StepResult, sandbox_env
from sandbox.process import run_process


class LocalBackend:
    name = "local"

    def run(self, step: StepRequest) -> StepResult:
        home = step.workdir.parent / "home"
        home.mkdir(exist_ok=True)
        env = sandbox_env(step, home=str(home))
        env["TMPDIR"] = str(home)
        lim = step.limits
        out = run_process(["/bin/sh", "-c", step.command], env=env, cwd=str(step.workdir), timeout_s=step.timeout_s,
                          memory_mb=lim.memory_mb, pids=lim.pids, cpus=lim.cpus, disk_mb=lim.disk_mb,
                          allow_rlimit_as=not step.gpu_devices,
                          watch=step.disk_watch.exceeded if step.disk_watch else None)
        return StepResult(
            exit_code=out.exit_code, duration_s=out.duration_s,
            stdout=out.stdout.decode("utf-8", errors="replace"), stderr=out.stderr.decode("utf-8", errors="replace"),
            timed_out=out.timed_out, oom_killed=out.oom_killed, pids_limited=out.pids_limited,
            leftover=out.leftover, limiter=out.limiter, quota_exceeded=out.stopped,
        )
