"""The work dir's disk quota: a capped tmpfs as root, a polling watchdog otherwise.

Both modes are exercised here (``disk_quota="watch"`` forces the fallback even
as root); the tmpfs cases are skipped with the reason where mounting is refused.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from reprodiag.schema import Step, Verdict
from sandbox.backends.bwrap import BwrapBackend
from sandbox.quota import DiskWatch, inode_cap, open_scratch, stale_mounts
from sandbox.replay import replay_case
from sandbox.spec import load_spec
from tests.conftest import REPO_ROOT
from tests.sandbox.conftest import wait_until

MakeCase = Callable[..., Path]
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def tmpfs_ok(tmp_path_factory: pytest.TempPathFactory) -> None:
    s = open_scratch(1, root=tmp_path_factory.mktemp("probe"))
    try:
        if s.mode != "tmpfs":
            pytest.skip(f"no tmpfs quota here: {s.note}")
    finally:
        s.close()


def our_mounts() -> list[str]:
    return [ln for ln in Path("/proc/self/mountinfo").read_text().splitlines()
            if f"reprodiag-replay-{os.getpid()}-" in ln]


def writer(n_files: int, *, pause: float = 0.0, then_sleep: float = 20) -> str:
    """A run command writing ``n_files`` files of 1 MiB, ignoring errors, printing the count, then sleeping
    (``then_sleep`` s, then it prints the metric: a step that was not stopped by the quota ends that way)."""
    code = (f"import time\nn = 0\nfor i in range({n_files}):\n    try:\n"
            f"        open(f'blob{{i}}', 'wb').write(b'x' * {MiB})\n        n += 1\n    except OSError:\n        pass\n"
            f"    print('written', n, flush=True)\n    time.sleep({pause})\ntime.sleep({then_sleep})\n"
            f"print('score 1.0')\n")
    return code


def replay_sampling_free_space(spec_path: Path, backend: BwrapBackend, root: Path,
                               mode: str) -> tuple[Verdict, int]:
    """Replay while sampling the free space of ``root``'s filesystem; returns (verdict, largest drop in bytes)."""
    base = shutil.disk_usage(root).free
    drop = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal drop
        while not done.is_set():
            drop = max(drop, base - shutil.disk_usage(root).free)
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        v = replay_case(load_spec(spec_path), spec_path, backend, scratch_root=root, disk_quota=mode)  # type: ignore[arg-type]
    finally:
        done.set()
        t.join()
    return v, drop


def assert_stopped_by_the_quota(step: Step) -> None:
    """The step was killed while it ran, by the disk quota: not by its timeout (``timed_out``), and before
    its command could end by itself (it would have exited 0 after printing its metric)."""
    assert not step.timed_out, step
    assert step.exit_code != 0 and step.exit_code is not None, step
    assert "score 1.0" not in step.stdout_tail, step.stdout_tail[-500:]


def quota_case(make_case: MakeCase, name: str, code: str, *, disk_mb: int, setup: bool = False) -> Path:
    run_cmd = "python w.py" if not setup else "echo 'score 1.0'"
    setup_part = '[setup]\ncommands = ["python w.py"]\n' if setup else ""
    body = (f"{setup_part}[run]\ncommand = \"{run_cmd}\"\nmetric_regex = 'score ([0-9.]+)'\ntimeout_s = 60\n"
            f"[fix]\ncommand = \"true\"\n[limits]\ndisk_mb = {disk_mb}\nmemory_mb = 512\n")
    return make_case(name, body, files={"w.py": code})


def test_four_times_the_quota_in_1mib_files_is_stopped_and_the_host_disk_untouched(
        bwrap: BwrapBackend, tmpfs_ok: None, make_case: MakeCase, tmp_path: Path) -> None:
    case = quota_case(make_case, "fill", writer(4 * 32), disk_mb=32)
    root = tmp_path / "scratch-root"
    root.mkdir()
    v, drop = replay_sampling_free_space(case, bwrap, root, "auto")
    assert v.verdict == "error", v.reason
    assert "work dir exceeded disk_mb=32" in v.reason and v.reason.startswith("before:")
    assert_stopped_by_the_quota(v.steps[0])  # once the tmpfs filled: not at the 60 s timeout, nor at its end
    written = [int(m) for m in re.findall(r"written (\d+)", v.steps[0].stdout_tail)]
    assert written and max(written) <= 33  # the kernel refused writes at the cap (a page or so of slack)
    assert drop < 32 * MiB, f"host free space fell by {drop / MiB:.0f} MiB"
    assert our_mounts() == []  # unmounted after the run
    assert list(root.iterdir()) == []


