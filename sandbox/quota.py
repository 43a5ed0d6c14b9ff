"""The disk quota of one replay: a scratch directory (work dir, git HOME, local
backend HOME) that no step can grow past ``disk_mb`` MiB or :func:`inode_cap` entries.

Two ways, chosen per run by :func:`open_scratch`:

``tmpfs`` (as root, the CI case)
    The scratch directory is a fresh tmpfs mounted for the run
    (``size=<disk_mb>m,nr_inodes=<inode_cap>,mode=0700,nosuid,nodev``); the case
    source is copied (or cloned) into it. A step that writes more gets ENOSPC
    from the kernel, whatever it does, and the host disk is never written. The
    pages live in RAM: files a step writes there are charged to that step's
    memory cgroup, like its /tmp. The mount point is named
    ``reprodiag-replay-<pid>-<random>`` so that a mount left by a SIGKILLed run
    is unmounted and removed by the next run (:func:`reap_stale`), as stale
    cgroups are. The mount is always unmounted in :meth:`Scratch.close`.
``watch`` (no root, no ``mount``, or the kernel refused it)
    A plain host directory, measured by walking it. Between two polls a fast
    writer can overshoot by what it writes in that time; RLIMIT_FSIZE still
    caps any single file at ``disk_mb``.

In both modes the backends poll :meth:`DiskWatch.exceeded` every
:data:`WATCH_INTERVAL_S` seconds during each step and kill the step's process
tree as soon as the quota is used up (a full tmpfs) or passed; the check also
runs after each step and after the source is copied or cloned.

Either way an exceeded quota ends the case with verdict ``error`` and the
reason "work dir exceeded disk_mb=…".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sandbox.workdir import dir_usage

QuotaMode = Literal["auto", "tmpfs", "watch"]

#: Seconds between two measurements of a watched scratch directory.
WATCH_INTERVAL_S = 0.25
#: Entries (files, directories, links) allowed per MiB of ``disk_mb``, and the floor.
INODES_PER_MB = 128
MIN_INODES = 4096
#: Name prefix of every scratch directory; the creating pid follows it.
PREFIX = "reprodiag-replay-"
_NAME = re.compile(re.escape(PREFIX) + r"(\d+)-")


def inode_cap(disk_mb: int) -> int:
    """Most entries a work dir may hold for a ``disk_mb`` quota (``disk_mb`` × 128, at least 4096)."""
    return max(MIN_INODES, disk_mb * INODES_PER_MB)


@dataclass(frozen=True)
class DiskWatch:
    """The quota of one scratch directory: ``disk_mb`` MiB allocated and ``inodes`` entries at most.

    ``tmpfs``: the directory is a capped tmpfs, and "exceeded" means it is full
    (one ``statvfs``); otherwise the tree is walked and measured.
    """

    path: Path
    disk_mb: int
    inodes: int
    tmpfs: bool = False

    def exceeded(self) -> str | None:
        """The one-line reason when the quota is used up (tmpfs full) or passed (walked), else None."""
        if self.tmpfs:
            try:
                st = os.statvfs(self.path)
            except OSError:
                return None
            if st.f_bfree == 0:
                return f"work dir exceeded disk_mb={self.disk_mb} (its {self.disk_mb} MiB tmpfs is full)"
            if st.f_ffree == 0:
                return f"work dir exceeded disk_mb={self.disk_mb} (its limit of {self.inodes} files is reached)"
            return None
        use = dir_usage(self.path, reopen=True)
        if use.bytes > self.disk_mb * 1024 * 1024:
            return f"work dir exceeded disk_mb={self.disk_mb} ({use.bytes / 1048576:.1f} MiB written)"
        if use.inodes > self.inodes:
            return f"work dir exceeded disk_mb={self.disk_mb} ({use.inodes} files, over its limit of {self.inodes})"
        return None


class Scratch:
    """One run's scratch directory under its quota; ``close()`` unmounts (tmpfs) and removes it.

    ``mode`` is ``tmpfs`` or ``watch``; ``note`` says why that mode was used;
    ``watch`` is the :class:`DiskWatch` the backends poll during each step
    (with tmpfs the kernel enforces the cap and the poll only stops a step
    that keeps running once the tmpfs is full).
    """

    def __init__(self, path: Path, disk_mb: int, mode: Literal["tmpfs", "watch"], note: str) -> None:
        self.path = path
        self.disk_mb = disk_mb
        self.mode = mode
        self.note = note
        self.watch = DiskWatch(path, disk_mb, inode_cap(disk_mb), tmpfs=mode == "tmpfs")

    def exceeded(self) -> str | None:
        """The one-line reason when the quota is used up or passed, else None."""
        return self.watch.exceeded()

    def close(self) -> None:
        if self.mode == "tmpfs":
            _umount(self.path)
        else:
            dir_usage(self.path, reopen=True)  # undo any chmod 000 a step left, so the tree can be removed
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_scratch(disk_mb: int, *, root: Path | None = None, mode: QuotaMode = "auto") -> Scratch:
    """A new scratch directory under ``root`` (default: the temp dir) with a ``disk_mb`` MiB quota.

    ``auto`` mounts a tmpfs when running as root and falls back to ``watch``
    if that fails; ``tmpfs`` is the same but says so in ``note`` when it falls
    back; ``watch`` never mounts. Stale scratch directories of dead runs are
    reaped first.
    """
    reap_stale(root)
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root))
    if mode == "watch":
        return Scratch(path, disk_mb, "watch", "disk quota by polling (requested)")
    why = _mount_tmpfs(path, disk_mb, inode_cap(disk_mb))
    if why is None:
        return Scratch(path, disk_mb, "tmpfs", f"tmpfs of {disk_mb} MiB, {inode_cap(disk_mb)} files")
    return Scratch(path, disk_mb, "watch", f"disk quota by polling ({why})")


def _mount_tmpfs(path: Path, disk_mb: int, inodes: int) -> str | None:
    """Mount the capped tmpfs on ``path``; None on success, else why not."""
    if os.geteuid() != 0:
        return "not root, cannot mount a tmpfs"
    exe = shutil.which("mount")
    if exe is None:
        return "mount(8) is not installed"
    opts = f"size={disk_mb}m,nr_inodes={inodes},mode=0700,nosuid,nodev"
    try:
        proc = subprocess.run([exe, "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True,
                              timeout=30, check=False, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"mount failed: {exc}"
    if proc.returncode != 0:
        return "mount refused: " + " ".join(proc.stderr.split())[:160]
    return None


def _umount(path: Path) -> None:
    exe = shutil.which("umount") or "umount"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
    for args in ([exe, str(path)], [exe, "-l", str(path)]):
        try:
            if subprocess.run(args, capture_output=True, timeout=30, check=False, env=env).returncode == 0:
                return
        except (OSError, subprocess.TimeoutExpired):
            continue


def _unescape(field: str) -> str:
    """Undo the octal escapes (``\\040`` …) of a /proc/self/mountinfo path."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _alive(pid: int) -> bool:
    return pid == os.getpid() or Path(f"/proc/{pid}").exists()


def stale_mounts() -> list[Path]:
    """tmpfs mount points of scratch directories whose creating process is gone."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    out: list[Path] = []
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.startswith("tmpfs "):
            continue
        point = Path(_unescape(fields[4]))
        m = _NAME.match(point.name)
        if m and not _alive(int(m.group(1))):
            out.append(point)
    return out


def reap_stale(root: Path | None = None) -> list[Path]:
    """Unmount and remove scratch directories left by runs that were killed; returns what was reaped.

    Looks at every such tmpfs in this mount namespace and at the unmounted
    leftovers (watch mode) directly under ``root`` (default: the temp dir).
    """
    reaped: list[Path] = []
    for point in stale_mounts():
        _umount(point)
        shutil.rmtree(point, ignore_errors=True)
        reaped.append(point)
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    try:
        leftovers = list(base.glob(f"{PREFIX}*-*"))
    except OSError:
        leftovers = []
    for d in leftovers:
        m = _NAME.match(d.name)
        if m and not _alive(int(m.group(1))) and d.is_dir() and not os.path.ismount(d):
            shutil.rmtree(d, ignore_errors=True)
            reaped.append(d)
    return reaped
