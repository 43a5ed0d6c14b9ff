"""The local backend: NO isolation. The command runs on the host in the work
dir with a cleared environment and the same cgroup/rlimit limits; it can read
and write anything the current user can. Only with ``--unsafe-local``."""

from __future__ import annotations

from sandbox.backends.base import StepRequest, StepResult, run_limited, sandbox_env


class LocalBackend:
    name = "local"

    def run(self, step: StepRequest) -> StepResult:
        home = step.workdir.parent / "home"
        home.mkdir(exist_ok=True)
        env = sandbox_env(step, home=str(home))
        env["TMPDIR"] = str(home)
        return run_limited(["/bin/sh", "-c", step.command], step, env=env, cwd=str(step.workdir))
