"""bubblewrap backend: a namespace sandbox built from selected read-only host
directories, private size-capped tmpfs HOME, /tmp and /dev/shm, and one writable work dir.

Inside: ``/usr`` (and the /bin, /lib… links), a few /etc files, the project's
interpreter and venv (read-only, at their host paths), a synthetic
/etc/passwd, a fresh /proc of the sandbox's own pid namespace (host processes
and their environments are invisible; ``kill -9 -1`` reaches only the
sandbox), a minimal read-only /dev (null, zero, full, random, urandom, tty: no
block devices, no /dev/mem or /dev/kmsg) and no /sys (bound read-only only
for GPU steps), a new user namespace with every capability dropped and no
further user namespaces (``setuid``, ``unshare`` and ``mount`` fail),
``--new-session`` and ``--die-with-parent``. The host's home, workspace and
other files are absent; hard links to host files fail with EXDEV (different
mounts).

Run as root, the step's processes are the host's uid 0 (bwrap maps the
caller's uid to 1000 inside) without capabilities. The kernel lets that uid
write ``/proc/sys`` whatever its capabilities (``kernel.core_pattern`` runs a
program as root on the host), so ``/proc`` is remounted read-only. A seccomp
filter (:mod:`sandbox.seccomp`) denies the system calls that only widen the
kernel surface. bwrap reads its options from an unlinked file (``--args``),
so ``/proc/1/cmdline`` inside names no host path.

Network: none (``--unshare-all``), except for a ``setup`` step of a case with
``[setup] network = true``, which gets a network of its own from ``slirp4netns``
(user-mode NAT to the outside, ``--disable-host-loopback``: the host's 127.0.0.1
services are out of reach). The host's network is never shared: without
slirp4netns such a step runs with no network and says so in its stderr. Setup is
the only phase that can ever have a network; run and fix steps never do. Setup
steps run under the same limits as every other step.

The work dir is the only writable host path; its disk quota is enforced by
the caller (a capped tmpfs, or the ``disk_watch`` polled here; see
:mod:`sandbox.quota`). /tmp, HOME and /dev/shm are tmpfs of ``disk_mb`` each,
fresh for every step.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import IO

from reprodiag.jsontext import first_json_object
from sandbox.backends.base import (
    SANDBOX_HOME,
    SANDBOX_WORKDIR,
    StepRequest,
    StepResult,
    network_allowed,
    run_limited,
    sandbox_env,
)
from sandbox.seccomp import seccomp_program

#: Host /etc entries visible inside (read-only); credentials-bearing files are not among them.
ETC_ALLOW = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf", "hosts",
    "host.conf", "gai.conf", "resolv.conf", "ssl", "ca-certificates", "ca-certificates.conf", "mime.types",
    "protocols", "services", "os-release", "debian_version", "fonts", "magic", "magic.mime",
)
#: Top-level paths that are directories or links into /usr on a merged-/usr system.
ROOT_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: NVIDIA control devices exposed when a step uses a GPU (plus the chosen /dev/nvidiaN).
NVIDIA_CONTROL = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")

PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n" \
         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"


def python_dirs() -> list[str]:
    """Read-only directories the project's interpreter needs: the venv and the base installation."""
    dirs: list[str] = []
    exe_real = os.path.realpath(sys.executable)
    for d in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              str(Path(exe_real).parent.parent)):
        d = os.path.realpath(d)
        if d in ("/", "/usr") or d.startswith("/usr/"):
            continue
        if not any(d == p or d.startswith(p + "/") for p in dirs):
            dirs = [p for p in dirs if not p.startswith(d + "/")] + [d]
    return sorted(dirs)


#: Run before a networked setup command: wait (up to 10 s) until slirp4netns has configured ``tap0``'s
#: default route, then run the command (``$1``).
WAIT_FOR_NETWORK = ('i=0; while ! grep -q "^tap0[[:space:]]*00000000" /proc/net/route 2>/dev/null; do '
                    'i=$((i+1)); [ "$i" -gt 200 ] && break; sleep 0.05; done; exec /bin/sh -c "$1"')


