"""Replaying one case: copy (or clone) the source into a fresh work dir, run the
setup commands, the failing configuration over its seeds, the fix, the fixed
configuration, then :func:`sandbox.verdict.decide`. Every command becomes a
:class:`reprodiag.schema.Step` of the verdict's trajectory.

Nothing here raises for a misbehaving case: a crash, an unparsable metric, a
timeout or a limit hit ends that case with ``error``/``timeout`` and the
output tail in ``reason``.

Isolation per run: the work dir lives in a scratch directory under a disk
quota of ``limits.disk_mb`` (a capped tmpfs as root, else a polling watchdog;
see :mod:`sandbox.quota`); passing it stops the step and ends the case with
``error`` ("work dir exceeded disk_mb=…"). Only ``setup`` steps may have the
network, and only with ``[setup] network = true``; setup runs under the same
limits as the run and fix steps. A git source is cloned on the host with no
system or user git config (so no filters or hooks are configured), hooks
disabled, no submodules, an empty HOME, and only the https/http/git
protocols (plus file for ``file://`` and local paths); credentials in the URL
are removed from the clone's ``origin`` before any step runs.

The work dir belongs to the replayed code: the host only writes into it with
``O_EXCL | O_NOFOLLOW`` under a random name (the fix's patch), reads the
metric file without following links, and quotes step output in a verdict's
reason only with control characters replaced (:func:`printable`).
"""

from __future__ import annotations

import os
import re
import secrets
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from reprodiag.schema import Phase, ReplaySpec, Step, Verdict, VerdictKind
from sandbox.backends.base import SandboxBackend, StepRequest, StepResult
from sandbox.gpu import GpuInfo, detect_gpus
from sandbox.metric import MetricError, read_metric
from sandbox.process import run_process
from sandbox.quota import QuotaMode, Scratch, open_scratch
from sandbox.spec import git_is_local, patch_text, same_program, source_dir, tolerance_for
from sandbox.verdict import decide, measure
from sandbox.workdir import copy_source

#: Characters of stdout/stderr kept per trajectory step.
TAIL_CHARS = 2000
#: Prefix of the file the fix's patch is written to in the work dir (a random suffix follows).
PATCH_PREFIX = ".reprodiag-fix-"
_DISK_FULL = re.compile(r"No space left on device|Disk quota exceeded|File too large")
_URL_AUTH = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


def mask_url(text: str) -> str:
    """Drop ``user:token@`` from URLs so credentials never reach a trajectory."""
    return _URL_AUTH.sub(r"\1***@", text)


def strip_userinfo(url: str) -> str:
    """``url`` without its ``user:token@`` part (what a clone keeps as its ``origin``)."""
    return _URL_AUTH.sub(r"\1", url)


def printable(text: str) -> str:
    """``text`` with control and format characters (terminal escapes, NUL, bidi overrides) shown as
    U+FFFD, so a step's output quoted in a verdict's reason cannot drive the terminal it is printed on."""
    return "".join("\ufffd" if unicodedata.category(c)[0] == "C" and c not in "\n\t" else c for c in text)


class _Stop(Exception):  # noqa: N818 - control flow inside replay_case
    def __init__(self, verdict: VerdictKind, reason: str) -> None:
        reason = printable(reason)
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


