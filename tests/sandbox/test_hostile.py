"""Hostile probes run as replay steps through the real default backend (bubblewrap).

Each probe is a small script in a case's repository, replayed with
:func:`sandbox.replay.replay_case` (or the ``reprodiag replay`` CLI); it prints
``LEAK …`` for every breach it manages and ends with the metric line. The
tests assert that nothing leaked, that the host is unchanged, and that the
case ended with a clear verdict. Skipped with the reason only if bwrap cannot
run here.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from reprodiag.schema import Verdict
from reprodiag.store import Store
from sandbox.backends.base import StepRequest
from sandbox.backends.bwrap import BwrapBackend, python_dirs
from sandbox.replay import printable, replay_case
from sandbox.spec import load_spec
from sandbox.workdir import _open_dir
from tests.sandbox.conftest import (
    PATIENCE_S,
    CaseFactory,
    finishes,
    gone,
    procs_with,
    recording_server,
    settled,
    wait_until,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
VERDICTS = {"confirmed", "symptom_not_reproduced", "fix_not_confirmed", "unstable", "error", "timeout", "skipped"}
SECRETS = {"GITHUB_TOKEN": "ghp_hostileprobe0123456789abcdef", "OPENAI_API_KEY": "sk-hostileprobe0123456789",
           "ANTHROPIC_API_KEY": "sk-ant-hostileprobe012345", "HF_TOKEN": "hf_hostileprobe0123456789"}

#: Prologue of every probe: collect breaches, print them, end with the metric line.
PROLOGUE = textwrap.dedent("""\
    import os, sys, json, socket, subprocess, ctypes, errno
    LEAKS = []
    def leak(what):
        LEAKS.append(what)
        print("LEAK", what, flush=True)
    def done():
        print("checked", len(LEAKS), "leaks", flush=True)
        print("score 1.0", flush=True)
    ARGS = json.loads(open("probe_args.json").read()) if os.path.exists("probe_args.json") else {}
""")


@pytest.fixture
def replayer(bwrap_ok: None, tmp_path: Path) -> Callable[[Path], Verdict]:
    """Replay one case file with a fresh bwrap backend (tmpfs work dir as root, as in CI)."""

    def run(case: Path) -> Verdict:
        return replay_case(load_spec(case), case, BwrapBackend(tmp_path / "scratch"))

    return run


def probe_case(make_case: CaseFactory, name: str, script: str, *, args: dict[str, object] | None = None,
               timeout_s: float = 30, limits: str = "", fix: str = "true", files: dict[str, str] | None = None,
               extra: str = "") -> Path:
    """A case whose run step is ``python probe.py`` (``PROLOGUE`` + ``script``); paper value 1.0."""
    repo_files = {"probe.py": PROLOGUE + textwrap.dedent(script) + "\ndone()\n",
                  "probe_args.json": json.dumps(args or {}), **(files or {})}
    body = (f"[run]\ncommand = \"python probe.py\"\nmetric_regex = 'score ([0-9.]+)'\ntimeout_s = {timeout_s}\n"
            f"[fix]\ncommand = {json.dumps(fix)}\n" + (f"[limits]\n{limits}\n" if limits else ""))
    return make_case(name, body, files=repo_files, extra=extra)


def all_output(v: Verdict) -> str:
    return "\n".join(s.stdout_tail + s.stderr_tail for s in v.steps)


def assert_contained(v: Verdict, *, verdict: str | None = "symptom_not_reproduced", probed: bool = True) -> None:
    """No probe reported a leak (``probed``: and the probe ran to its end), the verdict is one of the
    known kinds (``verdict`` if given), and the reason is one clear line."""
    out = all_output(v)
    assert "LEAK" not in out, out[-3000:]
    if probed:
        assert "checked 0 leaks" in out, (v.verdict, v.reason, out[-2000:])
    assert v.verdict in VERDICTS and v.reason and "\n" not in v.reason.strip()
    if verdict is not None:
        assert v.verdict == verdict, (v.verdict, v.reason, out[-2000:])


# --------------------------------------------------------------------------- network egress


@pytest.fixture
def host_abstract_socket() -> Iterator[tuple[str, list[bytes]]]:
    """An abstract unix socket listening on the host; records what connections send."""
    name = f"reprodiag-probe-{os.getpid()}-{time.monotonic_ns()}"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind("\0" + name)
    srv.listen(4)
    with recording_server(srv, 64) as got:
        yield name, got


NETWORK_PROBE = """
    def tcp(host, port):
        try:
            s = socket.create_connection((host, port), timeout=2)
            s.sendall(b"leak")
            leak(f"tcp {host}:{port}")
        except OSError:
            pass
    tcp("127.0.0.1", ARGS["port"])
    tcp("localhost", ARGS["port"])
    tcp("1.1.1.1", 443)
    tcp("8.8.8.8", 53)
    try:
        socket.getaddrinfo("github.com", 443)
        leak("dns")
    except OSError:
        pass
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"leak", ("8.8.8.8", 53))
        u.sendto(b"leak", ("127.0.0.1", ARGS["port"]))
        leak("udp sendto")
    except OSError:
        pass
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(("2606:4700:4700::1111", 443))
        leak("tcp6")
    except OSError:
        pass
    for path in ARGS["unix"] + ["\\0" + ARGS["abstract"]]:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(path)
            s.sendall(b"leak")
            leak(f"unix {path!r}")
        except OSError:
            pass
    # anything that is not loopback in the sandbox's own network namespace
    for line in open("/proc/net/dev").read().splitlines()[2:]:
        name = line.split(":")[0].strip()
        if name != "lo":
            leak(f"interface {name}")
