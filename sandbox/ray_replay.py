"""``replay --engine ray``: one Ray task per case, each replayed on its worker into the same sandbox backend
as a local run (:func:`sandbox.replay.replay_case`), verdicts yielded to the driver as they arrive.

What a task carries: the case's own files (the spec, its ``[source] path`` directory and its ``[fix] patch``
file, all inside the spec's directory by :func:`sandbox.spec.inside_case_dir`), packed by the driver and
unpacked on the worker under tarfile's ``data`` rules (no absolute paths, nothing written outside the
case; symlinks kept as they are, as a local replay keeps them), so a node needs no shared filesystem. A git source is cloned on the worker as locally.

Resources: ``num_cpus`` = ``[limits] cpus``, ``num_gpus`` = ``[limits] gpus`` (the worker exposes exactly
the GPUs Ray assigned it, ``ray.get_gpu_ids()``), ``memory`` = ``[limits] memory_mb``. A case no node of
the cluster can hold (more GPUs than any node has) is skipped, never queued forever.

Failures: a verdict (``confirmed`` … ``error``/``timeout``) is final and never retried. An infrastructure
failure (the worker or its node died, the task could not run, the case could not be unpacked) is retried
once; a second one ends the case ``skipped`` with the reason, and a rerun tries it again (stored
``skipped`` verdicts are always replayed).
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError
from reprodiag.schema import ReplaySpec, Verdict
from sandbox.spec import inside_case_dir, load_spec, patch_is_path, source_dir, spec_file
from sandbox.verdict import error_verdict, skipped_verdict

#: Attempts per case when the infrastructure fails (the first run and one retry).
ATTEMPTS = 2
#: Largest packed case a task carries (bytes); a bigger source belongs in a git repository.
MAX_BUNDLE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class CaseBundle:
    """A case packed for a worker: ``data`` is an uncompressed tar of the case directory's needed files;
    ``spec_name`` is the spec's path inside it."""

    case_id: str
    spec_name: str
    data: bytes


def pack_case(spec: ReplaySpec, spec_path: Path) -> CaseBundle:
    """The files ``spec`` needs, relative to its directory. Raises :class:`UserError` when a file is
    missing or the bundle is over :data:`MAX_BUNDLE_BYTES`."""
    path = spec_file(spec_path)
    base = path.parent.resolve()
    members: list[Path] = [path.resolve()]
    src = source_dir(spec, path)
    if src is not None:
        if not src.is_dir():
            raise UserError(f"{path}: source directory {src} does not exist")
        members.append(src)
    if spec.fix.patch is not None and patch_is_path(spec.fix.patch):
        members.append(inside_case_dir(path, spec.fix.patch.strip(), "fix.patch"))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for m in members:
            tar.add(m, arcname=str(m.relative_to(base)) if m != base else ".", recursive=True)
            if buf.tell() > MAX_BUNDLE_BYTES:
                raise UserError(f"{path}: the case is over {MAX_BUNDLE_BYTES >> 20} MB to send to a Ray "
                                "worker; use a git source")
    return CaseBundle(spec.id, str(path.resolve().relative_to(base)), buf.getvalue())


def replay_packed(bundle: CaseBundle, backend: str, unsafe_local: bool) -> dict[str, Any]:
    """On the worker: unpack ``bundle``, choose ``backend`` on this node, replay; the verdict as JSON.

    Raises only for infrastructure failures (the caller retries those)."""
    from sandbox.backends.choose import choose_backend, make_backend
    from sandbox.gpu import GpuInfo, detect_gpus
    from sandbox.replay import replay_case

    with tempfile.TemporaryDirectory(prefix="reprodiag-ray-case-") as tmp:
        case_dir = Path(tmp) / "case"
        case_dir.mkdir()
        try:
            with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r") as tar:
                tar.extractall(case_dir, filter=_case_filter)
        except tarfile.FilterError as exc:  # a link out of the case, an absolute path: the case's own fault
            return error_verdict(bundle.case_id, f"the case's files cannot be unpacked on the worker: {exc}"
                                 ).model_dump(mode="json")
        spec_path = case_dir / bundle.spec_name
        try:
            spec = load_spec(spec_path)
        except UserError as exc:
            return error_verdict(bundle.case_id, f"the case's spec does not load on the worker: {exc}"
                                 ).model_dump(mode="json")
        choice = choose_backend(backend, unsafe_local=unsafe_local)
        if choice.name is None:
            return skipped_verdict(spec, choice.reason).model_dump(mode="json")
        gpu = None
        if spec.limits.gpus > 0:
            import ray

            ids = tuple(int(i) for i in ray.get_gpu_ids())
            gpu = GpuInfo(ids, detect_gpus().summary)
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        try:
            v = replay_case(spec, spec_path, make_backend(choice.name, scratch), gpu=gpu)
        except UserError as exc:
            v = error_verdict(spec.id, str(exc), spec)
        return v.model_dump(mode="json")


