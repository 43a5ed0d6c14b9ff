"""GPU passthrough into bwrap (opt-in: ``pytest -m gpu`` on a host with an NVIDIA GPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from reprodiag.schema import LimitsSpec
from sandbox.backends.base import StepRequest
from sandbox.backends.bwrap import BwrapBackend
from sandbox.gpu import detect_gpus
from sandbox.pipeline import run_replay

pytestmark = pytest.mark.gpu


@pytest.fixture
def gpu_devices() -> tuple[int, ...]:
    info = detect_gpus()
    if not info.devices:
        pytest.skip(f"no NVIDIA GPU: {info.summary}")
    return info.devices[:1]


def test_nvidia_smi_inside_bwrap(bwrap: BwrapBackend, workdir: Path, gpu_devices: tuple[int, ...]) -> None:
    r = bwrap.run(StepRequest(phase="before", command="nvidia-smi --query-gpu=name,driver_version --format=csv",
                              workdir=workdir, timeout_s=60, gpu_devices=gpu_devices,
                              limits=LimitsSpec(memory_mb=4096, gpus=1)))
    assert r.exit_code == 0, r.stderr
    assert "driver_version" in r.stdout


def test_cuda_inside_bwrap(bwrap: BwrapBackend, workdir: Path, gpu_devices: tuple[int, ...]) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in the project venv")
    code = "import torch; assert torch.cuda.is_available(); x = torch.ones(1024, device='cuda'); print(int(x.sum()))"
    r = bwrap.run(StepRequest(phase="before", command=f'python -c "{code}"', workdir=workdir, timeout_s=300,
                              gpu_devices=gpu_devices, limits=LimitsSpec(memory_mb=16384, gpus=1, pids=512)))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.strip().endswith("1024")


def test_gpu_case_records_the_gpu(bwrap_ok: None, make_case, tmp_path: Path,  # noqa: ANN001
                                  gpu_devices: tuple[int, ...]) -> None:
    case = make_case("gpu", """
        [run]
        command = "nvidia-smi -L >/dev/null && cat value.txt"
        metric_regex = 'score ([0-9.]+)'
        [fix]
        command = "echo 'score 1.0' > value.txt"
        [limits]
        gpus = 1
        memory_mb = 4096
        """, files={"value.txt": "score 0.5\n"}, reported=0.5)
    out = tmp_path / "v.json"
    run_replay(None, cases=[case], backend="bwrap", output=out)
    from reprodiag.schema import Verdict

    v = Verdict.model_validate_json(out.read_text())
    assert v.verdict == "confirmed", v.reason
    assert v.gpu and "driver" in v.gpu
