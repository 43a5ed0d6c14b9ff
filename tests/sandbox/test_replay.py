"""Hostile cases replayed end to end (replay_case with the bwrap backend): output floods, daemons,
SIGTERM-proof processes, FIFO/symlink metrics, network outside setup, hostile git sources."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from reprodiag.schema import Verdict
from sandbox.backends.base import StepRequest, StepResult
from sandbox.backends.bwrap import BwrapBackend
from sandbox.replay import TAIL_CHARS, replay_case
from sandbox.spec import load_spec
from tests.sandbox.conftest import finishes, gone, procs_with, settled, wait_until

MakeCase = Callable[..., Path]
FIX = '[fix]\ncommand = "true"\n'


def replay(path: Path, backend: BwrapBackend, tmp_path: Path) -> Verdict:
    return replay_case(load_spec(path), path, backend, scratch_root=tmp_path)




def test_two_gigabytes_of_output_keep_a_bounded_tail_and_bounded_host_memory(
        bwrap: BwrapBackend, make_case: MakeCase, tmp_path: Path) -> None:
    case = make_case("flood", "[run]\ncommand = \"yes flood | head -c 2000000000; echo; echo 'score 1.0'\"\n"
                     "metric_regex = 'score ([0-9.]+)'\ntimeout_s = 120\n" + FIX)
    me = psutil.Process()
    base = me.memory_info().rss
    peak = base
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, me.memory_info().rss)
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        v = replay(case, bwrap, tmp_path)
    finally:
        done.set()
        t.join()
    assert v.verdict == "symptom_not_reproduced" or v.verdict == "confirmed", v.reason  # it ran to the end
    first = v.steps[0]
    assert first.exit_code == 0 and first.metric == 1.0  # the metric after the flood is still read
    assert len(first.stdout_tail) <= TAIL_CHARS and first.stdout_tail.rstrip().endswith("score 1.0")
    assert peak - base < 200 * 1024 * 1024, f"host RSS grew by {(peak - base) >> 20} MiB"


class _CountingBackend:
    """The bwrap backend, counting before each step the host's live processes that carry ``marker``."""

    def __init__(self, inner: BwrapBackend, marker: str) -> None:
        self.inner, self.name, self.marker = inner, inner.name, marker
        self.alive_before: list[tuple[str, int | None, int]] = []  # (phase, seed, processes)

    def run(self, step: StepRequest) -> StepResult:
        self.alive_before.append((step.phase, step.seed, len(procs_with(self.marker))))
        return self.inner.run(step)


def test_a_double_forked_daemon_dies_before_the_next_step(bwrap: BwrapBackend, make_case: MakeCase,
                                                          tmp_path: Path) -> None:
    marker = "daemon-5c1e"
    run_sh = ("if [ ! -e started ]; then touch started; "
              f"(setsid sh -c 'while :; do echo x >> beat.log; sleep 0.05; done' {marker} </dev/null >/dev/null 2>&1 &); "
              "while [ ! -s beat.log ]; do sleep 0.01; done; echo 'score 1.0'; exit 0; fi\n"  # the daemon is running
              'echo "beats $(wc -c < beat.log)"; echo "score 1.0"\n')
    case = make_case("daemon", "[run]\ncommand = \"sh run.sh\"\nmetric_regex = 'score ([0-9.]+)'\nseeds = 2\n"
                     + FIX, files={"run.sh": run_sh})
    counting = _CountingBackend(bwrap, marker)
    v = replay_case(load_spec(case), case, counting, scratch_root=tmp_path)  # type: ignore[arg-type]
    before = [s for s in v.steps if s.phase == "before"]
    assert len(before) == 2, v.reason
    assert int(before[1].stdout_tail.split("beats ")[1].split()[0]) > 0  # the daemon had run in seed 0's step
    # ... and was dead when seed 1's step started (and every later one): no process of it left on the host
    assert [(p, seed) for p, seed, _ in counting.alive_before][:2] == [("before", 0), ("before", 1)]
    assert all(n == 0 for _, _, n in counting.alive_before), counting.alive_before
    assert procs_with(marker) == []


def test_a_process_ignoring_sigterm_is_killed_at_a_1_s_timeout(bwrap: BwrapBackend, make_case: MakeCase,
                                                               tmp_path: Path) -> None:
    marker = "7777.31337"  # seconds: the processes outlive any wait below unless they are killed
    cmd = (f"trap '' TERM; python -c 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
           f"time.sleep({marker})' & sleep {marker}")
    case = make_case("sigterm", f"[run]\ncommand = \"{cmd}\"\nmetric_regex = 'score ([0-9.]+)'\ntimeout_s = 1\n"
                     + FIX)
    try:
        v = finishes(lambda: replay(case, bwrap, tmp_path))  # a SIGTERM alone would leave it running
        assert v.verdict == "timeout", v.reason
        assert "1 s wall-clock limit" in v.reason and "survived" not in v.reason, v.reason
        assert v.steps[0].timed_out and v.steps[0].exit_code is None
        assert gone(marker) == []
    finally:
        for p in procs_with(marker):
            p.kill()


