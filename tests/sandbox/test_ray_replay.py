"""replay --engine ray on a local Ray cluster: the bundled cases reach their verdicts, verdicts are stored as
they arrive and a rerun skips them, a killed worker is retried once (twice killed: skipped, and the rerun
replays it), a case no node can hold is skipped instead of queued forever, case files unpack safely."""

from __future__ import annotations

import io
import os
import signal
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reprodiag.errors import UserError
from reprodiag.store import Store
from sandbox.cases import bundled_case_paths
from sandbox.pipeline import run_replay
from sandbox.ray_replay import CaseBundle, pack_case, replay_packed
from sandbox.spec import load_spec
from tests.fakes.ray_cluster import local_cluster
from tests.sandbox.conftest import procs_with
from tests.sandbox.test_pipeline import FAST

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray
MakeCase = Callable[..., Path]

SLOW = FAST  # the same case as the local pipeline tests, with a run slow enough to kill a worker during it
SLOW_FILES = {"run.sh": "sleep 3; cat value.txt\n", "value.txt": "score 0.5\n"}


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    with local_cluster(ray):
        yield


def test_bundled_cases_reach_their_verdicts_on_ray_and_a_rerun_skips_them(bwrap_ok: None, store: Store) -> None:
    report = run_replay(store, cases=[], backend="bwrap", bundled=True, engine="ray")
    specs = {load_spec(p).id: load_spec(p) for p in bundled_case_paths()}
    verdicts = {v.case_id: v for v in store.iter_verdicts()}
    assert set(verdicts) == set(specs)
    for cid, spec in specs.items():
        v = verdicts[cid]
        assert v.verdict == spec.expected, f"{cid}: {v.verdict} ({v.reason})"
        assert v.backend == "bwrap" and v.steps
        if v.verdict == "confirmed":
            assert abs(v.after.mean - spec.paper_value) <= 1e-3 * abs(spec.paper_value)
    assert report.counts["mismatched_expected"] == 0 and report.counts["replayed"] == len(specs)
    again = run_replay(store, cases=[], backend="bwrap", bundled=True, engine="ray")
    assert again.counts["replayed"] == 0 and again.counts["already_done"] == len(specs)