def _case_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, except that a symlink may point anywhere: a local replay re-creates a
    case's symlinks as they are (:func:`sandbox.workdir.copy_source`) and only the sandbox follows them.
    Member paths must still stay inside ``dest`` (nothing is written through a link)."""
    if member.issym():
        return tarfile.tar_filter(member, dest)
    return tarfile.data_filter(member, dest)


def replay_on_ray(cases: list[tuple[Path, ReplaySpec]], *, backend: str, unsafe_local: bool,
                  address: str | None = None, in_flight: int | None = None) -> Iterator[Verdict]:
    """Replay ``cases`` as Ray tasks; yield each verdict as it arrives (arrival order, not input order).

    ``in_flight``: tasks submitted at a time (default: the cluster's CPUs); Ray runs as many as the
    resources allow."""
    from reprodiag.ray_engine import largest_node_gpus, ray_session

    if not cases:
        return
    with ray_session(address) as ray:
        task = ray.remote(_run_task)
        gpus_max = largest_node_gpus(ray)
        limit = max(1, in_flight or int(ray.cluster_resources().get("CPU", 1)))
        # (path, spec, attempt, bundle once packed: a retry sends the same bytes without reading the case again)
        queue: list[tuple[Path, ReplaySpec, int, CaseBundle | None]] = []
        for path, spec in cases:
            if spec.limits.gpus > gpus_max:
                yield skipped_verdict(spec, f"case needs {spec.limits.gpus} GPU(s); the largest node of the Ray cluster "
                                     f"has {gpus_max}")
                continue
            queue.append((path, spec, 1, None))
        queue.reverse()
        pending: dict[Any, tuple[Path, ReplaySpec, int, CaseBundle]] = {}
        while queue or pending:
            while queue and len(pending) < limit:
                path, spec, attempt, bundle = queue.pop()
                if bundle is None:
                    try:
                        bundle = pack_case(spec, path)
                    except UserError as exc:
                        yield error_verdict(spec.id, str(exc), spec)
                        continue
                ref = task.options(num_cpus=spec.limits.cpus, num_gpus=spec.limits.gpus,
                                   memory=spec.limits.memory_mb * 2**20, max_retries=0,  # retried here, once
                                   retry_exceptions=False).remote(bundle, backend, unsafe_local)
                pending[ref] = (path, spec, attempt, bundle)
            if not pending:
                break
            done, _ = ray.wait(list(pending), num_returns=1)
            path, spec, attempt, bundle = pending.pop(done[0])
            try:
                doc = ray.get(done[0])
            except Exception as exc:  # noqa: BLE001 - every Ray failure (worker died, node lost, task raised)
                why = " ".join(str(exc).split())[:300]
                if attempt < ATTEMPTS:
                    queue.append((path, spec, attempt + 1, bundle))
                    continue
                yield skipped_verdict(spec, f"infrastructure failure on Ray, {ATTEMPTS} attempts: {type(exc).__name__}: "
                                     f"{why}")
                continue
            yield Verdict.model_validate(doc)


def _run_task(bundle: CaseBundle, backend: str, unsafe_local: bool) -> dict[str, Any]:
    return replay_packed(bundle, backend, unsafe_local)