@pytest.mark.parametrize("make_it, needle", [
    ("mkfifo m.json", "not a regular file"),
    ("ln -s /etc/hostname m.json", "without following links"),
    ("mkdir -p real; echo '{\\\"acc\\\": 1}' > real/m.json; ln -s /etc sub; ln -s real d; ln -s d/m.json m.json",
     "without following links"),
])
def test_metric_json_through_a_fifo_or_a_symlink_fails_fast(bwrap: BwrapBackend, make_case: MakeCase,
                                                            tmp_path: Path, make_it: str, needle: str) -> None:
    case = make_case("fifo", f"[run]\ncommand = \"{make_it}\"\nmetric_json = 'm.json:acc'\n" + FIX)
    box: list[Verdict] = []
    t = threading.Thread(target=lambda: box.append(replay(case, bwrap, tmp_path)), daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "reading the metric hung the host"
    v = box[0]
    assert v.verdict == "error" and needle in v.reason, v.reason


def test_only_setup_with_network_true_reaches_out(
        bwrap: BwrapBackend, make_case: MakeCase, tmp_path: Path, lan_server: tuple[str, int, list[bytes]]) -> None:
    """A server on the host's LAN address stands for the outside (no test has the internet)."""
    ip, port, got = lan_server

    def probe(tag: str) -> str:
        return (f"python -c \\\"import socket\\ntry:\\n    s = socket.create_connection(('{ip}', {port}), "
                f"timeout=2); s.sendall(b'{tag}'); s.close(); print('{tag}:reached')\\nexcept OSError as e:\\n"
                f"    print('{tag}:blocked', e)\\\"")

    def case_with(name: str, network: str) -> Path:
        return make_case(name, f'[setup]\nnetwork = {network}\ncommands = ["{probe(name + "-setup")}"]\n'
                         f'[run]\ncommand = "{probe(name + "-run")}; echo score 1.0"\n'
                         "metric_regex = 'score ([0-9.]+)'\n"
                         f'[fix]\ncommand = "{probe(name + "-fix")}"\n')

    v_on = replay(case_with("on", "true"), bwrap, tmp_path)
    v_off = replay(case_with("off", "false"), bwrap, tmp_path)
    out = {f"{v.case_id}-{s.phase}": s.stdout_tail for v in (v_on, v_off) for s in v.steps}
    assert "on-setup:reached" in out["on-setup"]
    for key in ("on-before", "on-fix", "on-after", "off-setup", "off-before", "off-fix", "off-after"):
        assert ":blocked" in out[key] and ":reached" not in out[key], (key, out[key])
    assert wait_until(lambda: b"on-setup" in got), got
    assert settled(got, (ip, port)) == [b"on-setup"]  # the only connection that reached the server


def _git(repo: Path, *args: str) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", "-c", "protocol.file.allow=always",
                    *args], cwd=repo, check=True, env=env, capture_output=True)


def test_a_hostile_git_source_runs_nothing_on_the_host(bwrap_ok: None, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    sub = tmp_path / "subrepo"
    sub.mkdir()
    _git(sub, "init", "-q")
    (sub / "payload.txt").write_text("from the submodule\n")
    _git(sub, "add", ".")
    _git(sub, "commit", "-qm", "s")
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q")
    (origin / ".gitattributes").write_text("* filter=evil\n*.txt filter=lfs diff=evil merge=evil\n")
    (origin / "run.sh").write_text("echo 'score 0.5'\n")
    (origin / "v.txt").write_text("v\n")
    _git(origin, "add", ".")
    _git(origin, "submodule", "add", "-q", f"file://{sub}", "sub")
    _git(origin, "commit", "-qm", "v1")
    _git(origin, "tag", "v1")
    # the origin's own config and hooks would run these if they travelled with the clone (they must not)
    (origin / ".git" / "hooks" / "post-checkout").write_text(f"#!/bin/sh\ntouch {markers}/origin-hook\n")
    (origin / ".git" / "hooks" / "post-checkout").chmod(0o755)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("origin-filter", "host-filter", "env-filter"):
        (tools / name).write_text(f"#!/bin/sh\ntouch {markers}/{name}\ncat\n")
        (tools / name).chmod(0o755)
    _git(origin, "config", "filter.evil.smudge", str(tools / "origin-filter"))
    # a hostile host environment: user config with a filter and a hooks dir, and config through the environment
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {markers}/host-hook\n")
    (hooks / "post-checkout").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(f"[filter \"evil\"]\n\tsmudge = {tools}/host-filter\n\trequired = true\n"
                         f"[core]\n\thooksPath = {hooks}\n[submodule]\n\trecurse = true\n"
                         f"[protocol \"file\"]\n\tallow = always\n")
    # control: a plain clone in that environment really does run the filter and the hook
    control_env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    subprocess.run(["git", "clone", "-q", f"file://{origin}", str(tmp_path / "control")], env=control_env,
                   capture_output=True, check=False)
    assert {p.name for p in markers.iterdir()} >= {"host-filter", "host-hook"}
    for p in markers.iterdir():
        p.unlink()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "filter.evil.smudge")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(tools / "env-filter"))
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(tmp_path / "templates"))
    case = tmp_path / "case" / "case.toml"
    case.parent.mkdir()
    case.write_text(f'id = "hostile-git"\npaper_value = 1.0\nreported_value = 0.5\n[source]\ngit = "file://{origin}"\n'
                    "ref = \"v1\"\n[run]\ncommand = \"sh run.sh; ls sub | wc -l\"\nmetric_regex = 'score ([0-9.]+)'\n"
                    + FIX)
    v = replay_case(load_spec(case), case, BwrapBackend(tmp_path / "bw"), scratch_root=tmp_path)
    assert v.steps[0].phase == "setup" and v.steps[0].exit_code == 0, v.reason
    assert v.before.values == [0.5]
    assert v.steps[1].stdout_tail.split()[-1] == "0"  # the submodule was not fetched
    assert list(markers.iterdir()) == []