class _Killer:
    """SIGKILLs the Ray worker process running a replay task (``ray::_run_task``), up to ``times`` times:
    what the OOM killer or a lost node does to a worker."""

    def __init__(self, times: int) -> None:
        self.times, self.killed = times, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        seen: set[int] = set()
        while not self._stop.is_set() and self.killed < self.times:
            for p in procs_with("ray::_run_task"):
                if p.pid not in seen:
                    time.sleep(0.5)  # let it get into the case
                    try:
                        os.kill(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        continue
                    seen.add(p.pid)
                    self.killed += 1
                    break
            time.sleep(0.05)

    def __enter__(self) -> _Killer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def test_a_worker_killed_mid_case_is_retried_once(bwrap_ok: None, make_case: MakeCase, store: Store) -> None:
    case = make_case("killed-once", SLOW, files=SLOW_FILES, reported=0.5, extra='expected = "confirmed"')
    with _Killer(times=1) as k:
        report = run_replay(store, cases=[case], backend="bwrap", engine="ray")
    assert k.killed == 1
    v = next(iter(store.iter_verdicts()))
    assert v.verdict == "confirmed", v.reason
    assert report.counts["confirmed"] == 1 and report.counts["cases"] == 1


def test_a_case_whose_worker_dies_twice_is_skipped_and_the_rerun_replays_it(
        bwrap_ok: None, make_case: MakeCase, store: Store) -> None:
    case = make_case("killed-twice", SLOW, files=SLOW_FILES, reported=0.5, extra='expected = "confirmed"')
    with _Killer(times=2) as k:
        report = run_replay(store, cases=[case], backend="bwrap", engine="ray")
    assert k.killed == 2
    [v] = list(store.iter_verdicts())
    assert v.verdict == "skipped" and "infrastructure failure on Ray, 2 attempts" in v.reason
    assert report.counts["skipped"] == 1
    again = run_replay(store, cases=[case], backend="bwrap", engine="ray")  # skipped verdicts are replayed
    [v] = list(store.iter_verdicts())
    assert v.verdict == "confirmed" and again.counts["replayed"] == 1


def test_a_case_no_node_can_hold_is_skipped_not_queued(bwrap_ok: None, make_case: MakeCase, store: Store) -> None:
    gpu = make_case("needs-gpu", SLOW + "[limits]\ngpus = 2\n", files=SLOW_FILES)
    cpu = make_case("cpu", SLOW, files={**SLOW_FILES, "run.sh": "cat value.txt\n"}, reported=0.5)
    report = run_replay(store, cases=[gpu, cpu], backend="bwrap", engine="ray")
    got = {v.case_id: v for v in store.iter_verdicts()}
    assert got["needs-gpu"].verdict == "skipped"
    assert "needs 2 GPU(s); the largest node of the Ray cluster has 0" in got["needs-gpu"].reason
    assert got["cpu"].verdict == "confirmed" and report.counts["cases"] == 2


def test_a_case_travels_with_its_files_and_links_kept(make_case: MakeCase, tmp_path: Path) -> None:
    case = make_case("links", SLOW, files={**SLOW_FILES, "sub/data.txt": "x\n"})
    os.symlink("/etc/hostname", case.parent / "repo" / "outside-link")
    (case.parent / "unrelated-big-file").write_bytes(b"0" * 4096)
    bundle = pack_case(load_spec(case), case)
    with tarfile.open(fileobj=io.BytesIO(bundle.data)) as tar:
        names = {m.name: m for m in tar.getmembers()}
    assert bundle.spec_name == "case.toml"
    assert {"case.toml", "repo/run.sh", "repo/value.txt", "repo/sub/data.txt"} <= set(names)
    assert "unrelated-big-file" not in names  # only what the spec names travels
    assert names["repo/outside-link"].issym() and names["repo/outside-link"].linkname == "/etc/hostname"


def _tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()


def test_a_hostile_bundle_writes_nothing_outside_its_case(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    evil = tarfile.TarInfo(f"../../../../../../../..{target}")
    verdict = replay_packed(CaseBundle("evil", "case.toml", _tar([(evil, b"owned\n")])), "bwrap", False)
    assert verdict["verdict"] == "error" and "cannot be unpacked" in verdict["reason"]
    assert not target.exists()
    absolute = tarfile.TarInfo(str(target))
    got = replay_packed(CaseBundle("abs", "case.toml", _tar([(absolute, b"x")])), "bwrap", False)
    assert got["verdict"] == "error" and "does not load" in got["reason"]  # unpacked inside, as a relative path
    assert not target.exists()


def test_pack_refuses_a_missing_source(make_case: MakeCase) -> None:
    case = make_case("nosrc", SLOW, files=SLOW_FILES)
    spec = load_spec(case)
    (case.parent / "repo" / "run.sh").unlink()
    (case.parent / "repo" / "value.txt").unlink()
    (case.parent / "repo").rmdir()
    with pytest.raises(UserError, match="does not exist"):
        pack_case(spec, case)


def test_cli_engine_flags_are_checked(cli, tmp_path: Path) -> None:  # noqa: ANN001
    for args, msg in ((["--ray-address", "auto"], "--ray-address needs --engine ray"),
                      (["--engine", "spark"], "--engine must be local or ray")):
        r = cli("replay", "--bundled", *args, workspace=tmp_path / "ws")
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.gpu
def test_a_gpu_case_on_ray_sees_exactly_the_gpu_ray_assigned(bwrap_ok: None, make_case: MakeCase,
                                                             store: Store) -> None:
    if not ray.cluster_resources().get("GPU"):
        pytest.skip("the test cluster has no GPU")
    body = SLOW.replace('"sh run.sh"', '"sh gpus.sh"') + "[limits]\ngpus = 1\nmemory_mb = 4096\n"
    case = make_case("gpu", body, files={"gpus.sh": "echo score $(nvidia-smi -L | wc -l)\n", "value.txt": "x"},
                     paper=1.0, reported=1.0)
    run_replay(store, cases=[case], backend="bwrap", engine="ray")
    [v] = list(store.iter_verdicts())
    assert v.before.values == [1.0], v.reason
