from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extract.pipeline import run_extract, run_filter
from extract.relevance import classify
from reprodiag.errors import UserError
from tests.extract.threads import NEGATIVE, POSITIVE, REPLY, make_thread


def _threads():  # noqa: ANN202
    rows = POSITIVE[:3] + NEGATIVE[:3]
    return [make_thread(t, b, REPLY, number=i) for i, (t, b) in enumerate(rows)]


def _write(path: Path, threads) -> Path:  # noqa: ANN001
    path.write_text("".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in threads))
    return path


def test_file_mode_filter_and_extract(tmp_path: Path) -> None:
    src = _write(tmp_path / "threads.jsonl", _threads())
    rep = run_filter(None, input=src, output=tmp_path / "d.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert rep.counts["reproduction"] == 3 and len(lines) == 6
    assert set(lines[0]) == {"thread_id", "is_reproduction", "score", "signals"}
    rep = run_extract(None, input=src, output=tmp_path / "r.jsonl", backend="rules", model=None, base_url=None,
                      no_filter=False, concurrency=1, batch=None, collect=None)
    recs = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert rep.counts["records"] == 3 and len(recs) == 3 and rep.counts["filtered_out"] == 3


def test_malformed_input_names_file_and_line(tmp_path: Path) -> None:
    src = _write(tmp_path / "t.jsonl", _threads()[:1])
    with src.open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(UserError, match=r"t\.jsonl:2"):
        run_filter(None, input=src, output=tmp_path / "o.jsonl")
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"repo": "nope", "number": 1}\n')
    with pytest.raises(UserError, match=r"b\.jsonl:1"):
        run_filter(None, input=bad, output=None)


def test_workspace_rerun_is_idempotent_and_picks_up_changes(store) -> None:
    threads = _threads()
    store.upsert_threads(threads)
    kw = dict(input=None, output=None, backend="rules", model=None, base_url=None, no_filter=False,
              concurrency=1, batch=None, collect=None)
    rep = run_extract(store, **kw)
    assert rep.counts["records"] == 3 and store.count("decisions") == 6
    before = {r.thread_id: r for r in store.iter_records()}
    rep = run_extract(store, **kw)
    assert rep.counts["records"] == 0 and rep.counts["skipped_unchanged"] == 3
    changed = threads[0].model_copy(update={"body": threads[0].body + " Still 28.4.",
                                            "updated_at": threads[0].updated_at.replace(year=2024)})
    store.upsert_threads([changed])
    rep = run_extract(store, **kw)
    assert rep.counts["records"] == 1
    assert {r.thread_id for r in store.iter_records()} == set(before)


