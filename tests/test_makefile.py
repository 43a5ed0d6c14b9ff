"""The two README commands install what they need: `make demo` runs `sysdeps-sandbox`, which installs
bubblewrap and slirp4netns with apt-get when root and missing, and `make test` runs `sysdeps`, which also
installs chromium for the review page's browser tests (checked with a fake apt-get)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _fake_bin(tmp_path: Path) -> Path:
    b = tmp_path / "bin"
    b.mkdir()
    (b / "id").write_text("#!/bin/sh\necho 0\n")
    (b / "apt-get").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'apt.log'}\n")
    for tool in ("id", "apt-get"):
        (b / tool).chmod(0o755)
    return b


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_sysdeps_installs_the_sandbox_packages_when_missing(tmp_path: Path) -> None:
    b = _fake_bin(tmp_path)
    proc = subprocess.run([shutil.which("make") or "make", "-s", "sysdeps"], cwd=ROOT, capture_output=True,
                          text=True, env={"PATH": str(b), "HOME": str(tmp_path)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "apt.log").read_text()
    assert "install -y -qq bubblewrap" in log and "install -y -qq slirp4netns" in log
    assert "install -y -qq chromium" in log


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_demo_installs_no_browser(tmp_path: Path) -> None:
    """The browser is for the tests only: `make demo` on a fresh machine installs the sandbox packages alone."""
    b = _fake_bin(tmp_path)
    proc = subprocess.run([shutil.which("make") or "make", "-s", "sysdeps-sandbox"], cwd=ROOT, capture_output=True,
                          text=True, env={"PATH": str(b), "HOME": str(tmp_path)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "apt.log").read_text()
    assert "install -y -qq bubblewrap" in log and "chromium" not in log


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["demo", "test"])
def test_both_readme_commands_run_sysdeps_first(target: str, tmp_path: Path) -> None:
    proc = subprocess.run([shutil.which("make") or "make", "-n", target], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PATH": str(_fake_bin(tmp_path)) + ":" + os.environ.get("PATH", "")},
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "apt-get install" in out and out.index("apt-get install") < out.index(
        "reprodiag -w" if target == "demo" else "pytest")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_demo_installs_only_the_package_and_its_cases_extra(tmp_path: Path) -> None:
    """`make demo` on a fresh machine: no `dev` extra (Ray, pytest, ruff, notebooks), only what the demo runs."""
    env = {**os.environ, "PATH": str(_fake_bin(tmp_path)) + ":" + os.environ.get("PATH", "")}
    proc = subprocess.run([shutil.which("make") or "make", "-n", "-B", "demo"], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    installs = [ln for ln in proc.stdout.splitlines() if "pip install" in ln]
    assert installs and all("[cases]" in ln and "dev" not in ln for ln in installs), installs
    test = subprocess.run([shutil.which("make") or "make", "-n", "-B", "test"], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=60)
    assert any("[dev]" in ln for ln in test.stdout.splitlines() if "pip install" in ln)
