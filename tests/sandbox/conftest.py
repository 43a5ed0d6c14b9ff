"""Fixtures for the sandbox tests: a bwrap backend (skipped with the reason when
bwrap cannot run), a loopback TCP server, and a tiny case-directory factory.

No test here asserts how long something took (a busy machine only makes things slower): a wait for a
condition polls until it holds, with a generous bound (:data:`PATIENCE_S`) that only a hang reaches."""

from __future__ import annotations

import socket
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest

from sandbox.backends.base import StepRequest
from sandbox.backends.bwrap import BwrapBackend, bwrap_status

#: How long a test waits for something that must happen (a hang, not a slow machine, reaches it).
PATIENCE_S = 120.0
T = TypeVar("T")


@pytest.fixture(scope="session")
def bwrap_ok() -> None:
    ok, why = bwrap_status()
    if not ok:
        pytest.skip(f"bwrap cannot run here: {why}")


@pytest.fixture
def bwrap(bwrap_ok: None, tmp_path: Path) -> BwrapBackend:
    return BwrapBackend(tmp_path / "scratch")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    w = tmp_path / "work"
    w.mkdir()
    return w


@pytest.fixture
def step(workdir: Path) -> Callable[..., StepRequest]:
    def make(command: str, **kw: object) -> StepRequest:
        kw.setdefault("timeout_s", 30)
        kw.setdefault("phase", "before")
        return StepRequest(command=command, workdir=workdir, **kw)  # type: ignore[arg-type]

    return make


@contextmanager
def recording_server(srv: socket.socket, recv_bytes: int = 1024) -> Iterator[list[bytes]]:
    """Serve the listening socket ``srv`` in a thread, recording what each connection sends; closes it."""
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    got.append(conn.recv(recv_bytes))
                except OSError:
                    got.append(b"")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield got
    finally:
        stop.set()
        t.join(2)
        srv.close()


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records what each connection sends."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    with recording_server(srv) as got:
        yield srv.getsockname()[1], got


def host_lan_ip() -> str | None:
    """The host's own non-loopback IPv4 address (None if it has none)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))  # UDP: picks the outgoing address, sends nothing
        ip = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if ip.startswith("127.") else ip


@pytest.fixture
def lan_server() -> Iterator[tuple[str, int, list[bytes]]]:
    """A TCP server on all the host's addresses, reached through its non-loopback one: what a setup step's
    own network (slirp4netns NAT) may reach, where no test has the internet. Skipped without slirp4netns."""
    import shutil

    ip = host_lan_ip()
    if ip is None or shutil.which("slirp4netns") is None:
        pytest.skip("needs slirp4netns and a non-loopback IPv4 address on this host")
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", 0))
    srv.listen(8)
    with recording_server(srv) as got:
        yield ip, srv.getsockname()[1], got


CaseFactory = Callable[..., Path]


@pytest.fixture
def make_case(tmp_path: Path) -> CaseFactory:
    """Write ``<tmp>/<id>/case.toml`` plus ``repo/`` files; returns the TOML path.

    ``files`` maps repo-relative paths to contents; ``body`` is TOML appended
    after the header (must hold [run] and [fix]).
    """

    def make(case_id: str, body: str, *, files: dict[str, str] | None = None, paper: float = 1.0,
             reported: float | None = None, extra: str = "") -> Path:
        d = tmp_path / "cases" / case_id
        (d / "repo").mkdir(parents=True, exist_ok=True)
        for rel, content in (files or {}).items():
            p = d / "repo" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content)
        head = f'id = "{case_id}"\npaper_value = {paper}\n'
        if reported is not None:
            head += f"reported_value = {reported}\n"
        head += extra + '\n[source]\npath = "repo"\n'
        (d / "case.toml").write_text(head + textwrap.dedent(body))
        return d / "case.toml"

    return make


def procs_with(marker: str) -> list[psutil.Process]:
    """Live processes whose command line contains ``marker``."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in (p.info["cmdline"] or [])):
                out.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def wait_until(cond: Callable[[], Any], within_s: float = PATIENCE_S) -> Any:
    """Poll ``cond`` until it is truthy (returned at once) or ``within_s`` passed (then its last value)."""
    end = time.monotonic() + within_s
    while not (got := cond()) and time.monotonic() < end:
        time.sleep(0.02)
    return got


def gone(marker: str, within_s: float = PATIENCE_S) -> list[psutil.Process]:
    """The processes carrying ``marker`` still alive once they are all gone or ``within_s`` passed."""
    wait_until(lambda: not procs_with(marker), within_s)
    return procs_with(marker)


def finishes(fn: Callable[[], T], within_s: float = PATIENCE_S) -> T:
    """``fn()``, run on a thread; fails (instead of hanging the suite) if it has not returned in ``within_s``."""
    box: list[Any] = []

    def call() -> None:
        try:
            box.append((True, fn()))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            box.append((False, exc))

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(within_s)
    assert not t.is_alive(), f"still running after {within_s:g} s: something was not stopped"
    ok, value = box[0]
    if not ok:
        raise value
    return value


def settled(got: list[bytes], address: str | tuple[str, int]) -> list[bytes]:
    """What a :func:`recording_server` at ``address`` had received before now, in order: a sentinel is sent
    through a new connection and awaited; connections are accepted in turn, so every one made before it is
    recorded by then (no sleeping and hoping). Returns ``got`` without the sentinel."""
    sentinel = f"sentinel-{uuid.uuid4().hex[:12]}".encode()
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(address)
        s.sendall(sentinel)
    assert wait_until(lambda: sentinel in got), "the recording server never saw the sentinel"
    return [g for g in got if g != sentinel]
