"""Choosing a backend: ``auto`` prefers bwrap, then a docker/podman engine that answers; never local."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from reprodiag.errors import UserError
from sandbox.backends.base import SandboxBackend

BACKENDS = ("auto", "bwrap", "docker", "podman", "local")


@dataclass(frozen=True)
class Choice:
    """The backend to use (None: none is usable, cases are skipped) and why."""

    name: str | None
    reason: str


def choose_backend(requested: str, *, unsafe_local: bool) -> Choice:
    """Resolve ``requested`` to a usable backend name, with the reason printed to the user."""
    from sandbox.backends.bwrap import bwrap_status
    from sandbox.backends.container import engine_status

    if requested not in BACKENDS:
        raise UserError(f"--backend: unknown backend {requested!r}; choose one of {', '.join(BACKENDS)}")
    if requested == "local":
        if not unsafe_local:
            raise UserError("--backend local runs case code with NO isolation; add --unsafe-local to allow it")
        return Choice("local", "local backend requested with --unsafe-local: NO ISOLATION")
    if requested in ("docker", "podman"):
        ok, why = engine_status(requested)
        return Choice(requested if ok else None, why)
    ok, why = bwrap_status() if sys.platform.startswith("linux") else (False, "bwrap needs Linux")
    if requested == "bwrap":
        return Choice("bwrap" if ok else None, why)
    if ok:
        return Choice("bwrap", f"auto: {why}")
    reasons = [why]
    for engine in ("docker", "podman"):
        eok, ewhy = engine_status(engine)
        if eok:
            return Choice(engine, f"auto: bwrap unusable ({why}); {ewhy}")
        reasons.append(ewhy)
    return Choice(None, "no isolation backend is usable: " + "; ".join(reasons))


def make_backend(name: str, scratch: Path) -> SandboxBackend:
    """Instantiate a backend chosen by :func:`choose_backend`."""
    if name == "bwrap":
        from sandbox.backends.bwrap import BwrapBackend

        return BwrapBackend(scratch)
    if name in ("docker", "podman"):
        from sandbox.backends.container import ContainerBackend

        return ContainerBackend(name)
    if name == "local":
        from sandbox.backends.local import LocalBackend

        return LocalBackend()
    raise UserError(f"unknown backend {name!r}")
