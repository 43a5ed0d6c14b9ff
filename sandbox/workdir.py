"""Work directories: a fresh copy of the case source per run, its size, and
reading files the sandbox wrote without following links out of the tree."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

#: Largest file read back from a work dir (metric JSON), in bytes.
MAX_READ_BYTES = 16 * 1024 * 1024


def copy_source(src: Path, dst: Path) -> int:
    """Copy ``src`` into the new directory ``dst``: regular files and directories, symlinks
    re-created as symlinks (never followed), everything else (fifos, sockets, devices) skipped.
    Returns the number of entries copied."""
    n = 0
    dst.mkdir(parents=True, exist_ok=False)
    for root, dirs, files in os.walk(src, followlinks=False):
        rel = Path(root).relative_to(src)
        target_root = dst / rel
        for name in list(dirs):
            s = Path(root) / name
            st = s.lstat()
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(s), target_root / name)
                dirs.remove(name)
                n += 1
            else:
                (target_root / name).mkdir()
                n += 1
        for name in files:
            s = Path(root) / name
            st = s.lstat()
            t = target_root / name
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(s), t)
            elif stat.S_ISREG(st.st_mode):
                shutil.copyfile(s, t, follow_symlinks=False)
                os.chmod(t, stat.S_IMODE(st.st_mode) | stat.S_IRUSR | stat.S_IWUSR)
            else:
                continue
            n += 1
    return n


@dataclass(frozen=True)
class DirUsage:
    """What a tree holds: ``bytes`` allocated (each inode once) and ``inodes`` (entries, the root excluded)."""

    bytes: int
    inodes: int


def dir_usage(path: Path, *, reopen: bool = False) -> DirUsage:
    """Bytes allocated and entries under ``path`` (links not followed; each inode counted once).

    A directory that cannot be listed (a step may ``chmod 000`` one to hide its
    contents from this walk) is made ``u+rwx`` and listed when ``reopen`` is
    set; otherwise it counts as one empty entry.

    The walk holds each directory open and reaches the next one relative to
    it with ``O_NOFOLLOW`` (and chmods the inode it holds, never a path), so a
    running step that swaps a directory for a symlink while it is measured
    cannot make the host list, or chmod, anything outside the tree.
    Directories nested deeper than the open-file limit allows are skipped.
    """
    total = 0
    entries = 0
    seen: set[tuple[int, int]] = set()
    try:
        root = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return DirUsage(0, 0)
    stack: list[tuple[int, list[os.DirEntry[str]]]] = [(root, _listing(root))]
    try:
        while stack:
            dfd, todo = stack[-1]
            if not todo:
                os.close(dfd)
                stack.pop()
                continue
            e = todo.pop()
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            entries += 1
            total += max(st.st_size if stat.S_ISREG(st.st_mode) else 0, st.st_blocks * 512)
            if stat.S_ISDIR(st.st_mode):
                child = _open_dir(e.name, dfd, reopen=reopen)
                if child is not None:
                    stack.append((child, _listing(child)))
    finally:
        for dfd, _ in stack:
            os.close(dfd)
    return DirUsage(total, entries)


def _listing(dfd: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(dfd) as it:
            return list(it)
    except OSError:
        return []


def _open_dir(name: str, parent: int, *, reopen: bool) -> int | None:
    """``name`` in the directory ``parent`` opened for listing, never through a link; with
    ``reopen``, an unreadable directory is first made ``u+rwx`` (through the O_PATH descriptor)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent)
    except PermissionError:
        if not reopen:
            return None
    except OSError:
        return None
    try:
        pfd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError:
        return None
    try:
        os.chmod(f"/proc/self/fd/{pfd}", 0o700)
        return os.open(".", flags, dir_fd=pfd)
    except OSError:
        return None
    finally:
        os.close(pfd)


def dir_size(path: Path) -> int:
    """Bytes allocated under ``path`` (links not followed; each inode counted once)."""
    return dir_usage(path).bytes


def read_inside(root: Path, rel: str, limit: int = MAX_READ_BYTES) -> bytes:
    """Read ``root/rel`` only if it is a regular file inside ``root`` reached without any symlink.

    Raises ``ValueError`` with a one-line reason otherwise (outside the tree, a
    link, not a regular file, larger than ``limit`` bytes).
    """
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise ValueError(f"{rel!r} is not a relative path inside the work dir")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | (0 if last else os.O_DIRECTORY)
            try:
                nfd = os.open(part, flags | os.O_NONBLOCK, dir_fd=fd)
            except OSError as exc:
                raise ValueError(f"cannot open {rel!r} in the work dir without following links "
                                 f"({exc.strerror})") from None
            os.close(fd)
            fd = nfd
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{rel!r} is not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{rel!r} is {st.st_size} bytes, over the {limit}-byte limit")
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            return fh.read(limit + 1)[:limit]
    finally:
        if fd >= 0:
            os.close(fd)