def build_bwrap_argv(step: StepRequest, *, bwrap: str, etc_dir: str, privileged: bool,
                     env: dict[str, str], gpu_devices: tuple[int, ...] = (),
                     ro_dirs: list[str] | None = None, seccomp_fd: int | None = None,
                     info_fd: int | None = None) -> list[str]:
    """The full bwrap command line for ``step`` (pure apart from checking which host paths exist).

    ``etc_dir`` holds the synthetic ``passwd``/``group``; ``privileged`` (euid 0)
    adds ``--cap-drop ALL``; ``ro_dirs`` are extra read-only binds (default: the
    interpreter's directories); ``seccomp_fd`` is an open file holding the
    :mod:`sandbox.seccomp` program; ``info_fd`` (a networked setup step with
    slirp4netns) receives bwrap's JSON with the sandbox's pid, and the command then
    waits for the network before it starts.
    """
    a = [bwrap, "--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000",
         "--disable-userns", "--new-session", "--die-with-parent", "--hostname", "sandbox"]
    if privileged:
        a += ["--cap-drop", "ALL"]
    if info_fd is not None:
        a += ["--info-fd", str(info_fd)]
    if seccomp_fd is not None:
        a += ["--seccomp", str(seccomp_fd)]
    a += ["--ro-bind", "/usr", "/usr"]
    for name in ROOT_DIRS:
        host = f"/{name}"
        if os.path.islink(host):
            a += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            a += ["--ro-bind", host, host]
    for name in ETC_ALLOW:
        a += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    a += ["--ro-bind", f"{etc_dir}/passwd", "/etc/passwd", "--ro-bind", f"{etc_dir}/group", "/etc/group"]
    tmp_bytes = str(max(16, step.limits.disk_mb) * 1024 * 1024)
    a += ["--proc", "/proc", "--dev", "/dev", "--size", tmp_bytes, "--tmpfs", "/dev/shm"]
    if gpu_devices:
        for name in NVIDIA_CONTROL:
            if os.path.exists(f"/dev/{name}"):
                a += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
        for i in gpu_devices:
            a += ["--dev-bind", f"/dev/nvidia{i}", f"/dev/nvidia{i}"]
        if os.path.isdir("/dev/nvidia-caps"):
            a += ["--dev-bind", "/dev/nvidia-caps", "/dev/nvidia-caps"]
        a += ["--ro-bind", "/sys", "/sys", "--ro-bind-try", "/run/nvidia-persistenced", "/run/nvidia-persistenced"]
        for extra in ("/usr/local/nvidia", "/usr/local/cuda", "/opt/nvidia"):
            if os.path.isdir(extra) and not extra.startswith("/usr/"):
                a += ["--ro-bind", extra, extra]
    a += ["--size", tmp_bytes, "--tmpfs", "/tmp", "--size", tmp_bytes, "--tmpfs", SANDBOX_HOME]
    # After the tmpfs mounts: an interpreter or venv that lives under /tmp (a CI checkout, say) stays visible.
    for d in (python_dirs() if ro_dirs is None else ro_dirs):
        a += ["--ro-bind", d, d]
    a += ["--bind", str(step.workdir), SANDBOX_WORKDIR, "--chdir", SANDBOX_WORKDIR]
    # /proc read-only: the step's processes are uid 0 of the host (mapped to 1000 inside, with no
    # capabilities), and the kernel lets the host's uid 0 write /proc/sys (core_pattern: a root
    # shell on the host) whatever its capabilities.
    a += ["--remount-ro", "/dev", "--remount-ro", "/proc", "--remount-ro", "/", "--clearenv"]
    for k, v in env.items():
        a += ["--setenv", k, v]
    if info_fd is not None:
        a += ["--", "/bin/sh", "-c", WAIT_FOR_NETWORK, "sh", step.command]
    else:
        a += ["--", "/bin/sh", "-c", step.command]
    return a


