"""Resource limits for one sandboxed step: cgroups (v2 when delegated, v1 when
writable as root, as on hybrid hosts) or, failing both, rlimits.

A :class:`Cgroup` bundles one directory per controller (``memory``, ``pids``,
``cpu``); processes join it through :meth:`Cgroup.join_script`, a shell
prefix that writes the shell's own pid into every ``cgroup.procs`` before it
``exec``\\ s the real command, so no child can be forked outside the group.
Memory is in MiB, cpu in cores (CFS quota), pids is the number of tasks.
"""

from __future__ import annotations

import os
import shlex
import signal
import time
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class CgroupMode:
    """How limits can be enforced here: ``v2``, ``v1`` or ``none`` (rlimits only), and why."""

    kind: str
    reason: str
    base: dict[str, Path] = field(default_factory=dict)


def _own_paths() -> dict[str, str]:
    """Controller → this process's cgroup path, from /proc/self/cgroup ('' key: the v2 path)."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for ctrl in parts[1].split(",") if parts[1] else [""]:
            out[ctrl] = parts[2]
    return out


def _probe_dir(base: Path) -> bool:
    probe = base / f"reprodiag-probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        probe.rmdir()
    except OSError:
        pass
    return True


def _reap_stale(base: Path) -> None:
    """Remove empty ``reprodiag-<pid>-*`` groups left by a process that was SIGKILLed."""
    for d in base.glob("reprodiag-*-*"):
        try:
            pid = int(d.name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid() or Path(f"/proc/{pid}").exists():
            continue
        try:
            d.rmdir()
        except OSError:
            pass


@lru_cache(maxsize=1)
def cgroup_mode() -> CgroupMode:
    """Detect (once) where this process may create cgroups (and reap groups of dead runs)."""
    mode = _detect_mode()
    for base in mode.base.values():
        _reap_stale(base)
    return mode


def _detect_mode() -> CgroupMode:
    own = _own_paths()
    # cgroup v2 with delegated memory+pids controllers
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        rel = own.get("", "/").lstrip("/")
        base = CGROUP_ROOT / rel
        try:
            ctrls = (base / "cgroup.subtree_control").read_text().split()
        except OSError:
            ctrls = []
        if {"memory", "pids"} <= set(ctrls) and _probe_dir(base):
            return CgroupMode("v2", f"cgroup v2 delegated at {base}", {"v2": base})
    # cgroup v1 (hybrid hosts): one hierarchy per controller
    bases: dict[str, Path] = {}
    for ctrl in ("memory", "pids", "cpu"):
        root = CGROUP_ROOT / ctrl
        if not root.is_dir():
            continue
        for cand in (root / own.get(ctrl, "/").lstrip("/"), root):
            if cand.is_dir() and _probe_dir(cand):
                bases[ctrl] = cand
                break
    if "memory" in bases and "pids" in bases:
        return CgroupMode("v1", "cgroup v1 memory/pids hierarchies are writable", bases)
    return CgroupMode("none", "no writable cgroup (neither delegated v2 nor writable v1): rlimits only")


class Cgroup:
    """One set of cgroup directories for one step; ``close()`` removes them."""

    def __init__(self, mode: CgroupMode, *, memory_mb: int, pids: int, cpus: float) -> None:
        self.mode = mode
        self.name = f"reprodiag-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        self.dirs: list[Path] = []
        if mode.kind == "v2":
            d = mode.base["v2"] / self.name
            d.mkdir()
            self.dirs.append(d)
            _write(d / "memory.max", str(memory_mb * 1024 * 1024))
            _write(d / "memory.swap.max", "0", required=False)
            _write(d / "pids.max", str(pids))
            _write(d / "cpu.max", f"{int(cpus * 100000)} 100000", required=False)
        elif mode.kind == "v1":
            for ctrl, base in mode.base.items():
                d = base / self.name
                d.mkdir()
                self.dirs.append(d)
                if ctrl == "memory":
                    _write(d / "memory.limit_in_bytes", str(memory_mb * 1024 * 1024))
                    _write(d / "memory.memsw.limit_in_bytes", str(memory_mb * 1024 * 1024), required=False)
                elif ctrl == "pids":
                    _write(d / "pids.max", str(pids))
                elif ctrl == "cpu":
                    _write(d / "cpu.cfs_period_us", "100000", required=False)
                    _write(d / "cpu.cfs_quota_us", str(max(1000, int(cpus * 100000))), required=False)
        else:
            raise ValueError("no cgroup support here")

    def join_script(self) -> str:
        """Shell text that moves the shell into every directory, then runs ``"$@"``."""
        writes = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.dirs)
        return f'{writes} && exec "$@"'

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            try:
                out.update(int(x) for x in (d / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return out

    def kill_all(self, deadline_s: float = 5.0) -> int:
        """SIGKILL every member until the group is empty; returns how many were left at the deadline."""
        if self.mode.kind == "v2":
            _write(self.dirs[0] / "cgroup.kill", "1", required=False)
        end = time.monotonic() + deadline_s
        while True:
            left = self.pids()
            if not left:
                return 0
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if time.monotonic() > end:
                return len(left)
            time.sleep(0.01)

    def _event(self, filename: str, key: str) -> int:
        for d in self.dirs:
            try:
                for line in (d / filename).read_text().splitlines():
                    k, _, v = line.partition(" ")
                    if k == key:
                        return int(v)
            except (OSError, ValueError):
                continue
        return 0

    def oom_killed(self) -> bool:
        """The kernel killed a member for exceeding the memory limit."""
        if self.mode.kind == "v2":
            return self._event("memory.events", "oom_kill") > 0
        return self._event("memory.oom_control", "oom_kill") > 0

    def pids_hit(self) -> bool:
        """A fork was refused because of the pids limit."""
        return self._event("pids.events", "max") > 0

    def close(self) -> None:
        self.kill_all(deadline_s=2.0)
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _write(path: Path, value: str, *, required: bool = True) -> None:
    try:
        path.write_text(value)
    except OSError:
        if required:
            raise


def open_cgroup(*, memory_mb: int, pids: int, cpus: float) -> Cgroup | None:
    """A fresh cgroup for one step, or None when this host cannot create one."""
    mode = cgroup_mode()
    if mode.kind == "none":
        return None
    try:
        return Cgroup(mode, memory_mb=memory_mb, pids=pids, cpus=cpus)
    except OSError:
        return None