def test_cli_filter_and_bad_backend_flags(cli, tmp_path: Path) -> None:
    src = _write(tmp_path / "threads.jsonl", _threads())
    proc = cli("-q", "filter", "--input", str(src), "--output", str(tmp_path / "d.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["reproduction"] == 3
    proc = cli("extract", "--input", str(src), "--backend", "openai", workspace=tmp_path / "ws",
               env={"OPENAI_API_KEY": ""})
    assert proc.returncode == 2 and "OPENAI_API_KEY is not set" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_bench_reports_all_figures(tmp_path: Path) -> None:
    from extract.bench import run_bench

    rows = [{"thread": t.model_dump(mode="json"), "split": "dev" if i % 2 else "holdout",
             "label": {"is_reproduction": i < 3, "error_type": "other", "metric": None, "paper_value": None,
                       "obtained_value": None, "resolution_type": "unresolved", "root_cause": None}}
            for i, t in enumerate(_threads())]
    p = tmp_path / "dev.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = run_bench(p, real_sets=())  # the real-thread corpus columns: tests/extract/test_realcorpus.py
    text = " ".join(rep.notes)
    assert "[dev] (3 threads, 1 reproductions" in text and "[holdout] (3 threads, 2 reproductions" in text
    assert "precision 1.000 [1.000, 1.000]" in text and "ungrounded quotes 0" in text
    assert rep.counts["filter_threads_per_s"] > 0
    # the bundled, independently labeled sample corpus, with intervals
    assert rep.counts["sample_rows"] == 80
    assert re.search(r"sample corpus \(values within 0.051\) \(80 threads, 53 reproductions, \d+ repositories\): "
                     r"precision \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", text), text


def _many_threads(n: int) -> list:  # noqa: ANN001
    """``n`` distinct realistic threads: the labeled dev set, renumbered into fresh repositories."""
    from extract.bench import DEFAULT_DEV_SET, load_dev_set

    base = [t for t, _, _ in load_dev_set(DEFAULT_DEV_SET)]
    out = []
    for i in range(n):
        t = base[i % len(base)]
        repo = f"copy{i // len(base)}/{t.repo.split('/')[1]}"
        out.append(t.model_copy(update={"repo": repo, "url": f"https://github.com/{repo}/issues/{t.number}"}))
    return out


def test_sigkill_mid_run_then_rerun_equals_clean_run(tmp_path: Path, cli) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from reprodiag.store import Store
    from tests.conftest import REPO_ROOT

    threads = _many_threads(900)
    ws = tmp_path / "ws"
    with Store(ws) as s:
        s.upsert_threads(threads)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    proc = subprocess.Popen([sys.executable, "-m", "reprodiag", "-w", str(ws), "extract"], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killed_at = None
    try:
        with Store(ws) as s:
            deadline = time.monotonic() + 900  # the filter runs first; a loaded machine is slow
            while time.monotonic() < deadline and proc.poll() is None:
                n = s.count("records")
                if n > 0:
                    proc.send_signal(signal.SIGKILL)
                    killed_at = n
                    break
                time.sleep(0.01)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    with Store(ws) as s:
        partial = s.count("records")
    assert killed_at is not None and proc.returncode == -signal.SIGKILL
    positives = {d.thread_id for d in classify(threads) if d.is_reproduction}
    assert 0 < partial < len(positives)  # it really died part-way
    again = cli("-q", "extract", workspace=ws)
    assert again.returncode == 0, again.stderr
    with Store(ws) as s:
        got = {r.thread_id: r.model_dump(mode="json") for r in s.iter_records()}
        assert s.count("records") == len(got) == len(positives)
        assert s.count("decisions") == len(threads)
    from extract.rules import RulesExtractor

    clean = {r.thread_id: r.model_dump(mode="json")
             for r in RulesExtractor().extract([t for t in threads if t.id in positives])}
    assert got == clean


def test_rerun_clears_stale_rejects(store) -> None:
    threads = _threads()
    store.upsert_threads(threads)
    positive = classify(threads)[0].thread_id
    store.put_rejects("extract", [(positive, "provider timed out"), ("other/repo#9", "kept")])
    run_extract(store, input=None, output=None, backend="rules", model=None, base_url=None, no_filter=False,
                concurrency=1, batch=None, collect=None)
    left = {row[0] for row in store.query("SELECT item_id FROM rejects WHERE stage='extract'")}
    assert left == {"other/repo#9"}
    assert positive in store.record_ids()


def test_filter_killed_part_way_is_completed_by_extract(store) -> None:
    threads = _threads()
    store.upsert_threads(threads)
    store.put_decisions(classify(threads[:2]))  # as if the filter died after its first batch
    rep = run_extract(store, input=None, output=None, backend="rules", model=None, base_url=None,
                      no_filter=False, concurrency=1, batch=None, collect=None)
    assert store.count("decisions") == len(threads)
    assert rep.counts["records"] == 3


def test_switching_backend_re_extracts_and_flipped_decisions_drop_records(store, openai_server) -> None:
    from tests.extract.llm_helpers import answer_for, llm_thread, thread_number
    from tests.fakes.llm_server import Reply

    threads = [llm_thread(i) for i in range(3)]
    store.upsert_threads(threads)
    kw = dict(input=None, output=None, model=None, base_url=None, no_filter=False, concurrency=1, batch=None,
              collect=None)
    assert run_extract(store, backend="rules", **kw).counts["records"] == 3
    assert {r.extractor.backend for r in store.iter_records()} == {"rules"}
    # a different backend is not "unchanged work": every record is extracted again with it
    by_number = {t.number: t for t in threads}
    openai_server.responder = lambda req: Reply.json(answer_for(by_number[thread_number(req.prompt_text)]))
    kw.update(model="local-model", base_url=openai_server.base_url)
    rep = run_extract(store, backend="openai-compatible", **kw)
    assert rep.counts["records"] == 3 and rep.counts["skipped_unchanged"] == 0
    assert {r.extractor.backend for r in store.iter_records()} == {"openai-compatible"}
    assert run_extract(store, backend="openai-compatible", **kw).counts["skipped_unchanged"] == 3
    # a thread edited into a plain bug report loses its record on the next run
    bug = threads[0].model_copy(update={
        "title": "KeyError when loading config", "comments": [],
        "body": "Steps to reproduce: run `python train.py --cfg x.yaml`, it crashes with KeyError: 'lr'.",
        "updated_at": threads[0].updated_at.replace(year=threads[0].updated_at.year + 1)})
    store.upsert_threads([bug])
    rep = run_extract(store, backend="openai-compatible", **kw)
    assert rep.counts.get("records_removed") == 1
    assert threads[0].id not in store.record_ids() and len(store.record_ids()) == 2


def test_reproductions_nobody_answered_are_decided_positive_but_not_extracted(tmp_path: Path, store) -> None:  # noqa: ANN001
    """SPEC: a thread with no reply is dropped. The filter's decision stays about content (a filter miss
    otherwise), the ``no_reply`` signal marks it, and extract skips it in file and workspace mode."""
    answered = make_thread(*POSITIVE[1], REPLY, number=1)
    silent = make_thread(*POSITIVE[1], None, number=2)
    src = _write(tmp_path / "threads.jsonl", [answered, silent])
    rep = run_filter(None, input=src, output=tmp_path / "d.jsonl")
    decisions = {d["thread_id"]: d for d in map(json.loads, (tmp_path / "d.jsonl").read_text().splitlines())}
    assert decisions[silent.id]["is_reproduction"] and "no_reply" in decisions[silent.id]["signals"]
    assert rep.counts["no_reply"] == 1
    ext = run_extract(None, input=src, output=tmp_path / "r.jsonl")
    assert [json.loads(x)["thread_id"] for x in (tmp_path / "r.jsonl").read_text().splitlines()] == [answered.id]
    assert ext.counts["no_reply"] == 1
    store.upsert_threads([answered, silent])
    ws = run_extract(store)
    assert ws.counts["no_reply"] == 1 and store.record_ids() == {answered.id}
