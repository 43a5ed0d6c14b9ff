from __future__ import annotations

import json
from pathlib import Path

import pytest

from extract.pipeline import run_extract, run_filter
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
    rep = run_bench(p)
    text = " ".join(rep.notes)
    assert "dev (3 threads" in text and "holdout (3 threads" in text and "precision 1.000" in text
    assert rep.counts["filter_threads_per_s"] > 0