"""


def host_unix_sockets() -> list[str]:
    """Unix sockets of the host under /run, /var/run, /tmp (X11) and the docker/podman sockets."""
    found: list[str] = []
    for base in ("/run", "/var/run", "/tmp/.X11-unix", "/tmp"):
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for e in entries:
            for cand in ([e.path] + ([os.path.join(e.path, n) for n in _names(e.path)] if e.is_dir(follow_symlinks=False)
                                    else [])):
                try:
                    if stat.S_ISSOCK(os.lstat(cand).st_mode):
                        found.append(cand)
                except OSError:
                    continue
    return sorted(set(found + ["/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock",
                               "/tmp/.X11-unix/X0", "/run/systemd/private", "/run/dbus/system_bus_socket"]))[:200]


def _names(d: str) -> list[str]:
    try:
        return os.listdir(d)[:50]
    except OSError:
        return []


def test_network_egress_is_contained(make_case: CaseFactory, replayer: Callable[[Path], Verdict],
                                     loopback_server: tuple[int, list[bytes]],
                                     host_abstract_socket: tuple[str, list[bytes]]) -> None:
    port, got = loopback_server
    abstract, abstract_got = host_abstract_socket
    case = probe_case(make_case, "net", NETWORK_PROBE,
                      args={"port": port, "unix": host_unix_sockets(), "abstract": abstract})
    v = replayer(case)
    assert_contained(v)
    assert "checked 0 leaks" in all_output(v)
    assert settled(got, ("127.0.0.1", port)) == [] and settled(abstract_got, "\0" + abstract) == []


def test_network_control_the_probe_does_connect_on_the_host(loopback_server: tuple[int, list[bytes]],
                                                            host_abstract_socket: tuple[str, list[bytes]],
                                                            tmp_path: Path) -> None:
    """Control: the same probe, run on the host, reaches both listeners (so the probe can fail)."""
    port, got = loopback_server
    abstract, abstract_got = host_abstract_socket
    (tmp_path / "probe_args.json").write_text(json.dumps({"port": port, "unix": [], "abstract": abstract}))
    script = PROLOGUE + textwrap.dedent(NETWORK_PROBE).replace('tcp("1.1.1.1", 443)', "").replace(
        'tcp("8.8.8.8", 53)', "") + "\ndone()\n"
    script = script.split("try:\n    socket.getaddrinfo")[0] + "\nfor path in ['\\0' + ARGS['abstract']]:\n" \
        "    s = socket.socket(socket.AF_UNIX); s.connect(path); s.sendall(b'leak'); leak('unix')\ndone()\n"
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert "LEAK tcp 127.0.0.1" in out.stdout and "LEAK unix" in out.stdout, out.stderr
    assert wait_until(lambda: got and abstract_got), (got, abstract_got)


def test_setup_with_network_cannot_reach_host_loopback(make_case: CaseFactory, replayer: Callable[[Path], Verdict],
                                                       loopback_server: tuple[int, list[bytes]],
                                                       host_abstract_socket: tuple[str, list[bytes]]) -> None:
    port, got = loopback_server
    abstract, abstract_got = host_abstract_socket
    case = probe_case(make_case, "setup-net", "", extra="",
                      args={"port": port, "abstract": abstract},
                      files={"setup_probe.py": PROLOGUE + textwrap.dedent("""
                          for host in ("127.0.0.1", "10.0.2.2"):  # the sandbox's own loopback; slirp's host gateway
                              try:
                                  socket.create_connection((host, ARGS["port"]), timeout=2).sendall(b"leak")
                                  leak("host loopback via " + host)
                              except OSError:
                                  pass
                          try:
                              u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                              u.settimeout(2)
                              u.connect("\\0" + ARGS["abstract"])
                              u.sendall(b"leak")
                              leak("host abstract socket")
                          except OSError:
                              pass
                          """)})
    text = case.read_text().replace("[run]", "[setup]\ncommands = [\"python setup_probe.py\"]\nnetwork = true\n[run]")
    case.write_text(text)
    v = replayer(case)
    assert "LEAK" not in all_output(v)
    assert settled(got, ("127.0.0.1", port)) == [] and settled(abstract_got, "\0" + abstract) == []


# --------------------------------------------------------------------------- secrets


SECRETS_PROBE = """
    secrets = ARGS["secrets"]
    blobs = {"env": "\\n".join(f"{k}={v}" for k, v in os.environ.items())}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for f in ("environ", "cmdline"):
                try:
                    blobs[f"/proc/{pid}/{f}"] = open(f"/proc/{pid}/{f}", "rb").read().decode("utf-8", "replace")
                except OSError:
                    pass
    for name, text in blobs.items():
        for k, v in secrets.items():
            if v in text:
                leak(f"secret {k} in {name}")
        for p in ARGS["host_paths"]:
            if p in text:
                leak(f"host path {p} in {name}")
    for path in ARGS["read"]:
        try:
            if os.path.isdir(path):
                # only the ancestors of the read-only interpreter directories may show up
                extra = [e for e in os.listdir(path)
                         if not any((a + "/").startswith(os.path.join(path, e) + "/") for a in ARGS["allowed"])]
                if extra:
                    leak(f"listed {path}: {extra[:5]}")
            else:
                with open(path, "rb") as fh:
                    fh.read(16)
                leak(f"read {path}")
        except OSError:
            pass
    try:
        os.kill(os.getppid(), 0)
        for pid in ARGS["host_pids"]:
            try:
                os.kill(pid, 0)
                if pid > 20:
                    leak(f"sees host pid {pid}")
            except OSError:
                pass
    except OSError:
        pass
