"""A seccomp filter for sandboxed steps (passed to bubblewrap with ``--seccomp FD``).

A denylist in the spirit of Docker's default profile: the system calls that
replayed ML code has no use for and that widen the kernel surface reachable
from the sandbox fail with ``EPERM``: ptrace and cross-process memory access,
the kernel keyring, bpf, perf events, userfaultfd, io_uring, module and kexec
loading, every mount API, pivot_root/chroot/setns, open_by_handle_at (the
classic container escape), swap, reboot, syslog, clock setting, and the
``TIOCSTI``/``TIOCLINUX`` ioctls (typing into a terminal). System calls of a
foreign ABI (i386 ``int 0x80`` and x32 on x86_64) kill the process.

Built for x86_64 and aarch64 only; :func:`seccomp_program` returns None on
other machines, where steps run without a filter (the namespaces, dropped
capabilities and read-only mounts still apply).
"""

from __future__ import annotations

import errno
import platform
import struct

#: Denied system calls (name → number) per machine, from the kernel's unistd headers.
DENIED: dict[str, dict[str, int]] = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
        "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "setns": 308, "move_mount": 429,
        "open_tree": 428, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "open_by_handle_at": 304, "name_to_handle_at": 303, "swapon": 167, "swapoff": 168, "reboot": 169,
        "syslog": 103, "acct": 163, "quotactl": 179, "quotactl_fd": 443, "lookup_dcookie": 212,
        "fanotify_init": 300, "vhangup": 153, "iopl": 172, "ioperm": 173, "settimeofday": 164,
        "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159, "uselib": 134, "nfsservctl": 180,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
        "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
        "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "setns": 268, "move_mount": 429,
        "open_tree": 428, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "swapon": 224, "swapoff": 225, "reboot": 142,
        "syslog": 116, "acct": 89, "quotactl": 60, "quotactl_fd": 443, "lookup_dcookie": 18,
        "fanotify_init": 262, "vhangup": 58, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266,
        "adjtimex": 171, "nfsservctl": 42,
    },
}
#: ``ioctl`` numbers per machine, and the denied ioctl requests (TIOCSTI, TIOCLINUX).
IOCTL_NR = {"x86_64": 16, "aarch64": 29}
DENIED_IOCTLS = (0x5412, 0x541C)
#: AUDIT_ARCH_* of each machine's native ABI.
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_X32_BIT = 0x40000000
#: Offsets in struct seccomp_data: nr, arch, low 32 bits of args[1] (little-endian).
_OFF_NR, _OFF_ARCH, _OFF_ARG1_LO = 0, 4, 24


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The compiled BPF program (``struct sock_filter`` array) for ``machine`` (default: this one),
    or None when the machine is not supported."""
    machine = machine or platform.machine()
    if machine not in DENIED or struct.pack("=H", 1) != b"\x01\x00":
        return None
    nrs = sorted(set(DENIED[machine].values()))
    ioctl = IOCTL_NR[machine]
    deny = _ins(_RET_K, _RET_ERRNO | errno.EPERM)
    body: list[bytes] = [_ins(_LD_W_ABS, _OFF_ARCH), _ins(_JEQ_K, AUDIT_ARCH[machine], jt=1),
                         _ins(_RET_K, _RET_KILL_PROCESS), _ins(_LD_W_ABS, _OFF_NR)]
    # After the checks below come: [ALLOW, DENY, ioctl block (4 instructions)].
    checks = len(nrs) + 1 + (1 if machine == "x86_64" else 0)
    if machine == "x86_64":
        # x32 system calls (nr with bit 30 set) are a foreign ABI: kill.
        body.append(_ins(_JGE_K, _X32_BIT, jt=checks + 1, jf=0))  # to the KILL after DENY (see below)
    for i, nr in enumerate(nrs):
        done = (1 if machine == "x86_64" else 0) + i + 1  # checks emitted including this one
        body.append(_ins(_JEQ_K, nr, jt=(checks - done) + 1))  # → DENY
    body.append(_ins(_JEQ_K, ioctl, jt=3))  # → the ioctl block, past ALLOW, DENY and KILL
    body.append(_ins(_RET_K, _RET_ALLOW))
    body.append(deny)
    body.append(_ins(_RET_K, _RET_KILL_PROCESS))  # x32 target (only reached on x86_64)
    body.append(_ins(_LD_W_ABS, _OFF_ARG1_LO))
    body.append(_ins(_JEQ_K, DENIED_IOCTLS[0], jt=2))
    body.append(_ins(_JEQ_K, DENIED_IOCTLS[1], jt=1))
    body.append(_ins(_RET_K, _RET_ALLOW))
    body.append(deny)
    return b"".join(body)