def test_watch_mode_kills_the_step_once_past_the_quota(bwrap: BwrapBackend, make_case: MakeCase,
                                                       tmp_path: Path) -> None:
    case = quota_case(make_case, "fillwatch", writer(4 * 16, pause=0.03), disk_mb=16)
    root = tmp_path / "scratch-root"
    root.mkdir()
    v, drop = replay_sampling_free_space(case, bwrap, root, "watch")
    assert v.verdict == "error", v.reason
    assert "work dir exceeded disk_mb=16" in v.reason
    assert_stopped_by_the_quota(v.steps[0])
    written = [int(m) for m in re.findall(r"written (\d+)", v.steps[0].stdout_tail)]
    assert written and 16 <= max(written) < 4 * 16  # killed mid-way, a little past the cap
    assert drop < 4 * 16 * MiB
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("mode", ["auto", "watch"])
def test_a_hundred_thousand_empty_files_are_stopped(bwrap: BwrapBackend, make_case: MakeCase, tmp_path: Path,
                                                    mode: str) -> None:
    code = ("import os\nn = 0\nfor i in range(100_000):\n    try:\n        open(f'f{i}', 'w').close()\n"
            "        n += 1\n    except OSError:\n        pass\nprint('created', n)\nimport time; time.sleep(20)\n"
            "print('score 1.0')\n")
    case = quota_case(make_case, f"inodes-{mode}", code, disk_mb=16)
    v = replay_case(load_spec(case), case, bwrap, scratch_root=tmp_path, disk_quota=mode)  # type: ignore[arg-type]
    assert v.verdict == "error", v.reason
    assert "work dir exceeded disk_mb=16" in v.reason
    assert_stopped_by_the_quota(v.steps[0])
    created = re.findall(r"created (\d+)", v.steps[0].stdout_tail)
    assert not created or int(created[0]) <= inode_cap(16)  # the cap held, or the watchdog killed it first


def test_the_setup_phase_has_the_same_quota(bwrap: BwrapBackend, make_case: MakeCase, tmp_path: Path) -> None:
    case = quota_case(make_case, "fillsetup", writer(4 * 16), disk_mb=16, setup=True)
    v = replay_case(load_spec(case), case, bwrap, scratch_root=tmp_path)
    assert v.verdict == "error" and v.reason.startswith("setup:") and "exceeded disk_mb=16" in v.reason
    assert [s.phase for s in v.steps] == ["setup"]


@pytest.mark.parametrize("mode", ["auto", "watch"])
def test_a_source_larger_than_the_quota_is_refused(bwrap: BwrapBackend, make_case: MakeCase, tmp_path: Path,
                                                   mode: str) -> None:
    case = quota_case(make_case, f"bigsrc-{mode}", "print('score 1.0')", disk_mb=1)
    (case.parent / "repo" / "data.bin").write_bytes(b"\0" * (2 * MiB))
    v = replay_case(load_spec(case), case, bwrap, scratch_root=tmp_path, disk_quota=mode)  # type: ignore[arg-type]
    assert v.verdict == "error" and "exceeded disk_mb=1" in v.reason
    assert v.steps == []


def test_disk_watch_measures_bytes_and_entries(tmp_path: Path) -> None:
    w = DiskWatch(tmp_path, disk_mb=1, inodes=10)
    assert w.exceeded() is None
    (tmp_path / "a").write_bytes(b"x" * (MiB // 2))
    assert w.exceeded() is None
    (tmp_path / "b").write_bytes(b"x" * MiB)
    assert "exceeded disk_mb=1" in (w.exceeded() or "")
    (tmp_path / "b").unlink()
    for i in range(12):
        (tmp_path / f"e{i}").touch()
    assert "files" in (w.exceeded() or "")
    assert inode_cap(1) == 4096 and inode_cap(1024) == 131072


def test_a_mount_left_by_a_sigkilled_run_is_reaped_by_the_next(bwrap_ok: None, tmpfs_ok: None,
                                                               make_case: MakeCase, tmp_path: Path) -> None:
    case = quota_case(make_case, "killed", "import time; time.sleep(60)", disk_mb=8)
    root = tmp_path / "root"
    root.mkdir()
    code = ("import sys; from pathlib import Path\nfrom sandbox.backends.bwrap import BwrapBackend\n"
            "from sandbox.replay import replay_case\nfrom sandbox.spec import load_spec\n"
            "p = Path(sys.argv[1]); replay_case(load_spec(p), p, BwrapBackend(Path(sys.argv[2]) / 'etc'), "
            "scratch_root=Path(sys.argv[2]))\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(case), str(root)], cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        mine = f"reprodiag-replay-{proc.pid}-"
        assert wait_until(lambda: any(mine in ln for ln in Path("/proc/self/mountinfo").read_text().splitlines()))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    left = [p for p in stale_mounts() if p.name.startswith(mine)]
    assert len(left) == 1 and left[0].parent == root  # the killed run's tmpfs is still mounted
    open_scratch(8, root=root).close()  # the next run starts: it reaps what the dead one left
    assert not any(mine in ln for ln in Path("/proc/self/mountinfo").read_text().splitlines())
    assert not left[0].exists()


@pytest.mark.parametrize("mode", ["auto", "watch"])
def test_a_git_source_larger_than_the_quota_is_refused(bwrap_ok: None, tmp_path: Path, mode: str) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "big.bin").write_bytes(os.urandom(3 * MiB))  # incompressible: the pack is as large
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."],
                ["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "v1"]):
        subprocess.run(cmd, cwd=origin, check=True, env=env)
    case = tmp_path / "case.toml"
    case.write_text(f'id = "biggit"\npaper_value = 1.0\n[source]\ngit = "file://{origin}"\n[run]\n'
                    "command = \"echo 'score 1'\"\nmetric_regex = 'score ([0-9.]+)'\n[fix]\ncommand = \"true\"\n"
                    "[limits]\ndisk_mb = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    v = replay_case(load_spec(case), case, BwrapBackend(tmp_path / "bw"), scratch_root=root,
                    disk_quota=mode)  # type: ignore[arg-type]
    assert v.verdict == "error" and "exceeded disk_mb=1" in v.reason, v.reason
    assert [s.phase for s in v.steps] == ["setup"]
    assert list(root.iterdir()) == []
