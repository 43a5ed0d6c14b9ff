"""NVIDIA GPU discovery on the host: device indices and an ``nvidia-smi`` summary."""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class GpuInfo:
    """``devices``: indices N of /dev/nvidiaN; ``summary``: "model, driver X" per GPU (or why none)."""

    devices: tuple[int, ...]
    summary: str


@lru_cache(maxsize=1)
def detect_gpus() -> GpuInfo:
    devices = tuple(sorted(int(m.group(1)) for p in glob.glob("/dev/nvidia*")
                           if (m := re.fullmatch(r"/dev/nvidia(\d+)", p))))
    smi = shutil.which("nvidia-smi")
    if not devices:
        return GpuInfo((), "no NVIDIA GPU device (/dev/nvidiaN) on this host")
    if smi is None:
        return GpuInfo(devices, f"{len(devices)} NVIDIA device(s), nvidia-smi not found")
    try:
        proc = subprocess.run([smi, "--query-gpu=index,name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return GpuInfo(devices, f"{len(devices)} NVIDIA device(s), nvidia-smi did not answer")
    if proc.returncode != 0:
        return GpuInfo((), "nvidia-smi failed: " + " ".join(proc.stderr.split())[:160])
    rows = [r.split(",") for r in proc.stdout.strip().splitlines() if r.strip()]
    summary = "; ".join(f"{r[1].strip()}, driver {r[2].strip()}" for r in rows if len(r) >= 3)
    return GpuInfo(devices, summary or f"{len(devices)} NVIDIA device(s)")
