"""Fixtures shared by every test package. Package-specific fakes live in tests/<pkg>/conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprodiag.store import Store

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_SCHEMA = REPO_ROOT.parent / "shared" / "github" / "schema.graphql"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty workspace."""
    s = Store(tmp_path / "ws")
    yield s
    s.close()


@pytest.fixture(scope="session")
def sample_threads():  # noqa: ANN201
    from reprodiag.sample import load_sample_threads

    return load_sample_threads()


def run_cli(*args: str, workspace: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``python -m reprodiag ARGS`` in a subprocess (the real console entry point)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "reprodiag"]
    if workspace is not None:
        cmd += ["-w", str(workspace)]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=full_env, timeout=timeout,
                          cwd=REPO_ROOT)


@pytest.fixture(scope="session")
def cli():  # noqa: ANN201
    return run_cli


@pytest.fixture(scope="session")
def demo_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace on which the full offline demo has run once (shared by the whole test session).

    Returns the workspace directory; the demo's datasets and eval outputs are under ``<ws>/demo-out``.
    """
    ws = tmp_path_factory.mktemp("demo") / "ws"
    proc = run_cli("demo", workspace=ws, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ws
