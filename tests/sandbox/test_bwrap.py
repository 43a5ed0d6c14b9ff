"""Hostile-code probes against the bwrap backend (skipped with the reason only if bwrap cannot run)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from reprodiag.schema import LimitsSpec
from sandbox.backends.base import StepRequest
from sandbox.backends.bwrap import BwrapBackend
from sandbox.limits import cgroup_mode
from sandbox.pipeline import run_replay
from tests.sandbox.conftest import finishes, gone, procs_with, settled, wait_until

Step = Callable[..., StepRequest]




def test_runs_with_the_project_interpreter(bwrap: BwrapBackend, step: Step) -> None:
    r = bwrap.run(step("python -c 'import sys, numpy; print(sys.prefix); print(numpy.__name__)'; id -u"))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.split() == [sys.prefix, "numpy", "1000"]


def test_no_network_to_a_host_loopback_server(bwrap: BwrapBackend, step: Step,
                                              loopback_server: tuple[int, list[bytes]]) -> None:
    port, got = loopback_server
    probe = (f"python -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=3); "
             f"s.sendall(b'leak'); print('connected')\"")
    r = bwrap.run(step(probe))
    assert r.exit_code != 0
    assert "connected" not in r.stdout
    for phase in ("before", "fix", "after"):  # asking for the network outside setup is ignored
        r = bwrap.run(step(probe, network=True, phase=phase))
        assert r.exit_code != 0 and "connected" not in r.stdout
    # a setup step that asks for the network gets its own (slirp4netns), never the host's loopback
    r = bwrap.run(step(probe, network=True, phase="setup"))
    assert r.exit_code != 0 and "connected" not in r.stdout
    assert settled(got, ("127.0.0.1", port)) == []  # no connection reached the server, not even an empty one


def test_setup_step_with_network_reaches_out_through_its_own_network(
        bwrap: BwrapBackend, step: Step, lan_server: tuple[str, int, list[bytes]]) -> None:
    """Control (no test has the internet): a server on the host's LAN address is reached from a networked
    setup step, through NAT, and from no other step."""
    ip, port, got = lan_server
    probe = (f"python -c \"import socket; s = socket.create_connection(('{ip}', {port}), timeout=3); "
             f"s.sendall(b'out'); print('connected')\"")
    r = bwrap.run(step(probe, network=True, phase="setup"))
    assert "connected" in r.stdout, r.stderr
    assert "without a network" not in r.stderr
    for phase in ("before", "fix", "after"):
        r = bwrap.run(step(probe, network=True, phase=phase))
        assert r.exit_code != 0 and "connected" not in r.stdout
    assert wait_until(lambda: b"out" in got), got  # the networked setup step's connection arrives
    assert settled(got, (ip, port)) == [b"out"]  # and it is the only one


def test_writes_outside_the_work_dir_fail(bwrap: BwrapBackend, step: Step, tmp_path: Path, workdir: Path) -> None:
    outside = tmp_path / "outside.txt"
    import sysconfig

    targets = [str(outside), "/usr/pwned", "/etc/pwned", f"{sys.prefix}/pwned", "/pwned", "/root/pwned",
               f"{Path(sys.executable).resolve().parent}/pwned", f"{sysconfig.get_paths()['purelib']}/pwned.py",
               f"{sys.base_prefix}/pwned", f"{Path(os.__file__).parent}/pwned.py", "/dev/pwned", "/proc/pwned",
               "/home/pwned", "/opt/pwned", "/var/pwned"]
    script = "; ".join(f"(echo x > {t}) 2>/dev/null && echo WROTE {t}" for t in targets)
    r = bwrap.run(step(script + "; echo ok > inside.txt; echo done"))
    assert "WROTE" not in r.stdout, r.stdout
    assert "done" in r.stdout
    assert not outside.exists()
    for t in targets[1:]:
        assert not Path(t).exists()
    assert (workdir / "inside.txt").read_text() == "ok\n"  # control: the work dir is writable


def test_host_secrets_are_invisible(bwrap: BwrapBackend, step: Step, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"GITHUB_TOKEN": "ghp_secretvalue1234567890", "OPENAI_API_KEY": "sk-secretvalue0987654321",
               "ANTHROPIC_API_KEY": "sk-ant-secretvalue", "AWS_SECRET_ACCESS_KEY": "awssecretvalue"}
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    r = bwrap.run(step("env; cat /proc/self/environ; cat /proc/1/environ; cat /proc/*/environ; "
                       "cat /proc/1/cmdline /proc/*/cmdline; echo end"))
    assert r.exit_code == 0 and "end" in r.stdout
    for k, v in secrets.items():
        assert k not in r.stdout and v not in r.stdout
    assert "PWD=/work" not in r.stdout  # not even the host's working directory


def test_sys_and_dev_hold_nothing_sensitive(bwrap: BwrapBackend, step: Step) -> None:
    r = bwrap.run(step(
        "ls -A /sys 2>/dev/null | wc -l; find /dev -type b | wc -l; ls /dev | tr '\\n' ' '; echo; "
        "for d in mem kmem port kmsg sda vda nvme0 loop0 mapper console fuse; do test -e /dev/$d && echo HAS-$d; done; "
        "(echo x > /dev/pwned) 2>/dev/null && echo DEV-WRITABLE; "
        "head -c 100 /dev/urandom | wc -c; echo ok > /dev/shm/s && cat /dev/shm/s; "
        "cat /proc/kmsg 2>/dev/null | head -c 1 | wc -c"))
    lines = r.stdout.splitlines()
    assert lines[0] == "0"             # no /sys at all (GPU steps only get it read-only)
    assert lines[1] == "0"             # no block devices
    assert set(lines[2].split()) <= {"core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin",
                                      "stdout", "tty", "urandom", "zero"}
    assert not any(ln.startswith("HAS-") for ln in lines), r.stdout
    assert "DEV-WRITABLE" not in r.stdout
    assert lines[-3:] == ["100", "ok", "0"]  # the harmless devices and /dev/shm work


def test_hard_links_to_host_files_fail(bwrap: BwrapBackend, step: Step, workdir: Path) -> None:
    targets = ["/etc/passwd", "/etc/hosts", "/usr/bin/env", sys.executable, f"{sys.prefix}/pyvenv.cfg"]
    r = bwrap.run(step("; ".join(f"ln {t} hl{i} 2>&1 && echo LINKED" for i, t in enumerate(targets))
                       + "; echo x > own; ln own own2 && echo SELF-OK"))
    assert "LINKED" not in r.stdout, r.stdout
    assert r.stdout.count("Invalid cross-device link") == len(targets)
    assert "SELF-OK" in r.stdout  # control: links inside the work dir work


def test_privilege_changes_fail(bwrap: BwrapBackend, step: Step) -> None:
    r = bwrap.run(step(
        "unshare -U true 2>/dev/null && echo UNSHARE-USER; unshare -m true 2>/dev/null && echo UNSHARE-MNT; "
        "unshare -n true 2>/dev/null && echo UNSHARE-NET; mkdir -p m; mount -t tmpfs none m 2>/dev/null && echo MOUNTED; "
        "python -c 'import os; os.setuid(0)' 2>/dev/null && echo SETUID; "
        "python -c 'import os; os.setgid(0)' 2>/dev/null && echo SETGID; "
        "python -c 'import os; os.chroot(\"/tmp\")' 2>/dev/null && echo CHROOT; "
        "grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status; id -u; echo end"))
    assert "end" in r.stdout
    for bad in ("UNSHARE-USER", "UNSHARE-MNT", "UNSHARE-NET", "MOUNTED", "SETUID", "SETGID", "CHROOT"):
        assert bad not in r.stdout, bad
    caps = [ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("Cap")]
    assert caps and all(int(c, 16) == 0 for c in caps)


def test_kill_minus_one_reaches_only_the_sandbox(bwrap: BwrapBackend, step: Step) -> None:
    host = subprocess.Popen(["sleep", "60.123"])
    try:
        r = bwrap.run(step("sleep 60.456 & sleep 0.2; kill -9 -1; sleep 0.2; "
                           "ls /proc | grep -c '^[0-9]'; echo survived-inside", timeout_s=20))
        assert "survived-inside" in r.stdout  # kill -1 spares the caller
        assert host.poll() is None            # the host process is untouched
        assert os.getppid() > 1 and psutil.Process().is_running()
        assert procs_with("60.456") == []
    finally:
        host.kill()
        host.wait()


def test_fork_bomb_is_contained(bwrap: BwrapBackend, step: Step) -> None:
    marker = "forkbomb-7f3a"
    bomb = (f"python -c \"import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
            f"        time.sleep(0.01)\" {marker}")
    r = finishes(lambda: bwrap.run(step(bomb, timeout_s=4, limits=LimitsSpec(pids=32))))  # the kill ends it
    assert r.timed_out and r.exit_code is None  # stopped by its 4 s timeout (the bomb itself never ends)
    if r.limiter.startswith("cgroup"):
        assert r.pids_limited
    assert gone(marker) == []
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork


def test_memory_hog_is_killed(bwrap: BwrapBackend, step: Step) -> None:
    hog = "python -c \"x = bytearray(600 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096]); print('survived')\""
    r = bwrap.run(step(hog, limits=LimitsSpec(memory_mb=128)))
    assert r.exit_code != 0
    assert "survived" not in r.stdout
    if r.limiter.startswith("cgroup"):
        assert r.oom_killed


def test_infinite_loop_killed_at_timeout_with_no_child_left(bwrap: BwrapBackend, step: Step) -> None:
    marker = "4242.1717"
    r = finishes(lambda: bwrap.run(step(f"sleep {marker} & (setsid sleep {marker} &) ; "
                                        f"nohup sleep {marker} >/dev/null 2>&1 & while :; do :; done", timeout_s=1.5)))
    assert r.timed_out and r.exit_code is None  # killed by the timeout: the loop never ends by itself
    assert r.duration_s >= 1.5  # and not before it (a floor: a busy machine only makes it later)
    assert gone(marker) == []
    assert r.leftover == 0


def test_proc_of_the_host_is_not_visible(bwrap: BwrapBackend, step: Step) -> None:
    marker_proc = subprocess.Popen(["sleep", "31.4159"])
    try:
        r = bwrap.run(step('M=31; grep -l "${M}.4159" /proc/[0-9]*/cmdline; ls /proc | grep -c "^[0-9]"; '
                           f"test -e /proc/{os.getpid()}/cmdline && echo 'SEES''-HOST'; cat /proc/1/cmdline"))
    finally:
        marker_proc.kill()
        marker_proc.wait()
    lines = r.stdout.split("\n")
    assert not any("/cmdline" in ln for ln in lines[:1])
    assert int(lines[0]) < 10            # only the sandbox's own few processes
    assert "SEES-HOST" not in r.stdout or os.getpid() < 10
    assert "bwrap" in r.stdout or "sh" in r.stdout


def test_symlinks_in_the_case_repo_cannot_reach_host_files(bwrap_ok: None, make_case: Callable[..., Path],
                                                           tmp_path: Path) -> None:
    host_secret = tmp_path / "host_secret.txt"
    host_secret.write_text("TOP-SECRET-HOST-DATA\n")
    case = make_case(
        "symlinks",
        """
        [run]
        command = "cat passwd_link; cat secret_link; cat home_link/.bashrc; echo x >> secret_link; echo x > etc_dir/pwned; echo 'score 1.0'"
        metric_regex = 'score ([0-9.]+)'
        [fix]
        command = "true"
        """,
    )
    repo = case.parent / "repo"
    os.symlink("/etc/passwd", repo / "passwd_link")
    os.symlink(host_secret, repo / "secret_link")
    os.symlink(os.path.expanduser("~"), repo / "home_link")
    os.symlink("/etc", repo / "etc_dir")
    out = tmp_path / "v.json"
    run_replay(None, cases=[case], backend="bwrap", output=out)
    import json

    v = json.loads(out.read_text())
    text = " ".join(s["stdout_tail"] + s["stderr_tail"] for s in v["steps"])
    assert "TOP-SECRET-HOST-DATA" not in text
    host_passwd_first = Path("/etc/passwd").read_text().splitlines()[1]
    assert host_passwd_first not in text or host_passwd_first.startswith("sandbox:")
    assert host_secret.read_text() == "TOP-SECRET-HOST-DATA\n"
    assert not Path("/etc/pwned").exists()
    assert os.path.islink(repo / "secret_link")  # the case's own tree is untouched


def test_limits_use_cgroups_when_the_host_allows() -> None:
    mode = cgroup_mode()
    assert mode.kind in ("v1", "v2", "none")
    assert mode.reason


def test_an_interpreter_dir_under_tmp_stays_visible_read_only(bwrap: BwrapBackend, step: Step,
                                                               tmp_path: Path) -> None:
    """A checkout (and its .venv) under /tmp must not be hidden by the sandbox's private /tmp."""
    import shutil

    from sandbox.backends.base import sandbox_env
    from sandbox.backends.bwrap import build_bwrap_argv

    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "checkout" / ".venv"
    venv.mkdir(parents=True)
    (venv / "marker.txt").write_text("venv-visible")
    s = step("cat " + str(venv / "marker.txt") + "; touch " + str(venv / "w") + " 2>/dev/null && echo WROTE; "
             "touch /tmp/private && echo TMP-WRITABLE")
    argv = build_bwrap_argv(s, bwrap=shutil.which("bwrap") or "bwrap", etc_dir=str(bwrap.etc_dir),
                            privileged=os.geteuid() == 0, env=sandbox_env(s), ro_dirs=[str(venv)])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert "venv-visible" in out.stdout, out.stderr
    assert "WROTE" not in out.stdout and "TMP-WRITABLE" in out.stdout
    assert not (venv / "w").exists()


def test_without_slirp4netns_a_networked_setup_step_gets_no_network(
        bwrap: BwrapBackend, step: Step, lan_server: tuple[str, int, list[bytes]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: the host's network is never shared, even when slirp4netns cannot be found."""
    ip, port, got = lan_server
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    probe = f"python -c \"import socket; socket.create_connection(('{ip}', {port}), timeout=3); print('connected')\""
    r = bwrap.run(step(probe, network=True, phase="setup"))
    assert r.exit_code != 0 and "connected" not in r.stdout
    assert "without a network: slirp4netns is not installed" in r.stderr
    assert "Network is unreachable" in r.stderr, r.stderr  # python ran; the network was not there
    assert settled(got, (ip, port)) == []