"""


def test_host_secrets_and_files_are_out_of_reach(make_case: CaseFactory, replayer: Callable[[Path], Verdict],
                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    ws = tmp_path / "workspace"
    with Store(ws):
        pass
    sqlite = next(ws.glob("*.sqlite"))
    other = tmp_path / "other-case-checkout"
    other.mkdir()
    (other / "train.py").write_text("secret other case\n")
    home = Path(os.path.expanduser("~"))
    read = [str(sqlite), str(ws), str(other / "train.py"), str(home / ".ssh"), str(home / ".ssh/id_rsa"),
            str(home / ".netrc"), str(home / ".config"), str(home / ".git-credentials"), str(home / ".bash_history"),
            "/root", "/work", str(REPO_ROOT / "pyproject.toml"), str(REPO_ROOT / ".git/config"), "/etc/shadow",
            "/etc/gshadow", "/etc/ssh", "/var/lib", "/proc/1/root/etc/shadow", "/proc/kcore", "/dev/mem",
            str(tmp_path)]
    host_pids = sorted({os.getpid(), os.getppid(), *(p.pid for p in psutil.process_iter() if p.pid > 20)})[:300]
    case = probe_case(make_case, "secrets", SECRETS_PROBE,
                      args={"secrets": SECRETS, "read": read, "host_pids": host_pids, "allowed": python_dirs(),
                            "host_paths": [str(tmp_path), str(REPO_ROOT / "sandbox"), str(REPO_ROOT / ".git")]})
    v = replayer(case)
    assert_contained(v)
    text = v.model_dump_json()
    assert not any(s in text for s in SECRETS.values())


def test_another_case_checkout_is_invisible(make_case: CaseFactory, bwrap_ok: None, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cases replayed concurrently: neither can find the other's work dir or files. Each hunts only once
    both markers exist (the host sees them in the two work dirs and drops a ``go`` file into each)."""
    import tempfile

    from sandbox.pipeline import run_replay

    hunt = """
        import glob, time
        open(ARGS["mine"], "w").write("x")
        end = time.monotonic() + 100
        while not os.path.exists("go") and time.monotonic() < end:
            time.sleep(0.01)
        print("go:", os.path.exists("go"), flush=True)
        for pattern in ["/tmp/**/" + ARGS["theirs"], "/tmp/reprodiag-*", "/home/**/" + ARGS["theirs"]]:
            hits = glob.glob(pattern, recursive=True)
            if hits:
                leak(f"found {hits[:3]}")
        skip = {"/proc", "/usr", "/sys", "/dev", *ARGS["allowed"]}  # the read-only host directories
        for root, dirs, files in os.walk("/"):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
            if ARGS["theirs"] in files:
                leak(f"found {root}")
    """
    a = probe_case(make_case, "case-a", hunt, timeout_s=300, args={"mine": "marker-of-a", "theirs": "marker-of-b",
                                                                "allowed": python_dirs()})
    b = probe_case(make_case, "case-b", hunt, timeout_s=300, args={"mine": "marker-of-b", "theirs": "marker-of-a",
                                                                "allowed": python_dirs()})
    out = tmp_path / "v.jsonl"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the run makes its scratch directories
    box: list[object] = []
    t = threading.Thread(target=lambda: box.append(
        run_replay(None, cases=[a, b], backend="bwrap", output=out, concurrency=2)), daemon=True)
    t.start()
    try:
        def both() -> list[Path]:
            return [d for m in ("marker-of-a", "marker-of-b") for d in scratch.glob(f"*/work/{m}")]
        assert len(wait_until(lambda: len(both()) == 2 and both())) == 2, "the two cases never ran together"
        for marker in both():
            (marker.parent / "go").write_text("")
    finally:
        t.join(PATIENCE_S)
    assert not t.is_alive() and box, "the replay did not end"
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        v = Verdict.model_validate_json(line)
        assert_contained(v)
        assert "go: True" in all_output(v)  # it hunted while the other case was running, its marker written


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def git_http_repo(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A repository served over git's dumb HTTP protocol on 127.0.0.1; yields (base URL, work tree)."""
    src = tmp_path / "upstream"
    src.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    (src / "probe.py").write_text(PROLOGUE + textwrap.dedent("""
        for p in [".git/config", ".git/logs/HEAD", ".git/FETCH_HEAD", ".git/packed-refs"]:
            try:
                text = open(p).read()
            except OSError:
                continue
            if ARGS["secret"] in text:
                leak(f"credential in {p}")
        out = subprocess.run(["git", "config", "--get", "remote.origin.url"], capture_output=True, text=True).stdout
        if ARGS["secret"] in out:
            leak("credential in git config")
        """) + "\ndone()\n")
    (src / "probe_args.json").write_text(json.dumps({"secret": "s3cretTokenValue42"}))
    os.symlink("/etc/shadow", src / "shadow_link")
    os.symlink("/root", src / "root_dir_link")
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "probe"]):
        subprocess.run(cmd, cwd=src, env=env, check=True, capture_output=True)
    bare = tmp_path / "srv" / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], env=env, check=True, capture_output=True)
    subprocess.run(["git", "update-server-info"], cwd=bare, env=env, check=True, capture_output=True)
    handler = functools.partial(_QuietHandler, directory=str(tmp_path / "srv"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"127.0.0.1:{httpd.server_address[1]}/repo.git", src
    httpd.shutdown()
    httpd.server_close()


def test_clone_credentials_do_not_reach_the_step(git_http_repo: tuple[str, Path], replayer: Callable[[Path], Verdict],
                                                 tmp_path: Path) -> None:
    where, _ = git_http_repo
    case = tmp_path / "cred-case" / "case.toml"
    case.parent.mkdir()
    case.write_text(f'id = "cred"\npaper_value = 1.0\n[source]\ngit = "http://x-access-token:s3cretTokenValue42@'
                    f'{where}"\n[run]\ncommand = "python probe.py; cat shadow_link root_dir_link/.bashrc; true"\n'
                    "metric_regex = 'score ([0-9.]+)'\ntimeout_s = 30\n[fix]\ncommand = \"true\"\n")
    v = replayer(case)
    assert_contained(v)
    assert v.steps[0].command.startswith("git clone") and v.steps[0].exit_code == 0
    assert "s3cretTokenValue42" not in v.model_dump_json()
    assert "root:" not in all_output(v)  # the committed symlinks to /etc/shadow and /root lead nowhere


# --------------------------------------------------------------------------- filesystem


def test_writes_outside_the_work_dir_leave_the_host_unchanged(make_case: CaseFactory,
                                                              replayer: Callable[[Path], Verdict],
                                                              tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    targets = ["/pwned", "/etc/pwned", "/tmp/pwned-hostile", str(tmp_path / "pwned"), str(ws / "pwned"),
               str(REPO_ROOT / "pwned"), str(REPO_ROOT / "sandbox" / "pwned.py"), str(Path(sys.prefix) / "pwned"),
               "/root/pwned", "/work/pwned", "/usr/lib/pwned", "/dev/pwned", "/proc/pwned", "/home/sandbox/../pwned"]
    case = probe_case(make_case, "writes", """
        for t in ARGS["targets"]:
            try:
                with open(t, "w") as fh:
                    fh.write("x")
                if not t.startswith(("/tmp/", "/home/sandbox/")) or t.startswith(ARGS["host_tmp"]):
                    leak(f"wrote {t}")
            except OSError:
                pass
        os.makedirs("sub/dir", exist_ok=True)
        open("sub/dir/ok.txt", "w").write("ok")  # control: the work dir is writable
    """, args={"targets": targets, "host_tmp": str(tmp_path)})
    v = replayer(case)
    assert_contained(v)
    for t in targets:
        assert not Path(t).exists(), t


SYSCTL_PROBE = """
    # Write each writable-looking host sysctl back with its own value (harmless if it works: we report it).
    for path in ["/proc/sys/fs/lease-break-time", "/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches",
                 "/proc/sys/kernel/modprobe", "/proc/sys/kernel/hostname", "/proc/sysrq-trigger",
                 "/proc/sys/kernel/sysrq"]:
        try:
            old = open(path).read() if "drop_caches" not in path and "sysrq-trigger" not in path else ""
        except OSError:
            old = ""
        if os.access(path, os.W_OK):
            leak(f"writable {path}")
        if old:
            try:
                with open(path, "w") as fh:
                    fh.write(old)
                leak(f"wrote {path}")
            except OSError:
                pass
    try:
        open("/proc/self/oom_score_adj", "w").write("0")
    except OSError:
        pass
"""


def test_host_sysctls_and_sysrq_are_read_only(make_case: CaseFactory, replayer: Callable[[Path], Verdict]) -> None:
    """The step's processes are the host's uid 0 without capabilities; the kernel would still let them
    write /proc/sys (kernel.core_pattern: a command run as root on the host), so /proc must be read-only."""
    with open("/proc/sys/kernel/core_pattern") as fh:
        core_pattern = fh.read()
    v = replayer(probe_case(make_case, "sysctl", SYSCTL_PROBE))
    assert_contained(v)
    with open("/proc/sys/kernel/core_pattern") as fh:
        assert fh.read() == core_pattern


PRIVILEGE_PROBE = """
    libc = ctypes.CDLL(None, use_errno=True)
    def sh(cmd):
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).returncode == 0
    checks = {
        "mount tmpfs": "mkdir -p m && mount -t tmpfs none m",
        "umount /usr": "umount -l /usr",
        "remount rw": "mount -o remount,rw /",
        "unshare -U": "unshare -U true", "unshare -m": "unshare -m true", "unshare -n": "unshare -n true",
        "chroot": "chroot / true", "mknod": "mknod dev c 1 3",
        "su root": "su -c true root </dev/null", "pivot_root": "mkdir -p n && pivot_root . n",
        "nsenter": "nsenter -t 1 -m true", "chown root": "touch f && chown 0:0 f && test $(stat -c %u f) = 0",
    }
    for name, cmd in checks.items():
        if sh(cmd):
            leak(name)
    for dev in ["/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg",
                "/dev/console", "/dev/loop0", "/dev/fuse", "/dev/net/tun", "/dev/kvm"]:
        if os.path.exists(dev):
            leak(f"device {dev}")
    # privileges: none, and no way to get any back (setuid binaries, setuid bit on our own file)
    status = open("/proc/self/status").read()
    for line in status.splitlines():
        if line.startswith(("CapEff", "CapPrm", "CapAmb", "CapBnd")) and int(line.split()[1], 16):
            leak(line)
        if line.startswith("NoNewPrivs") and line.split()[1] != "1":
            leak(line)
        if line.startswith("Seccomp:") and line.split()[1] != "2":
            leak("no seccomp filter")
    import shutil
    shutil.copy("/bin/sh", "mysh")
    os.chmod("mysh", 0o4755)
    if subprocess.run(["./mysh", "-c", "test $(id -u) = 1000"]).returncode != 0:
        leak("setuid bit changed the uid")
    mounts = open("/proc/self/mountinfo").read()
    if not any(" /replay " in ln and "nosuid" in ln for ln in mounts.splitlines()):
        leak("work dir not nosuid")
    # system calls that only widen the kernel surface fail (seccomp), whatever the arguments
    calls = {"ptrace": (101, 117), "keyctl": (250, 219), "bpf": (321, 280), "io_uring_setup": (425, 425),
             "perf_event_open": (298, 241), "userfaultfd": (323, 282), "open_by_handle_at": (304, 265),
             "add_key": (248, 217), "setns": (308, 268)}
    import platform
    col = 0 if platform.machine() == "x86_64" else 1
    if platform.machine() in ("x86_64", "aarch64"):
        for name, nrs in calls.items():
            ctypes.set_errno(0)
            rc = libc.syscall(nrs[col], 0, 0, 0, 0, 0)
            if rc != -1 or ctypes.get_errno() != errno.EPERM:
                leak(f"{name} -> {rc} errno {ctypes.get_errno()}")
    # ptrace of a sibling process and of the sandbox's init
    child = subprocess.Popen(["sleep", "5"])
    for pid in (child.pid, 1):
        if libc.ptrace(16, pid, 0, 0) == 0:
            leak(f"ptrace attach {pid}")
    child.kill()
    import fcntl, termios
    try:
        fcntl.ioctl(1, termios.TIOCSTI, b"x")
        leak("TIOCSTI")
    except OSError:
        pass
"""


def test_privileged_operations_fail(make_case: CaseFactory, replayer: Callable[[Path], Verdict]) -> None:
    v = replayer(probe_case(make_case, "priv", PRIVILEGE_PROBE))
    assert_contained(v)
    assert "checked 0 leaks" in all_output(v)


def test_kill_all_and_kill_parent_spare_the_host(make_case: CaseFactory, replayer: Callable[[Path], Verdict]) -> None:
    host = subprocess.Popen(["sleep", "60.2718"])
    try:
        v = replayer(probe_case(make_case, "killall", """
            import signal, time
            for pid in (os.getppid(), 1):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.2)
            subprocess.run("kill -9 -1", shell=True)
        """))
        assert v.verdict in VERDICTS and v.reason
        assert host.poll() is None          # the host's process lives
        assert psutil.Process().is_running()  # so does the replay driver
        assert v.verdict == "error" and "exited with" in v.reason
    finally:
        host.kill()
        host.wait()


def test_symlinks_planted_in_the_work_dir_cannot_redirect_host_writes(make_case: CaseFactory,
                                                                      replayer: Callable[[Path], Verdict],
                                                                      tmp_path: Path) -> None:
    """The host writes the fix's patch into the work dir after the failing run: links planted there
    (under every plausible name) must not make the host write through them."""
    victim = tmp_path / "host-victim.txt"
    victim.write_text("ORIGINAL\n")
    case = probe_case(make_case, "plant", f"""
        for name in [".reprodiag-fix.patch", "fix.patch", ".patch", "metric.json"] + \\
                [".reprodiag-fix-" + "%016x" % i + ".patch" for i in range(64)]:
            if not os.path.lexists(name):
                os.symlink({str(victim)!r}, name)
        os.makedirs("d", exist_ok=True)
    """, files={"train.py": "print('score 0.5')\n"})
    text = case.read_text().replace('command = "true"', "patch = '''\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n"
                                    "-print('score 0.5')\n+print('score 1.0')\n'''")
    case.write_text(text)
    v = replayer(case)
    assert victim.read_text() == "ORIGINAL\n"
    assert v.verdict in VERDICTS and v.reason
    assert [s.phase for s in v.steps][:2] == ["before", "fix"] and v.steps[1].exit_code == 0, v.reason


def test_metric_json_cannot_be_read_through_a_link(make_case: CaseFactory, replayer: Callable[[Path], Verdict],
                                                   tmp_path: Path) -> None:
    secret = tmp_path / "host-metric.json"
    secret.write_text('{"acc": 1.0, "token": "ghp_notforthesandbox"}')
    case = make_case("metric-link", f"""
        [run]
        command = "ln -sf {secret} m.json; ln -sfn /etc e; echo done"
        metric_json = "m.json:acc"
        [fix]
        command = "true"
        """)
    v = replayer(case)
    assert v.verdict == "error" and "without following links" in v.reason
    assert "ghp_notforthesandbox" not in v.model_dump_json()


def test_spec_path_traversal_is_a_one_line_cli_error(make_case: CaseFactory, tmp_path: Path) -> None:
    bad = {
        "source-up": ('[source]\npath = "../../.."\n', ""),
        "patch-up": ('[source]\npath = "repo"\n', 'patch = "../../../../etc/passwd"\n'),
        "patch-abs": ('[source]\npath = "repo"\n', 'patch = "/etc/shadow"\n'),
        "nul-command": ('[source]\npath = "repo"\n', 'command = "true\\u0000; rm -rf /"\n'),
        "git-ext": ('[source]\ngit = "ext::sh -c touch% /tmp/pwned-ext"\n', ""),
    }
    for name, (source, fix) in bad.items():
        d = tmp_path / "bad" / name
        (d / "repo").mkdir(parents=True)
        fix_line = fix or 'command = "true"\n'
        (d / "case.toml").write_text(f'id = "{name}"\npaper_value = 1.0\n{source}[run]\ncommand = "true"\n'
                                     f"metric_regex = 'x ([0-9]+)'\n[fix]\n{fix_line}")
        out = subprocess.run([str(Path(sys.executable).parent / "reprodiag"), "replay", "--case", str(d / "case.toml"),
                              "--output", str(tmp_path / "v.json")], capture_output=True, text=True, timeout=60,
                             cwd=tmp_path)
        assert out.returncode == 2, (name, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) <= 2, (name, out.stderr)
    assert not Path("/tmp/pwned-ext").exists()
    # metric_json with a traversal is refused at read time, with a clear verdict
    case = make_case("metric-up", '[run]\ncommand = "true"\nmetric_json = "../../../etc/passwd:root"\n'
                                  '[fix]\ncommand = "true"\n')
    from sandbox.replay import replay_case as _replay

    v = _replay(load_spec(case), case, BwrapBackend(tmp_path / "scr"))
    assert v.verdict == "error" and "not a relative path inside the work dir" in v.reason


def test_odd_file_names_in_the_repo(make_case: CaseFactory, replayer: Callable[[Path], Verdict]) -> None:
    case = probe_case(make_case, "odd-names", """
        names = sorted(os.listdir("."))
        need = ["-rf", "--help", "a b", "new\\nline", "ünï©ødé", "$(touch PWNED)", "`id`", "x" * 200]
        for n in need:
            if n not in names:
                leak(f"missing {n!r}")
        if os.path.exists("PWNED"):
            leak("a file name was executed")
    """, files={"-rf": "", "--help": "", "a b": "", "new\nline": "", "ünï©ødé": "", "$(touch PWNED)": "",
                "`id`": "", "x" * 200: ""})
    raw = case.parent / "repo" / os.fsdecode(b"bad-\xff\xfe-utf8")
    raw.write_text("x")
    v = replayer(case)
    assert_contained(v)


# --------------------------------------------------------------------------- resources


def test_fork_bomb_ends_the_case_and_leaves_nothing(make_case: CaseFactory,
                                                    replayer: Callable[[Path], Verdict]) -> None:
    marker = "forkbomb-hostile-91"
    case = make_case("forkbomb", f"""
        [run]
        command = "python -c \\"import os, time\\nwhile True:\\n    try:\\n        os.fork()\\n    except OSError:\\n        time.sleep(0.01)\\" {marker}"
        metric_regex = 'score ([0-9.]+)'
        timeout_s = 3
        [fix]
        command = "true"
        [limits]
        pids = 32
        """)
    v = finishes(lambda: replayer(case))  # the bomb never ends by itself: only the kill at the timeout ends it
    assert v.verdict == "timeout" and "3 s wall-clock limit" in v.reason and "survived" not in v.reason, v.reason
    assert v.steps[-1].timed_out and v.steps[-1].exit_code is None
    assert gone(marker) == []
    assert subprocess.run(["true"]).returncode == 0


def test_memory_bomb_is_an_error_verdict(make_case: CaseFactory, replayer: Callable[[Path], Verdict]) -> None:
    case = make_case("membomb", """
        [run]
        command = "python -c \\"x = []\\nwhile True:\\n    x.append(bytearray(64 << 20))\\n    x[-1][::4096] = b'1' * len(x[-1][::4096])\\""
        metric_regex = 'score ([0-9.]+)'
        timeout_s = 20
        [fix]
        command = "true"
        [limits]
        memory_mb = 128
        """)
    v = replayer(case)
    assert v.verdict == "error", v.reason
    assert "memory" in v.reason or "MemoryError" in v.reason or "Killed" in v.reason or "exited with -9" in v.reason


@pytest.mark.parametrize("where", ["work", "tmp"])
def test_disk_fill_beyond_the_quota(make_case: CaseFactory, replayer: Callable[[Path], Verdict], where: str) -> None:
    target = "fill" if where == "work" else "/tmp/fill"
    case = make_case(f"diskfill-{where}", f"""
        [run]
        command = "python -c \\"import itertools\\nfor i in itertools.count():\\n    open('{target}%d' % i, 'wb').write(b'x' * (4 << 20))\\"; echo 'score 1.0'"
        metric_regex = 'score ([0-9.]+)'
        timeout_s = 20
        [fix]
        command = "true"
        [limits]
        disk_mb = 16
        memory_mb = 512
        """)
    v = replayer(case)
    out = all_output(v)
    if where == "work":
        assert v.verdict == "error" and "exceeded disk_mb=16" in v.reason, v.reason
    else:  # /tmp is a tmpfs of disk_mb: the writer gets ENOSPC and the case goes on
        assert "No space left on device" in out or "File too large" in out or v.verdict == "error", out[-500:]
    assert v.verdict in VERDICTS


def test_cpu_spin_is_killed_at_the_time_limit(make_case: CaseFactory, replayer: Callable[[Path], Verdict]) -> None:
    case = make_case("spin", """
        [run]
        command = "trap '' TERM INT HUP; while :; do :; done"
        metric_regex = 'score ([0-9.]+)'
        timeout_s = 1.5
        [fix]
        command = "true"
        """)
    v = finishes(lambda: replayer(case))  # it ignores SIGTERM and never ends: only a SIGKILL at 1.5 s ends it
    assert v.verdict == "timeout" and "1.5 s" in v.reason and "survived" not in v.reason, v.reason
    assert v.steps[-1].timed_out and v.steps[-1].exit_code is None


def test_gigabytes_of_output_are_truncated_with_bounded_driver_memory(make_case: CaseFactory,
                                                                      replayer: Callable[[Path], Verdict]) -> None:
    case = make_case("flood", """
        [run]
        command = "head -c 300000000 /dev/zero | tr '\\\\0' 'A' & head -c 300000000 /dev/zero | tr '\\\\0' 'B' >&2; wait; echo; echo 'score 1.0'"
        metric_regex = 'score ([0-9.]+)'
        timeout_s = 60
        [fix]
        command = "true"
        """)
    rss_before = psutil.Process().memory_info().rss
    v = replayer(case)
    grown = psutil.Process().memory_info().rss - rss_before
    assert grown < 200 * 1024 * 1024, grown
    assert v.verdict == "symptom_not_reproduced", v.reason
    assert len(v.steps[0].stdout_tail) <= 2000 and len(v.steps[0].stderr_tail) <= 2000
    assert v.steps[0].stderr_tail.endswith("B" * 100)


def test_daemons_do_not_survive_the_step(make_case: CaseFactory, replayer: Callable[[Path], Verdict],
                                         tmp_path: Path) -> None:
    marker = "3133.71"  # seconds: longer than any wait here, so only a kill ends them
    case = probe_case(make_case, "daemons", f"""
        subprocess.Popen("setsid nohup sleep {marker} >/dev/null 2>&1 &", shell=True)
        subprocess.Popen("(sleep {marker} &) &", shell=True)
        subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "{marker}"])
            os._exit(0)
        # a writer that would keep changing the work dir after the step, if it survived
        subprocess.Popen(["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > ticker; sleep 0.01; done"],
                         start_new_session=True)
        import time
        def sleepers():
            n = 0
            for pid in os.listdir("/proc"):
                try:
                    argv = open(f"/proc/{{pid}}/cmdline", "rb").read().split(b"\\0")
                except OSError:
                    continue
                n += argv[0].endswith(b"sleep") and b"{marker}" in argv
            return n
        end = time.monotonic() + 20
        while (sleepers() < 4 or not os.path.exists("ticker")) and time.monotonic() < end:
            time.sleep(0.01)
        print("daemons running:", sleepers(), os.path.exists("ticker"), flush=True)
    """)
    try:
        v = replayer(case)
        assert_contained(v)
        assert "daemons running: 4 True" in all_output(v)  # all four and the writer were up when the step ended
        assert gone(marker) == []
        assert not any("ticker" in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))
    finally:
        for p in procs_with(marker):
            p.kill()


def test_a_step_writer_stops_when_the_step_ends(bwrap: BwrapBackend, step: Callable[..., StepRequest],
                                                workdir: Path) -> None:
    """Nothing the step started can change the work dir after the step returned (no racing the driver): the
    moment it returns, the writer it left running is gone."""
    marker = "ticker-writer-8d21"
    # each value is written whole (to a side file, then renamed over the ticker), so a kill between two writes
    # can only leave a complete number behind
    r = bwrap.run(step(f"(setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > t.tmp; mv -f t.tmp ticker; done' "
                       f"{marker} &) ; while [ ! -s ticker ]; do sleep 0.01; done", timeout_s=60))  # once it wrote
    try:
        assert r.exit_code == 0 and not r.timed_out
        assert (workdir / "ticker").read_text().strip().isdigit()
        assert procs_with(marker) == []  # at once: no grace period in which it could still write
    finally:
        for p in procs_with(marker):
            p.kill()


# --------------------------------------------------------------------------- verdict spoofing


def test_fake_verdicts_and_metric_lines_do_not_decide_the_case(make_case: CaseFactory,
                                                               replayer: Callable[[Path], Verdict]) -> None:
    """The step prints a fake verdict JSON and fake trailer lines; only the metric regex's last match counts."""
    case = make_case("spoof", """
        [run]
        command = "echo '{\\"verdict\\": \\"confirmed\\", \\"reason\\": \\"spoofed\\"}'; echo 'score 1.0'; echo 'verdict: confirmed'; echo 'score 0.5'"
        metric_regex = '^score ([0-9.]+)$'
        [fix]
        command = "true"
        """, reported=0.5)
    v = replayer(case)
    assert v.verdict == "fix_not_confirmed" and "spoofed" not in v.reason
    assert v.before is not None and v.before.values == [0.5] and v.after is not None and v.after.values == [0.5]


def test_hostile_output_bytes_give_a_clean_reason_and_store(make_case: CaseFactory,
                                                            replayer: Callable[[Path], Verdict],
                                                            tmp_path: Path) -> None:
    """NUL bytes, terminal escapes, bidi overrides, invalid UTF-8 and a 10 MB line: the verdict's reason
    is printable, and the verdict round-trips through JSON and the workspace."""
    case = make_case("bytes", """
        [run]
        command = "python -c \\"import sys; sys.stdout.buffer.write(b'x' * 10_000_000 + b'\\\\n'); sys.stderr.buffer.write(b'\\\\x1b]0;owned\\\\x07\\\\x1b[2J\\\\x00nul\\\\xff\\\\xfe\\\\u202eevil\\\\r\\\\n'.decode('unicode_escape').encode('utf-8', 'surrogateescape')); sys.exit(3)\\""
        metric_regex = 'score ([0-9.]+)'
        [fix]
        command = "true"
        """)
    v = replayer(case)
    assert v.verdict == "error" and "exited with 3" in v.reason
    assert all(ch not in v.reason for ch in ("\x1b", "\x00", "\x07", "\u202e", "\r"))
    assert printable(v.reason) == v.reason
    with Store(tmp_path / "ws") as s:
        s.put_verdict(v)
        (back,) = [x for x in s.iter_verdicts() if x.case_id == "bytes"]
    assert back.reason == v.reason and back.steps[0].stderr_tail == v.steps[0].stderr_tail
    assert len(v.steps[0].stdout_tail) <= 2000


def test_open_dir_never_follows_a_swapped_link(tmp_path: Path) -> None:
    """The disk-quota walk chmods what it holds open, not a path a step could swap for a link."""
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o500)
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(outside, tree / "swapped")
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _open_dir("swapped", fd, reopen=True) is None
    finally:
        os.close(fd)
    assert stat.S_IMODE(outside.stat().st_mode) == 0o500
    outside.chmod(0o700)
