"""One local Ray cluster for a test module: 2 CPUs, no dashboard, a small object store; skipped (with the
reason) on a machine where Ray cannot start its processes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def local_cluster(ray: Any, **resources: Any) -> Iterator[None]:
    try:
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=128 * 2**20, log_to_driver=False,
                 configure_logging=False, **resources)
    except Exception as exc:  # noqa: BLE001 - a machine where Ray cannot start its processes
        pytest.skip(f"cannot start a local Ray cluster here: {exc}")
    try:
        yield
    finally:
        ray.shutdown()
