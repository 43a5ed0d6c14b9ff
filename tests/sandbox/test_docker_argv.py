"""The docker/podman command line (built by a pure function; no engine is needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprodiag.errors import UserError
from reprodiag.schema import LimitsSpec
from sandbox.backends.base import StepRequest, sandbox_env
from sandbox.backends.choose import choose_backend
from sandbox.backends.container import build_container_argv


def argv(engine: str = "docker", **kw: object) -> list[str]:
    kw.setdefault("limits", LimitsSpec(memory_mb=512, cpus=1.5, pids=64, disk_mb=100))
    kw.setdefault("phase", "before")
    step = StepRequest(command="python train.py --x 'a b'", workdir=Path("/tmp/w"), timeout_s=9,
                       seed=3, **kw)  # type: ignore[arg-type]
    env = sandbox_env(step, host_env={"GITHUB_TOKEN": "ghp_x", "LANG": "C", "OPENBLAS_CORETYPE": "Haswell"})
    return build_container_argv(engine, step, image="img:1", name="n1", env=env, user="0:0",
                                ro_dirs=["/opt/venv", "/opt/py"])


def pairs(a: list[str]) -> set[tuple[str, str]]:
    return set(zip(a, a[1:], strict=False))


def test_isolation_flags() -> None:
    a = argv()
    assert a[:3] == ["docker", "run", "--rm"]
    p = pairs(a)
    for flag in [("--network", "none"), ("--memory", "512m"), ("--memory-swap", "512m"), ("--cpus", "1.5"),
                 ("--pids-limit", "64"), ("--cap-drop", "ALL"), ("--security-opt", "no-new-privileges"),
                 ("-w", "/replay"), ("-v", "/tmp/w:/replay:rw"), ("-v", "/opt/venv:/opt/venv:ro"),
                 ("--name", "n1")]:
        assert flag in p, flag
    assert "--read-only" in a
    assert any(x.startswith("/tmp:") and "size=100m" in x for x in a)
    assert any(x.startswith("/home/sandbox:") for x in a)
    assert "--gpus" not in a


def test_command_is_one_argument_after_the_image() -> None:
    a = argv()
    i = a.index("img:1")
    assert a[i + 1:] == ["/bin/sh", "-c", "python train.py --x 'a b'"]


def test_environment_is_an_allowlist() -> None:
    a = argv()
    envs = {a[i + 1].split("=", 1)[0]: a[i + 1].split("=", 1)[1] for i, x in enumerate(a) if x == "-e"}
    assert "GITHUB_TOKEN" not in envs
    assert not any("ghp_x" in x for x in a)
    assert envs["SEED"] == "3" and envs["PYTHONHASHSEED"] == "3"
    assert envs["HOME"] == "/home/sandbox"
    assert envs["OPENBLAS_CORETYPE"] == "Haswell"
    assert envs["PATH"].split(":")[0].endswith("/bin")


def test_network_and_gpus() -> None:
    p = pairs(argv(network=True, phase="setup", gpu_devices=(0, 2)))
    assert ("--network", "bridge") in p
    for phase in ("before", "fix", "after"):  # only setup may ever have the network
        assert ("--network", "none") in pairs(argv(network=True, phase=phase))
    assert ("--gpus", "device=0,2") in p
    assert ("--pids-limit", "64") in pairs(argv("podman"))
    assert argv("podman")[0] == "podman"


def test_local_backend_needs_explicit_consent() -> None:
    with pytest.raises(UserError, match="--unsafe-local"):
        choose_backend("local", unsafe_local=False)
    assert choose_backend("local", unsafe_local=True).name == "local"
    with pytest.raises(UserError, match="unknown backend"):
        choose_backend("chroot", unsafe_local=False)


def test_auto_never_picks_local() -> None:
    c = choose_backend("auto", unsafe_local=True)
    assert c.name != "local"
    assert c.reason