@dataclass
class _Run:
    spec: ReplaySpec
    backend: SandboxBackend
    scratch: Scratch
    work: Path
    devices: tuple[int, ...]
    steps: list[Step] = field(default_factory=list)

    def step(self, phase: Phase, command: str, *, timeout_s: float, network: bool = False,
             seed: int | None = None, shown: str | None = None) -> StepResult:
        req = StepRequest(phase=phase, command=command, workdir=self.work, timeout_s=timeout_s,
                          limits=self.spec.limits, network=network and phase == "setup", seed=seed,
                          gpu_devices=self.devices, disk_watch=self.scratch.watch)
        res = self.backend.run(req)
        self.steps.append(_as_step(phase, shown or command, res, seed))
        if res.error:
            raise _Stop("error", f"{phase}: sandbox failure: {res.error}")
        over = res.quota_exceeded or self.scratch.exceeded()
        if over:
            raise _Stop("error", f"{phase}: {over}; the step was stopped")
        if res.timed_out:
            raise _Stop("timeout", f"{phase} step exceeded its {timeout_s:g} s wall-clock limit and was killed"
                        + (f" ({res.leftover} process(es) survived)" if res.leftover else ""))
        if res.oom_killed:
            raise _Stop("error", f"{phase} step killed: over the memory limit of {self.spec.limits.memory_mb} MiB"
                        + (" (files it wrote to the work dir, /tmp or /dev/shm are in memory and count toward it)"
                           if self.scratch.mode == "tmpfs" else ""))
        if res.exit_code != 0:
            extra = " (pids limit reached)" if res.pids_limited else ""
            raise _Stop("error", f"{phase} command exited with {res.exit_code}{extra}: {_last_lines(res)}")
        return res


def _last_lines(res: StepResult, chars: int = 300) -> str:
    text = (res.stderr.strip() or res.stdout.strip())[-chars:]
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())[-chars:] or "(no output)"


def _as_step(phase: Phase, command: str, res: StepResult, seed: int | None) -> Step:
    return Step(phase=phase, command=mask_url(command), exit_code=res.exit_code, duration_s=round(res.duration_s, 4),
                stdout_tail=res.stdout[-TAIL_CHARS:], stderr_tail=res.stderr[-TAIL_CHARS:], seed=seed,
                timed_out=res.timed_out)


