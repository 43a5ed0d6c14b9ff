"""--engine ray on a local Ray cluster (one per test module: 2 CPUs, no dashboard, small object store):
the same workspace as --engine local, a worker killed mid-run still gives the complete result."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from extract.pipeline import run_filter
from reprodiag.errors import UserError
from reprodiag.ray_engine import check_engine, map_rows
from reprodiag.sample import load_sample_threads
from reprodiag.schema import Record
from reprodiag.store import Store
from tests.fakes.llm_fixtures import openai_server  # noqa: F401, F811
from tests.fakes.ray_cluster import local_cluster

ray = pytest.importorskip("ray")
OPENAI_KEY = "sk-test-RAYSECRET0123456789"
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    # the workers of a local cluster inherit this environment (API keys never travel with a task)
    had = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = had or OPENAI_KEY
    try:
        with local_cluster(ray):
            yield
    finally:
        if had is None:  # later tests in this process must not see the test key
            os.environ.pop("OPENAI_API_KEY", None)


def _workspace(root: Path) -> Store:
    s = Store(root)
    s.upsert_threads(load_sample_threads())
    return s


def _decisions(s: Store) -> list[str]:
    return sorted(d.model_dump_json() for d in s.iter_decisions())


def _hashes(s: Store) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in s.query("SELECT key, value FROM cache WHERE key LIKE 'filter-hash:%'"))


def test_filter_on_ray_gives_the_local_workspace(tmp_path: Path) -> None:
    local, remote = _workspace(tmp_path / "local"), _workspace(tmp_path / "ray")
    a = run_filter(local)
    b = run_filter(remote, engine="ray")
    assert a.counts == b.counts and a.counts["threads"] == len(load_sample_threads())
    assert _decisions(local) == _decisions(remote) and _decisions(local)
    assert _hashes(local) == _hashes(remote)
    again = run_filter(remote, engine="ray")  # a rerun decides the same threads the same way
    assert again.counts == a.counts and _decisions(remote) == _decisions(local)


def test_a_worker_killed_mid_run_still_gives_the_complete_result(tmp_path: Path) -> None:
    marker = tmp_path / "killed-once"

    def double(cols: dict[str, list[int]]) -> dict[str, list[int]]:
        if 40 in cols["x"] and not marker.exists():
            marker.write_text("x")
            os._exit(1)  # the worker process dies: Ray retries the task elsewhere
        return {"x": cols["x"], "y": [v * 2 for v in cols["x"]]}

    import pyarrow as pa

    got = [b for b in map_rows(({"x": i} for i in range(100)), double, columns={"x": pa.int64()}, batch_size=10,
                               rows_per_file=25)]
    xs = [x for b in got for x in b["x"]]
    assert marker.exists()
    assert xs == list(range(100))
    assert [y for b in got for y in b["y"]] == [2 * x for x in xs]


def test_no_rows_runs_nothing() -> None:
    import pyarrow as pa

    assert list(map_rows(iter(()), lambda c: c, columns={"x": pa.int64()}, batch_size=10)) == []


@pytest.mark.parametrize(("engine", "address", "msg"), [("spark", None, "--engine must be"),
                                                         ("local", "auto", "--ray-address needs --engine ray")])
def test_engine_options_are_checked(engine: str, address: str | None, msg: str) -> None:
    with pytest.raises(UserError, match=msg):
        check_engine(engine, address)


def test_ray_needs_the_workspace(tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text("", encoding="utf-8")
    with pytest.raises(UserError, match="works on the workspace"):
        run_filter(None, input=src, engine="ray")


def test_score_on_ray_gives_the_local_result(tmp_path: Path) -> None:
    """File mode and workspace mode, with small batches so several go through Ray, a bad line and a repeated
    id among them: the same scored documents, rejects and report as --engine local."""
    import gzip

    from scoring.pipeline import run_score

    src = Path(__file__).resolve().parents[2] / "scoring" / "data" / "real_records.jsonl.gz"
    with gzip.open(src, "rt", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(300)]
    lines.insert(50, "{not json\n")
    lines.insert(120, lines[10])  # a repeated thread id: the first occurrence is kept
    records = tmp_path / "records.jsonl"
    records.write_text("".join(lines), encoding="utf-8")
    out = {}
    for engine in ("local", "ray"):
        rep = run_score(None, input=records, output=tmp_path / f"{engine}.jsonl", rejects=tmp_path / f"{engine}.rej",
                        batch_size=64, engine=engine)
        out[engine] = (rep.counts, (tmp_path / f"{engine}.jsonl").read_bytes(), (tmp_path / f"{engine}.rej").read_bytes())
    assert out["local"] == out["ray"]
    assert out["ray"][0]["rejects"] == 2 and out["ray"][0]["records"] == 300
    ws_local, ws_ray = Store(tmp_path / "wl"), Store(tmp_path / "wr")
    recs = [Record.model_validate_json(line) for line in lines if not line.startswith("{not")]
    for ws in (ws_local, ws_ray):
        ws.put_records(recs)
    run_score(ws_local, input=None, output=None, batch_size=64)
    run_score(ws_ray, input=None, output=None, batch_size=64, engine="ray")
    docs = [sorted(r.model_dump_json() for r in ws.iter_scored(kept_only=False)) for ws in (ws_local, ws_ray)]
    assert docs[0] == docs[1] and docs[0]


def test_cli_filter_on_its_own_local_ray_and_a_clear_error_without_ray(cli, tmp_path: Path) -> None:  # noqa: ANN001
    ws = tmp_path / "ws"
    _workspace(ws).close()
    ok = cli("-q", "filter", "--engine", "ray", workspace=ws, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    import json

    assert json.loads(ok.stdout.strip().splitlines()[-1])["counts"]["threads"] == len(load_sample_threads())
    bad = cli("filter", "--engine", "spark", workspace=ws)
    assert bad.returncode == 2 and "--engine must be local or ray" in bad.stderr and "Traceback" not in bad.stderr
    import subprocess
    import sys

    no_ray = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['ray'] = None; from reprodiag.cli import main; "
                               "sys.argv = ['reprodiag', '-w', sys.argv[1], 'filter', '--engine', 'ray']; sys.exit(main())",
         str(ws)], capture_output=True, text=True, timeout=120)
    assert no_ray.returncode == 2 and "pip install 'reprodiag[ray]'" in no_ray.stderr
    assert len(no_ray.stderr.strip().splitlines()) == 1


def test_extract_on_ray_gives_the_local_workspace_and_skips_what_is_done(tmp_path: Path) -> None:
    from extract.pipeline import run_extract

    local, remote = _workspace(tmp_path / "local"), _workspace(tmp_path / "ray")
    a = run_extract(local)
    b = run_extract(remote, engine="ray")
    assert a.counts == b.counts and a.counts["records"] > 10
    recs = [sorted(r.model_dump_json() for r in s.iter_records()) for s in (local, remote)]
    assert recs[0] == recs[1]
    sigs = [sorted(s.query("SELECT key, value FROM cache WHERE key NOT LIKE 'filter-hash:%'")) for s in (local, remote)]
    assert sigs[0] == sigs[1]
    again = run_extract(remote, engine="ray")  # nothing left to do: no Ray job, every thread skipped
    assert again.counts["records"] == 0 and again.counts["skipped_unchanged"] == a.counts["records"]
    src = tmp_path / "threads.jsonl"
    src.write_text("", encoding="utf-8")
    with pytest.raises(UserError, match="works on the workspace"):
        run_extract(None, input=src, engine="ray")



def test_llm_extract_on_ray_matches_local_with_failing_rows_and_a_rerun_asks_only_for_them(
        tmp_path: Path, openai_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001, F811
    """30 threads through the fake OpenAI server: every 10th answer is malformed (a reject, after its re-ask),
    thread 3 gets a 429 first and thread 7 a malformed 500 first (both retried); Ray and local give the
    same records, rejects and cache; a rerun on Ray asks again only for the 3 failed threads."""
    from extract.pipeline import run_extract
    from tests.extract.llm_helpers import answer_for, llm_thread, thread_number
    from tests.fakes.llm_server import Reply

    monkeypatch.setenv("OPENAI_API_KEY", os.environ["OPENAI_API_KEY"])
    threads = [llm_thread(i) for i in range(30)]
    first_seen: set[int] = set()

    def responder(req):  # noqa: ANN001, ANN202
        n = thread_number(req.prompt_text)
        if n in (3, 7) and n not in first_seen:
            first_seen.add(n)
            return Reply.error(429, retry_after=0.01) if n == 3 else Reply.error(500, body="{not json")
        return Reply.of_text("{oops") if n % 10 == 0 else Reply.json(answer_for(threads[n]))

    openai_server.responder = responder
    reps, stores = {}, {}
    for engine in ("local", "ray"):
        first_seen.clear()
        s = Store(tmp_path / engine)
        s.upsert_threads(threads)
        reps[engine] = run_extract(s, backend="openai", model="gpt-4o-mini", base_url=openai_server.base_url,
                                   no_filter=True, concurrency=4, engine=engine)
        stores[engine] = s
    for k in ("records", "failed", "threads"):
        assert reps["local"].counts[k] == reps["ray"].counts[k]
    assert reps["ray"].counts["records"] == 27 and reps["ray"].counts["failed"] == 3
    local, remote = stores["local"], stores["ray"]
    assert sorted(r.model_dump_json() for r in local.iter_records()) == \
        sorted(r.model_dump_json() for r in remote.iter_records())
    assert local.query("SELECT item_id FROM rejects ORDER BY 1") == remote.query("SELECT item_id FROM rejects ORDER BY 1")
    assert sorted(local.query("SELECT key, value FROM cache")) == sorted(remote.query("SELECT key, value FROM cache"))
    assert any("LLM usage" in n for n in reps["ray"].notes)
    before = len(openai_server.requests)
    again = run_extract(remote, backend="openai", model="gpt-4o-mini", base_url=openai_server.base_url,
                        no_filter=True, concurrency=4, engine="ray")
    assert again.counts["skipped_unchanged"] == 27 and again.counts["failed"] == 3
    assert len(openai_server.requests) - before == 3 * 2  # the 3 failed threads, each with its re-ask
    assert OPENAI_KEY not in repr(again.model_dump()) and OPENAI_KEY not in "".join(
        v for (v,) in remote.query("SELECT value FROM cache"))


def test_engine_bench_extracts_every_thread_both_ways_and_reports_rows_per_second() -> None:
    from extract.bench_engine import run_engine_bench

    rep = run_engine_bench(n=40, latency_ms=10, concurrency=4, workers=2)
    c = rep.counts
    assert c["threads"] == 40 and c["ray_workers"] == 2
    assert c["local_rows_per_s"] > 0 and c["ray_rows_per_s"] > 0 and c["local_same_in_flight_rows_per_s"] > 0
    assert any("requests in flight" in n for n in rep.notes)


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_every_request_of_a_run_with_rpm_is_granted_by_the_runs_limiter(tmp_path: Path, openai_server,  # noqa: ANN001, F811
                                                                         engine: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """--rpm 300 (5 a second, one second of burst) over the whole run: every request the server sees was first
    granted by the run's limiter (locally the extractor's own, on Ray the one actor every worker shares), and the
    limiter spaced them at its rate. Its clock is frozen, so what it grants depends on nothing but the count of
    requests (no wall-clock windows, whatever the machine's load): 5 at once, then one more every 0.2 s."""
    import functools
    import uuid

    from extract import pipeline, ratelimit
    from extract.pipeline import run_extract
    from tests.extract.llm_helpers import answer_for, llm_thread, thread_number
    from tests.fakes.llm_server import Reply

    monkeypatch.setenv("OPENAI_API_KEY", os.environ["OPENAI_API_KEY"])
    n = 25
    frozen = functools.partial(float, 0.0)  # a clock that never moves (picklable: it travels to the Ray actor)
    made: list[tuple[float | None, float | None, ratelimit.RateLimit]] = []
    slept: list[float] = []
    real_limit, real_local = ratelimit.RateLimit, ratelimit.local_limiter

    def frozen_limit(rpm: float | None = None, tpm: float | None = None) -> ratelimit.RateLimit:
        made.append((rpm, tpm, real_limit(rpm, tpm, clock=frozen)))
        return made[-1][2]

    async def no_sleep(s: float) -> None:
        slept.append(s)

    monkeypatch.setattr(ratelimit, "RateLimit", frozen_limit)  # run_extract imports these when it runs
    monkeypatch.setattr(ratelimit, "local_limiter", lambda limit: real_local(limit, sleep=no_sleep))
    threads = [llm_thread(i) for i in range(1, n + 1)]
    by_n = {int(t.title.split()[1].rstrip(":")): t for t in threads}
    granted_at_arrival: list[int] = []

    def responder(req):  # noqa: ANN001, ANN202
        if engine == "local":  # what the limiter had granted when this request arrived
            granted_at_arrival.append(made[-1][2].requests)
        return Reply.json(answer_for(by_n[thread_number(req.prompt_text)]))

    openai_server.responder = responder
    actor = None
    batches: list[pipeline.LLMBatch] = []
    if engine == "ray":
        name = f"reprodiag-ratelimit-test-{uuid.uuid4().hex}"
        monkeypatch.setattr(ratelimit, "shared_limiter_name", lambda: name)
        # the run's actor, made here (so it outlives the run and can be asked what it granted) with the frozen
        # clock; the workers find it by the name the run gives them
        actor = ray.remote(ratelimit._LimiterActor).options(name=name, num_cpus=0).remote(300, None, clock=frozen)
        assert ray.get(actor.granted.remote())["requests"] == 0
        real_ray = pipeline._extract_llm_ray

        def spy(*args, **kw):  # noqa: ANN002, ANN003, ANN202
            batches.extend(a for a in args if isinstance(a, pipeline.LLMBatch))
            return real_ray(*args, **kw)

        monkeypatch.setattr(pipeline, "_extract_llm_ray", spy)
    try:
        s = Store(tmp_path / engine)
        s.upsert_threads(threads)
        rep = run_extract(s, backend="openai", model="gpt-4o-mini", base_url=openai_server.base_url,
                          no_filter=True, concurrency=8, engine=engine, rpm=300)
        assert rep.counts["records"] == n and len(openai_server.requests) == n
        assert [(rpm, tpm) for rpm, tpm, _ in made] == [(300, None)]  # the run's limit, at the rate asked for
        # with the clock frozen, the k-th grant waits (k - 5) / 5 s past the burst of 5: 0.2 + 0.4 + ... + 4.0 s
        schedule = [max(0, k - 5) / 5 for k in range(1, n + 1)]
        if engine == "local":
            got = made[0][2].granted()
            assert got["requests"] == n and got["tokens"] > 0, got
            assert got["waited_s"] == pytest.approx(sum(schedule))
            assert sorted(slept) == pytest.approx([w for w in schedule if w > 0])
            # every request was granted before it was sent
            assert sorted(granted_at_arrival) == granted_at_arrival
            assert all(g >= i for i, g in enumerate(granted_at_arrival, 1)), granted_at_arrival
        else:
            assert batches and all(b.limit == (name, 300, None) for b in batches)
            got = ray.get(actor.granted.remote())
            assert got["requests"] == n and got["tokens"] > 0, got  # the workers' requests, all through the actor
            assert got["waited_s"] == pytest.approx(sum(schedule))
            assert made[0][2].requests == 0  # the driver sent nothing itself (it answers cache hits only)
        # those grants, as times on the limiter's clock: no second holds more than 5 + 5 (rate + burst)
        assert max(sum(1 for u in schedule if t <= u < t + 1.0) for t in schedule) <= 10
    finally:
        if actor is not None:
            ray.kill(actor)