@lru_cache(maxsize=1)
def bwrap_status() -> tuple[bool, str]:
    """(usable, reason): bwrap is installed and can create its namespaces here."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False, "bubblewrap is not installed (apt-get install bubblewrap)"
    try:
        proc = subprocess.run(
            [exe, "--unshare-all", "--unshare-user", "--disable-userns", "--ro-bind", "/usr", "/usr",
             "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
             "--proc", "/proc", "--dev", "/dev", "--", "/usr/bin/true"],
            capture_output=True, text=True, timeout=20, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap cannot run: {exc}"
    if proc.returncode != 0:
        return False, "bwrap cannot create namespaces here: " + " ".join(proc.stderr.split())[:200]
    return True, "bubblewrap works (user, pid, net, mount namespaces)"


class BwrapBackend:
    """bubblewrap isolation (default on Linux)."""

    name = "bwrap"

    def __init__(self, scratch: Path) -> None:
        """``scratch``: a host directory for the synthetic /etc files (not visible as writable inside)."""
        self.bwrap = shutil.which("bwrap") or "bwrap"
        self.etc_dir = scratch / "etc"
        self.etc_dir.mkdir(parents=True, exist_ok=True)
        (self.etc_dir / "passwd").write_text(PASSWD)
        (self.etc_dir / "group").write_text(GROUP)

    def run(self, step: StepRequest) -> StepResult:
        """Run ``step``; bwrap reads its options from an unlinked file (``--args FD``), so the
        sandbox's /proc/1/cmdline shows no host path (only ``bwrap --args N -- /bin/sh -c COMMAND``).

        bwrap itself failing to set up the sandbox's loopback (the kernel's netlink answering ``ECHILD``
        under load; the step's command has not started) is retried, up to :data:`SETUP_ATTEMPTS` in all."""
        for _ in range(SETUP_ATTEMPTS - 1):
            res = self._run_once(step)
            if not (res.exit_code == 1 and res.stderr.startswith(_SETUP_FAILED)):
                return res
        return self._run_once(step)

    def _run_once(self, step: StepRequest) -> StepResult:
        env = sandbox_env(step)
        bad = [k for k, v in env.items() if "\0" in k or "\0" in v or "=" in k] + (["command"] if "\0" in step.command
                                                                                  else [])
        if bad:
            return StepResult(exit_code=None, duration_s=0.0, stdout="", stderr="",
                              error=f"NUL byte or '=' in the step's {', '.join(sorted(bad))}")
        files: list[IO[bytes]] = []
        net: _SlirpNetwork | None = None
        note = ""
        if network_allowed(step):
            slirp = shutil.which("slirp4netns")
            if slirp is None:
                note = ("reprodiag: this setup step ran without a network: slirp4netns is not installed "
                        "(the host's network is never shared)\n")
            else:
                net = _SlirpNetwork(slirp)
        try:
            program = seccomp_program()
            seccomp_fd = None
            if program is not None:
                files.append(_unlinked(program))
                seccomp_fd = files[-1].fileno()
            argv = build_bwrap_argv(step, bwrap=self.bwrap, etc_dir=str(self.etc_dir),
                                    privileged=os.geteuid() == 0, env=env, gpu_devices=step.gpu_devices,
                                    seccomp_fd=seccomp_fd, info_fd=net.write_fd if net else None)
            cut = argv.index("--")  # the options go through the file; the command stays on the command line
            files.append(_unlinked(b"".join(os.fsencode(x) + b"\0" for x in argv[1:cut])))
            fds = tuple(f.fileno() for f in files) + ((net.write_fd,) if net else ())
            if net:
                net.start()
            res = run_limited([argv[0], "--args", str(files[-1].fileno()), *argv[cut:]], step,
                              env={"PATH": "/usr/bin:/bin"}, cwd="/", pass_fds=fds)
        finally:
            if net:
                net.stop()
            for f in files:
                f.close()
        if net and not net.up:
            note = "reprodiag: this setup step ran without a network: slirp4netns could not start\n"
        return replace(res, stderr=note + res.stderr) if note else res


#: Runs of bwrap tried for one step when bwrap fails to set up the sandbox before the command starts.
SETUP_ATTEMPTS = 3
#: How bwrap's own failure to bring up the new network namespace's loopback starts its stderr.
_SETUP_FAILED = "bwrap: loopback: "

#: Starts of slirp4netns tried for one step before it runs without a network.
SLIRP_ATTEMPTS = 5


class _SlirpNetwork:
    """slirp4netns for one networked setup step: a thread reads the sandbox's pid from bwrap's
    ``--info-fd`` and starts ``slirp4netns --configure --disable-host-loopback PID tap0``;
    :meth:`stop` ends it when the step is over."""

    def __init__(self, slirp: str) -> None:
        self.slirp = slirp
        self.read_fd, self.write_fd = os.pipe()
        self.proc: subprocess.Popen[bytes] | None = None
        #: slirp4netns started and kept running.
        self.up = False
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="slirp4netns", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        buf = b""
        while not self._stopped.is_set():
            try:
                chunk = os.read(self.read_fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            info = first_json_object(buf.decode("utf-8", "replace"))
            if info is None:  # not all written yet
                continue
            pid = info.get("child-pid")
            if not isinstance(pid, int):
                return
            # by path: given a pid, slirp4netns also joins the pid's user namespace, which may already be
            # bwrap's nested one (``--disable-userns``), where it has no say over the network namespace
            argv = [self.slirp, "--configure", "--mtu=65520", "--disable-host-loopback", "--netns-type=path"]
            if os.geteuid() != 0:
                argv.append(f"--userns-path=/proc/{pid}/ns/user")
            # while bwrap is still setting the sandbox up, joining its network namespace can fail (EPERM):
            # slirp4netns then exits at once, and is started again
            for _attempt in range(SLIRP_ATTEMPTS):
                with self._lock:
                    if self._stopped.is_set():
                        return
                    self.proc = subprocess.Popen([*argv, f"/proc/{pid}/ns/net", "tap0"], stdin=subprocess.DEVNULL,
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                 start_new_session=True)
                try:
                    self.proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    self.up = True
                    return  # running: the network is up (or coming up) until stop()
                time.sleep(0.05)
            return

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()
            proc = self.proc
            if proc is not None and proc.poll() is None:
                self.up = True
        os.close(self.write_fd)  # bwrap's copies are gone with it: the reader sees the end
        if self._thread.ident is not None:
            self._thread.join(timeout=5)
        os.close(self.read_fd)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _unlinked(data: bytes) -> IO[bytes]:
    """An anonymous temporary file holding ``data``, positioned at its start."""
    fh = tempfile.TemporaryFile()
    fh.write(data)
    fh.flush()
    fh.seek(0)
    return fh