def git_env(home: Path, *, allow_file: bool) -> dict[str, str]:
    """The whole environment of a host-side git command: no system or user config (hence no
    filters, hooks or credential helpers from them), an empty ``home``, no prompts, and a protocol
    allowlist (``file`` only when the source itself is local)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_SYSTEM": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false", "GIT_LFS_SKIP_SMUDGE": "1", "LANG": "C.UTF-8",
            "GIT_ALLOW_PROTOCOL": "https:http:git" + (":file" if allow_file else "")}


#: ``-c`` options of every host-side git command: hooks off, no submodules, no fsmonitor.
GIT_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "submodule.recurse=false", "-c", "core.fsmonitor=false",
            "-c", "protocol.ext.allow=never")


def _clone(url: str, ref: str | None, work: Path, timeout_s: float, home: Path, scratch: Scratch) -> Step:
    """Clone a git source on the host (see :func:`git_env`; ``home`` is an empty directory) under the
    run's disk quota (a full tmpfs fails the clone with ENOSPC; ``scratch.watch`` is polled), without
    hard links into a local origin."""
    local = git_is_local(url)
    env = git_env(home, allow_file=local)
    shown = f"git clone {url}" + (f" && git checkout {ref}" if ref else "")
    start = time.monotonic()
    file_ok = ("-c", "protocol.file.allow=always") if local else ()
    cmds = [["git", *GIT_SAFE, *file_ok, "clone", "--quiet", "--template=", "--no-hardlinks", "--", url, str(work)]]
    if ref:
        cmds.append(["git", "-C", str(work), *GIT_SAFE, "checkout", "--quiet", ref, "--"])
    out, err, code, timed_out = "", "", 0, False
    for cmd in cmds:
        left = timeout_s - (time.monotonic() - start)
        res = run_process(cmd, env=env, cwd=None, timeout_s=max(left, 0.001), memory_mb=0, pids=0, cpus=0,
                          disk_mb=scratch.disk_mb, use_cgroup=False, limit_file_size=False,
                          watch=scratch.watch.exceeded)
        out += res.stdout.decode("utf-8", errors="replace")
        err += res.stderr.decode("utf-8", errors="replace")
        code, timed_out = res.exit_code, res.timed_out
        if res.stopped:
            err += f"\n{res.stopped}"
        if code != 0:
            break
    if code == 0 and strip_userinfo(url) != url:
        # The clone keeps its URL as origin; the replayed code must not find the credentials in .git/config.
        res = run_process(["git", "-C", str(work), *GIT_SAFE, "remote", "set-url", "origin", strip_userinfo(url)],
                          env=env, cwd=None, timeout_s=30, memory_mb=0, pids=0, cpus=0, disk_mb=scratch.disk_mb,
                          use_cgroup=False, limit_file_size=False)
        code = res.exit_code
        err += res.stderr.decode("utf-8", errors="replace")
    return Step(phase="setup", command=mask_url(shown), exit_code=code, duration_s=round(time.monotonic() - start, 4),
                stdout_tail=mask_url(out)[-TAIL_CHARS:], stderr_tail=mask_url(err)[-TAIL_CHARS:], timed_out=timed_out)


def write_new_file(work: Path, data: bytes) -> str:
    """Write ``data`` to a new file with a random name directly in ``work``; returns the name.

    The work dir belongs to the replayed code: the file is created with
    ``O_EXCL | O_NOFOLLOW`` relative to the work dir opened without following
    links, so a link the code planted there can never make the host write elsewhere.
    """
    name = f"{PATCH_PREFIX}{secrets.token_hex(8)}.patch"
    dfd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
    finally:
        os.close(dfd)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return name


#: Entries of the work dir looked at to tell whether a fix command changed the tree (more: "changed").
FINGERPRINT_ENTRIES = 50_000


def tree_fingerprint(work: Path) -> frozenset[tuple[str, int, int]] | None:
    """(path, size, mtime) of every entry under ``work``, links not followed; None past
    :data:`FINGERPRINT_ENTRIES` entries (too many to compare: treated as changed)."""
    out: set[tuple[str, int, int]] = set()
    for root, dirs, files in os.walk(work, followlinks=False):
        for name in dirs + files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            out.add((os.path.relpath(os.path.join(root, name), work), st.st_size, st.st_mtime_ns))
            if len(out) > FINGERPRINT_ENTRIES:
                return None
    return frozenset(out)


def _prints_metric(spec: ReplaySpec, stdout: str, work: Path) -> bool:
    try:
        read_metric(spec.run, stdout, work)
    except MetricError:
        return False
    return True


def _measure_phase(run: _Run, phase: Phase, command: str | None = None) -> list[float]:
    spec = run.spec
    values: list[float] = []
    for seed in range(spec.run.seeds):
        res = run.step(phase, command or spec.run.command, timeout_s=spec.run.timeout_s, seed=seed)
        try:
            val = read_metric(spec.run, res.stdout, run.work)
        except MetricError as exc:
            tail = " | ".join(ln.strip() for ln in res.stdout.strip().splitlines()[-3:] if ln.strip())[-300:]
            raise _Stop("error", f"{phase} (seed {seed}): {exc}; output tail: {tail or '(empty)'}") from None
        run.steps[-1] = run.steps[-1].model_copy(update={"metric": val})
        values.append(val)
    return values


def replay_case(spec: ReplaySpec, spec_path: Path, backend: SandboxBackend, *, gpu: GpuInfo | None = None,
                scratch_root: Path | None = None, disk_quota: QuotaMode = "auto") -> Verdict:
    """Replay one case with ``backend``; always returns a verdict (never raises for case failures).

    ``scratch_root`` is where the run's scratch directory is made (default: the
    temp dir); ``disk_quota`` picks how its ``disk_mb`` quota is enforced
    (:func:`sandbox.quota.open_scratch`: ``auto`` = tmpfs as root, else watch).
    """
    tol = tolerance_for(spec)
    base = dict(case_id=spec.id, tolerance=tol, backend=backend.name, thread_id=spec.thread_id,
                error_type=spec.error_type, expected=spec.expected)
    devices: tuple[int, ...] = ()
    gpu_summary: str | None = None
    if spec.limits.gpus > 0:
        gpu = gpu or detect_gpus()
        if len(gpu.devices) < spec.limits.gpus:
            return Verdict(verdict="skipped", gpu=gpu.summary, reason=f"case needs {spec.limits.gpus} GPU(s); "
                           f"this host has {len(gpu.devices)} ({gpu.summary})", **base)
        devices = gpu.devices[: spec.limits.gpus]
        gpu_summary = gpu.summary
    try:
        scratch = open_scratch(spec.limits.disk_mb, root=scratch_root, mode=disk_quota)
    except OSError as exc:
        return Verdict(verdict="error", reason=f"cannot create a scratch directory: {exc.strerror or exc}", **base)
    work = scratch.path / "work"
    run = _Run(spec, backend, scratch, work, devices)
    before: list[float] = []
    after: list[float] = []
    try:
        if spec.source.git:
            home = scratch.path / "git-home"
            home.mkdir()
            step = _clone(spec.source.git, spec.source.ref, work, spec.setup.timeout_s, home, scratch)
            run.steps.append(step)
            over = scratch.exceeded()
            if over is None and step.exit_code != 0 and _DISK_FULL.search(step.stderr_tail):
                over = f"work dir exceeded disk_mb={spec.limits.disk_mb} (the clone ran out of space)"
            if over is not None:
                raise _Stop("error", f"setup: git clone: {over}")
            if step.timed_out:
                raise _Stop("timeout", f"setup: git clone exceeded {spec.setup.timeout_s:g} s")
            if step.exit_code != 0:
                raise _Stop("error", f"setup: git clone failed: {step.stderr_tail.strip()[-300:]}")
        else:
            src = source_dir(spec, spec_path)
            if src is None or not src.is_dir():
                raise _Stop("error", f"source directory {src} does not exist")
            copy_source(src, work)
            if (over := scratch.exceeded()) is not None:
                raise _Stop("error", f"copying the source: {over}")
        deadline = time.monotonic() + spec.setup.timeout_s
        for cmd in spec.setup.commands:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Stop("timeout", f"setup exceeded its {spec.setup.timeout_s:g} s limit")
            run.step("setup", cmd, timeout_s=left, network=spec.setup.network)
        before = _measure_phase(run, "before")
        patch = patch_text(spec, spec_path)
        if patch is None and not spec.fix.command and not spec.fix.run:
            raise _Stop("error", "the case has no [fix] (patch, command or run)")
        if patch is not None:
            name = write_new_file(work, patch.encode("utf-8"))
            run.step("fix", f"git apply --whitespace=nowarn {name}; rc=$?; rm -f {name}; exit $rc",
                     timeout_s=spec.run.timeout_s, shown=f"git apply <<'PATCH'\n{patch[:4000]}\nPATCH")
        after_cmd = spec.fix.run or spec.run.command
        if spec.fix.command:
            same = same_program(spec.fix.command, spec.run.command)
            # the tree is compared only when that can decide how the fix is read
            fp = tree_fingerprint(work) if not spec.fix.run and not same else None
            res = run.step("fix", spec.fix.command, timeout_s=spec.run.timeout_s)
            if not spec.fix.run and _prints_metric(spec, res.stdout, work):
                if same or (fp is not None and tree_fingerprint(work) == fp):
                    after_cmd = spec.fix.command
                    base["fix_note"] = ("[fix] command prints the metric and " + (
                        "runs the same program as [run] command" if same else "changed no file")
                        + ": read as [fix] run (the after-metric comes from it)")
        after = _measure_phase(run, "after", after_cmd)
        d = decide(spec, before, after)
        return Verdict(verdict=d.verdict, reason=d.reason, direction_ok=d.direction_ok, before=measure(before),
                       after=measure(after), gpu=gpu_summary, steps=run.steps, after_command=mask_url(after_cmd),
                       **base)
    except _Stop as stop:
        return Verdict(verdict=stop.verdict, reason=stop.reason, before=measure(before), after=measure(after),
                       gpu=gpu_summary, steps=run.steps, **base)
    except OSError as exc:
        over = scratch.exceeded()
        reason = over if over is not None else f"work dir: {exc.strerror or exc}"
        return Verdict(verdict="error", reason=reason, before=measure(before),
                       after=measure(after), gpu=gpu_summary, steps=run.steps, **base)
    finally:
        scratch.close()
