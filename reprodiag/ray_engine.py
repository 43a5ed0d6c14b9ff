"""``--engine ray``: a stage's pure batch function run by Ray Data over the rows the workspace still needs.

The driver (the only process that writes the workspace) exports the pending rows to Parquet, Ray Data
reads them in blocks, ``map_batches`` applies the stage's batch function (the same function the local
engine calls: :func:`extract.relevance.classify` for ``filter``, :func:`scoring.batch.score_records` for
``score``), and the driver imports each result block as it arrives, in input order, in one SQLite
transaction per block. A worker that dies has its task retried by Ray (``max_retries``); a driver killed
part-way leaves the blocks it committed, and the rerun exports only what is still pending. ``--engine
local`` stays the reference: the tests check that both give the same workspace.

Ray is an optional extra (``pip install 'reprodiag[ray]'``), imported only here, only when asked for.
``--ray-address``: a running cluster (``auto``, ``ray://host:10001``); without it a local one is
started for the run (all cores, no dashboard) and stopped after it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError

ENGINES = ("local", "ray")
#: Task retries after a worker dies (verdicts of a function are never retried: an exception fails the run).
MAX_RETRIES = 3


def check_engine(engine: str, address: str | None) -> None:
    """A clear one-line error for an unknown engine, or an address without ``--engine ray``."""
    if engine not in ENGINES:
        raise UserError(f"--engine must be local or ray, got {engine!r}")
    if address is not None and engine != "ray":
        raise UserError("--ray-address needs --engine ray")


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise UserError("--engine ray needs Ray: pip install 'reprodiag[ray]'") from None
    return ray


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, initialized: the running session if this process has one, the cluster at ``address``, or a local
    cluster started for the block (and stopped after it)."""
    ray = _ray()
    if ray.is_initialized():
        _quiet(ray)
        yield ray
        return
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=num_cpus or os.cpu_count() or 1, object_store_memory=256 * 2**20, **kw)
    except Exception as exc:  # noqa: BLE001 - ray raises many types for a bad address or a failed start
        raise UserError(f"cannot start or reach Ray{' at ' + address if address else ''}: "
                        f"{' '.join(str(exc).split())[:200]}") from None
    try:
        _quiet(ray)
        yield ray
    finally:
        ray.shutdown()


def _quiet(ray: Any) -> None:
    import logging

    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.execution_options.preserve_order = True


def largest_node_gpus(ray: Any) -> int:
    """GPUs of the cluster's largest live node: the most one task or one engine can get (all on one node)."""
    return max((int(n.get("Resources", {}).get("GPU", 0)) for n in ray.nodes() if n.get("Alive")), default=0)


class _Apply:
    """The map_batches callable: ``fn`` over a block given as a dict of column lists, same back."""

    def __init__(self, fn: Callable[[dict[str, list[Any]]], dict[str, list[Any]]]) -> None:
        self.fn = fn

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        cols = {name: batch.column(name).to_pylist() for name in batch.column_names}
        return pa.table(self.fn(cols))


def map_rows(rows: Iterable[dict[str, Any]], fn: Callable[[dict[str, list[Any]]], dict[str, list[Any]]], *,
             columns: dict[str, Any], batch_size: int, address: str | None = None,
             rows_per_file: int = 50_000, before: Callable[[Any], Any] | None = None,
             ) -> Iterator[dict[str, list[Any]]]:
    """``fn`` over ``rows`` (dicts with ``columns``: name → pyarrow type), ``batch_size`` rows per call, on
    Ray; yields each result batch (a dict of column lists) in input order. ``fn`` must be a pure function of
    its batch (importable, or picklable by value). ``before``: a Dataset → Dataset step run first, inside the
    session (e.g. a Ray Data LLM processor). Nothing is run for no rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(list(columns.items()))
    with tempfile.TemporaryDirectory(prefix="reprodiag-ray-") as tmp:
        files: list[str] = []
        buf: list[dict[str, Any]] = []
        total = 0

        def flush() -> None:
            if buf:
                path = str(Path(tmp) / f"part-{len(files):05d}.parquet")
                pq.write_table(pa.Table.from_pylist(buf, schema=schema), path)
                files.append(path)
                buf.clear()

        for row in rows:
            buf.append(row)
            total += 1
            if len(buf) >= rows_per_file:
                flush()
        flush()
        if not total:
            return
        with ray_session(address) as ray:
            ds = ray.data.read_parquet(files)
            if before is not None:
                ds = before(ds)
            out = ds.map_batches(_Apply(fn), batch_size=batch_size, batch_format="pyarrow", zero_copy_batch=True,
                                 max_retries=MAX_RETRIES)
            for block in out.iter_batches(batch_size=None, batch_format="pyarrow"):
                yield {name: block.column(name).to_pylist() for name in block.column_names}
