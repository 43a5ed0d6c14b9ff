"""run_score / score_batch: workspace and file modes, rejects, idempotent reruns, CLI errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from reprodiag.errors import UserError
from reprodiag.schema import Record, parse_record
from reprodiag.store import Store
from scoring.config import ScoreConfig
from scoring.pipeline import run_score, score_batch

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _batch(make_record: Callable[..., Record]) -> list[Record]:
    recs = [make_record(i, problem_statement=f"Record {i}: top-1 is {70 + i / 10} vs paper 81.8, "
                                             f"config variant {i * 31 % 97}, seed {i}, run {i * 7 % 13}.")
            for i in range(30)]
    recs.append(make_record(100, is_reproduction=False))
    recs.append(make_record(101, comments=0))
    recs.append(make_record(102, problem_statement=f"token {GH} at /home/alice/x; @alice-w please"))
    recs.append(make_record(103, has_code_snippet=False, is_resolved=False, resolution_type="unresolved_valuable",
                            diagnostic_depth=5))
    return recs


def test_score_batch_counts_and_mix(make_record: Callable[..., Record]) -> None:
    res = score_batch(_batch(make_record), ScoreConfig())
    c = res.report.counts
    assert c["records"] == 34 and c["kept"] + c["dropped"] == 34
    assert c["dropped_not_reproduction"] == 1 and c["dropped_no_replies"] == 1
    assert c["kept_unresolved"] == 1 and c["kept_resolved"] == c["kept"] - 1
    assert c["split_train"] + c["split_validation"] + c["split_test"] == c["kept"]
    assert any("70%/30%" in n for n in res.report.notes)
    assert all(r.split is None for r in res.records if not r.quality.keep)
    assert c["redacted_github_token"] == 1
    assert GH not in json.dumps([r.model_dump(mode="json") for r in res.records])


def test_workspace_mode_is_idempotent_and_records_rejects(store: Store, make_record: Callable[..., Record],
                                                          tmp_path: Path) -> None:
    store.put_records(_batch(make_record))
    store._conn.execute("INSERT INTO records(thread_id, repo, error_type, doc, updated) "
                        "VALUES ('x/y#1','x/y','data','{not json',0)")
    store._conn.execute("INSERT INTO records(thread_id, repo, error_type, doc, updated) "
                        "VALUES ('x/y#2','x/y','data','{\"thread_id\": \"x/y#2\"}',0)")
    first = run_score(store, input=None, output=None, threshold=4, rejects=tmp_path / "rej.jsonl", seed=0)
    docs1 = [r.model_dump(mode="json") for r in store.iter_scored(kept_only=False)]
    second = run_score(store, input=None, output=None, threshold=4, rejects=None, seed=0)
    docs2 = [r.model_dump(mode="json") for r in store.iter_scored(kept_only=False)]
    assert docs1 == docs2 and len(docs1) == 34
    assert first.counts == second.counts and first.counts["rejects"] == 2
    rej = store.query("SELECT item_id, reason FROM rejects WHERE stage='score' ORDER BY item_id")
    assert [r[0] for r in rej] == ["x/y#1", "x/y#2"] and "repo" in rej[1][1]
    lines = [json.loads(x) for x in (tmp_path / "rej.jsonl").read_text().splitlines()]
    assert {x["thread_id"] for x in lines} == {"x/y#1", "x/y#2"}


def test_file_mode_rejects_bad_lines_and_writes_all_records(make_record: Callable[..., Record],
                                                            tmp_path: Path) -> None:
    good = [r.model_dump_json() for r in _batch(make_record)[:5]]
    lines = [good[0], "{broken json", good[1], '{"thread_id": "a/b#9", "repo": "a/b", "error_type": "oops"}',
             "", good[2], "[1, 2]", good[2], good[3], good[4]]
    src = tmp_path / "records.jsonl"
    src.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe not utf8\n")
    out, rej = tmp_path / "scored.jsonl", tmp_path / "rejects.jsonl"
    report = run_score(None, input=src, output=out, threshold=4, rejects=rej, seed=0)
    scored = [parse_record(json.loads(x)) for x in out.read_text().splitlines()]
    assert len(scored) == 5 and report.counts["records"] == 5
    rejects = [json.loads(x) for x in rej.read_text().splitlines()]
    assert report.counts["rejects"] == len(rejects) == 5
    by_line = {x["line"]: x for x in rejects}
    assert "malformed JSON" in by_line[2]["reason"]
    assert by_line[4]["thread_id"] == "a/b#9" and "error_type" in by_line[4]["reason"]
    assert "expected a JSON object" in by_line[7]["reason"]
    assert "duplicate" in by_line[8]["reason"]
    assert "UTF-8" in by_line[11]["reason"]


def test_unreadable_input_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read"):
        run_score(None, input=tmp_path / "missing.jsonl", output=None, threshold=4, rejects=None, seed=0)
    with pytest.raises(UserError, match="directory"):
        run_score(None, input=tmp_path, output=None, threshold=4, rejects=None, seed=0)


def test_cli_exit_2_on_unreadable_input(cli: Callable[..., object], tmp_path: Path) -> None:
    proc = cli("score", "--input", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2, proc.stderr
    assert "cannot read" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_scores_a_file(cli: Callable[..., object], make_record: Callable[..., Record], tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text("\n".join(r.model_dump_json() for r in _batch(make_record)) + "\n{bad\n")
    out = tmp_path / "s.jsonl"
    proc = cli("-q", "score", "--input", str(src), "--output", str(out), "--rejects", str(tmp_path / "rj.jsonl"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["counts"]["records"] == 34 and report["counts"]["rejects"] == 1
    assert GH not in out.read_text()


def test_cli_min_relevance_gates_the_filters_unsure_records(cli: Callable[..., object],
                                                            make_record: Callable[..., Record],
                                                            tmp_path: Path) -> None:
    recs = [make_record(i).model_copy(update={"relevance": p})
            for i, p in enumerate((0.2, 0.55, 0.75, 0.95, None))]
    src = tmp_path / "r.jsonl"
    src.write_text("".join(r.model_dump_json() + "\n" for r in recs))

    def kept(*flags: str) -> list[float | None]:
        out = tmp_path / "s.jsonl"
        proc = cli("-q", "score", "--input", str(src), "--output", str(out), *flags)
        assert proc.returncode == 0, proc.stderr
        rows = [parse_record(json.loads(x)) for x in out.read_text().splitlines()]
        assert {r.quality.drop_reason for r in rows if not r.quality.keep} <= {"low_relevance"}
        return [r.relevance for r in rows if r.quality.keep]

    assert kept() == [0.75, 0.95, None]
    assert kept("--min-relevance", "0.5") == [0.55, 0.75, 0.95, None]
    assert kept("--min-relevance", "0") == [0.2, 0.55, 0.75, 0.95, None]
    bad = cli("score", "--input", str(src), "--min-relevance", "1.5")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- split options, file-mode purity


def _dated(make_record: Callable[..., Record]) -> list[Record]:
    return [make_record(i, repo=f"lab{i % 4}/m{i % 4}", year=2019 + i % 6,
                        problem_statement=f"Record {i}: top-1 {60 + i} vs paper 81.8, variant {i * 37 % 101}, "
                                          f"seed {i * 13 % 17}, batch {i * 7 % 11}.")
            for i in range(24)]


def test_split_date_and_holdout_repos(make_record: Callable[..., Record], tmp_path: Path) -> None:
    src, out = tmp_path / "r.jsonl", tmp_path / "s.jsonl"
    src.write_text("\n".join(r.model_dump_json() for r in _dated(make_record)) + "\n")
    report = run_score(None, input=src, output=out, split_date="2022-01-01", holdout_repos=["lab1/m1"])
    scored = [parse_record(json.loads(x)) for x in out.read_text().splitlines()]
    kept = [r for r in scored if r.quality.keep]
    assert len(kept) > 10
    for r in kept:
        before = r.stats.created_at is not None and r.stats.created_at.year < 2022
        assert r.split == ("train" if before and r.repo != "lab1/m1" else "test"), r.thread_id
    assert {r.split for r in kept} == {"train", "test"}
    assert report.counts["split_validation"] == 0


def test_bad_split_options_are_user_errors(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text("")
    for kwargs in ({"split_date": "2022-13-01"}, {"split_date": "01/02/2022"}, {"holdout_repos": ["noslash"]},
                   {"holdout_repos": ["a/b/c"]}):
        with pytest.raises(UserError, match="split-date|holdout-repo"):
            run_score(None, input=src, output=None, **kwargs)


def test_cli_split_options(cli: Callable[..., object], make_record: Callable[..., Record], tmp_path: Path) -> None:
    src, out = tmp_path / "r.jsonl", tmp_path / "s.jsonl"
    src.write_text("\n".join(r.model_dump_json() for r in _dated(make_record)) + "\n")
    proc = cli("-q", "score", "--input", str(src), "--output", str(out), "--split-date", "2021-06-30",
               "--holdout-repo", "lab2/m2", "--holdout-repo", "lab3/m3")
    assert proc.returncode == 0, proc.stderr
    kept = [parse_record(json.loads(x)) for x in out.read_text().splitlines()]
    kept = [r for r in kept if r.quality.keep]
    assert all(r.split == "test" for r in kept if r.repo in ("lab2/m2", "lab3/m3"))
    assert any(r.split == "train" for r in kept) and not any(r.split == "validation" for r in kept)
    bad = cli("score", "--input", str(src), "--split-date", "tomorrow")
    assert bad.returncode == 2 and "YYYY-MM-DD" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_file_mode_leaves_the_workspace_alone(cli: Callable[..., object], store: Store,
                                              make_record: Callable[..., Record], tmp_path: Path) -> None:
    store.put_records(_dated(make_record)[:5])
    src, out = tmp_path / "r.jsonl", tmp_path / "s.jsonl"
    src.write_text("\n".join(r.model_dump_json() for r in _dated(make_record)) + "\n")
    runs_before = store.runs()
    assert run_score(store, input=src, output=out).counts["records"] == 24
    proc = cli("-q", "score", "--input", str(src), "--output", str(out), workspace=store.root)
    assert proc.returncode == 0, proc.stderr
    assert store.query("SELECT count(*) FROM scored")[0][0] == 0
    assert store.runs() == runs_before


# --------------------------------------------------------------------------- SIGKILL and rerun


def _scored_table(root: Path) -> list[tuple[str, str]]:
    s = Store(root, create=False)
    try:
        return [(r[0], r[1]) for r in s.query("SELECT thread_id, doc FROM scored ORDER BY thread_id")]
    finally:
        s.close()


def _score_cmd(root: Path) -> list[str]:
    return [sys.executable, "-m", "reprodiag", "-q", "-w", str(root), "score"]


def test_sigkill_mid_run_then_rerun_matches_a_clean_run(make_record: Callable[..., Record],
                                                        tmp_path: Path) -> None:
    recs = [make_record(i, repo=f"lab{i % 37}/m{i % 37}", year=2016 + i % 10,
                        participants=[(f"user{i % 50}", "asker"), ("bobmaint", "maintainer")],
                        problem_statement=f"Record {i} @user{i % 50}: got {i % 90}.{i % 7} vs 81.8, "
                                          f"run {i * 7919 % 1000}, torch=={i % 3}.{i % 12}.0, "
                                          f"token={GH if i % 97 == 0 else 'none'}")
            for i in range(2000)]
    recs += [make_record(5000 + i, repo="dup/x", problem_statement=recs[i].problem_statement) for i in range(40)]
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    for root in (clean, killed):
        s = Store(root)
        s.put_records(recs)
        s.close()
    s = Store(clean)
    run_score(s, input=None, output=None)
    s.close()
    expected = _scored_table(clean)
    assert len(expected) == len(recs) and GH not in "".join(d for _, d in expected)

    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    repo_root = Path(__file__).resolve().parents[2]

    def kill_mid_write() -> None:
        Store(killed).close()  # a clean close checkpoints and removes the WAL: it grows from 0 again
        wal = killed / "reprodiag.sqlite-wal"
        proc = subprocess.Popen(_score_cmd(killed), env=env, cwd=repo_root, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        # the scored table (~4 MB) is written in one transaction: 256 KB of WAL means mid-write
        while proc.poll() is None and time.monotonic() < deadline:
            if wal.exists() and wal.stat().st_size > 256 * 1024:
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed mid-write"

    def rerun() -> None:
        done = subprocess.run(_score_cmd(killed), env=env, cwd=repo_root, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]

    kill_mid_write()
    assert _scored_table(killed) == []  # nothing partial
    rerun()
    assert _scored_table(killed) == expected
    kill_mid_write()  # a killed rerun keeps the previous complete result
    assert _scored_table(killed) == expected
    rerun()
    assert _scored_table(killed) == expected


# --------------------------------------------------------------------------- batches, the stage, resumption


def _many(make_record: Callable[..., Record], n: int = 600) -> list[Record]:
    recs = [make_record(i, repo=f"lab{i % 23}/m{i % 23}", year=2016 + i % 10,
                        participants=[(f"user{i % 40}", "asker"), ("bobmaint", "maintainer")],
                        problem_statement=f"Record {i} @user{i % 40}: got {i % 90}.{i % 7} vs 81.8, "
                                          f"run {i * 7919 % 1000}, torch=={i % 3}.{i % 12}.0, variant {i * 31 % 997}")
            for i in range(n)]
    # cross-posts far apart in the input: they land in other batches than their originals
    recs += [make_record(9000 + i, repo="dup/x", problem_statement=recs[i].problem_statement) for i in range(0, 60, 3)]
    return recs


def test_result_does_not_depend_on_the_batch_size(make_record: Callable[..., Record], tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text("".join(r.model_dump_json() + "\n" for r in _many(make_record)))
    outs = {}
    for size in (1, 37, 5000):
        out = tmp_path / f"s{size}.jsonl"
        rep = run_score(None, input=src, output=out, batch_size=size)
        outs[size] = (out.read_text(), rep.counts, rep.notes)
    assert outs[1] == outs[37] == outs[5000]
    docs = [json.loads(x) for x in outs[37][0].splitlines()]
    dups = [d for d in docs if d["duplicate_of"]]
    assert len(dups) >= 15 and all(d["quality"]["drop_reason"] == "near_duplicate" for d in dups)
    assert not list(tmp_path.glob(".*score-stage*")), "the stage file is removed once the result is written"


def test_a_killed_run_resumes_from_its_finished_batches(make_record: Callable[..., Record], tmp_path: Path) -> None:
    """The run reads its input from a pipe that holds only the first 350 records: it commits three batches
    and waits for more, so the kill lands after them whatever the machine's speed (no timing involved)."""
    import sqlite3

    recs = _many(make_record, 1500)
    lines = [r.model_dump_json() + "\n" for r in recs]
    src, out, clean = tmp_path / "r.jsonl", tmp_path / "s.jsonl", tmp_path / "clean.jsonl"
    src.write_text("".join(lines))
    run_score(None, input=src, output=clean, batch_size=100)
    fifo = tmp_path / "r.pipe"
    os.mkfifo(fifo)
    stage = tmp_path / ".s.jsonl.score-stage.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    cmd = [sys.executable, "-m", "reprodiag", "-q", "score", "--input", str(fifo), "--output", str(out),
           "--batch-size", "100"]
    proc = subprocess.Popen(cmd, env=env, cwd=Path(__file__).resolve().parents[2], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    stored = 0
    with fifo.open("w") as pipe:  # opened once the child opens its end
        pipe.write("".join(lines[:350]))
        pipe.flush()
        patience = time.monotonic() + 300  # only a hang reaches it
        while proc.poll() is None and stored < 3 and time.monotonic() < patience:
            try:
                with sqlite3.connect(f"file:{stage}?mode=ro", uri=True, timeout=1) as c:
                    stored = c.execute("SELECT count(*) FROM score_batches").fetchone()[0]
            except sqlite3.Error:
                pass
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # the pipe is still open: the run cannot have finished
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and stored >= 3
    assert not out.exists() and stage.exists()
    rep = run_score(None, input=src, output=out, batch_size=100)
    assert out.read_text() == clean.read_text()
    reused = [n for n in rep.notes if "reused" in n]
    assert reused and int(reused[0].split()[0]) >= 3
    assert not stage.exists()


def test_a_changed_input_or_setting_is_scored_again_not_reused(make_record: Callable[..., Record],
                                                                tmp_path: Path) -> None:
    from scoring.pipeline import STAGE_NAME, _settings_key
    from scoring.stage import ScoreStage

    recs = _many(make_record, 300)
    src, out = tmp_path / "r.jsonl", tmp_path / "s.jsonl"
    src.write_text("".join(r.model_dump_json() + "\n" for r in recs))
    stage_path = tmp_path / f".s.jsonl.{STAGE_NAME}"
    # a stage left by a run with other settings (threshold 0) must not leak into a threshold-4 run
    other = ScoreConfig(threshold=0)
    from scoring.pipeline import _file_items, _score_into
    st = ScoreStage(stage_path, _settings_key(other))
    _score_into(_file_items(src), st, other, 50)
    st.close()
    rep = run_score(None, input=src, output=out, batch_size=50)
    assert not [n for n in rep.notes if "reused" in n]
    assert rep.counts == run_score(None, input=src, output=tmp_path / "fresh.jsonl", batch_size=50).counts
    # a damaged stage file costs only the work it held
    stage_path.write_bytes(b"not a database" * 100)
    assert run_score(None, input=src, output=out, batch_size=50).counts == rep.counts
    assert not stage_path.exists()


def test_the_stage_holds_only_redacted_text_and_the_workspace_keeps_none(store: Store,
                                                                         make_record: Callable[..., Record],
                                                                         tmp_path: Path) -> None:
    from scoring.pipeline import _records_items, _score_into, _settings_key
    from scoring.stage import ScoreStage

    recs = _many(make_record, 200)
    recs.append(make_record(7777, problem_statement=f"my token {GH} and mail li.wei@example.org"))
    cfg = ScoreConfig()
    stage = ScoreStage(tmp_path / "stage.sqlite", _settings_key(cfg))
    _score_into(_records_items(recs), stage, cfg, 64)
    stage.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("stage.sqlite*"))
    assert b"REDACTED" in raw
    assert GH.encode() not in raw and b"li.wei@example.org" not in raw
    store.put_records(recs)
    run_score(store, input=None, output=None, batch_size=64)
    assert not (store.root / "score-stage.sqlite").exists()
    assert store.count("scored") == len(recs)


def test_two_equal_batches_in_one_input_keep_the_first_one(make_record: Callable[..., Record],
                                                            tmp_path: Path) -> None:
    block = "".join(r.model_dump_json() + "\n" for r in _many(make_record, 100)[:40])
    src = tmp_path / "r.jsonl"
    src.write_text(block + block)
    small = run_score(None, input=src, output=tmp_path / "a.jsonl", rejects=tmp_path / "ra.jsonl", batch_size=40)
    whole = run_score(None, input=src, output=tmp_path / "b.jsonl", rejects=tmp_path / "rb.jsonl", batch_size=500)
    assert small.counts == whole.counts and small.counts["records"] == 40 and small.counts["rejects"] == 40
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()


def test_odd_but_valid_inputs_score_as_their_canonical_form(make_record: Callable[..., Record],
                                                            tmp_path: Path) -> None:
    """Lines the fast reader does not take as they are (keys missing or reordered, coercible values, naive or
    long-fraction timestamps, integers beyond 64 bits) give the same scored documents as the canonical lines
    of the same records."""
    recs = _batch(make_record)[:8]
    canonical = [r.model_dump(mode="json") for r in recs]
    odd = []
    for i, d in enumerate(canonical):
        d = json.loads(json.dumps(d))
        if i == 0:
            d = dict(reversed(list(d.items())))                      # other key order
        elif i == 1:
            d = {k: v for k, v in d.items() if k not in ("evidence", "split", "replay")}  # defaults left out
        elif i == 2:
            d["diagnostic_depth"] = str(d["diagnostic_depth"])        # a coercible string
        elif i == 3 and d["stats"].get("created_at"):
            d["stats"]["created_at"] = d["stats"]["created_at"].replace("Z", "")  # naive: read as UTC
        elif i == 4:
            d["stats"]["created_at"] = "2023-05-06T07:08:09.1234567Z"  # seven fraction digits: truncated
        elif i == 5:
            d["stats"]["reactions"] = 2 ** 70                          # beyond 64 bits
        odd.append(d)
    want = [Record.model_validate(d).model_dump(mode="json") for d in odd]
    src = tmp_path / "odd.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in odd), encoding="utf-8")
    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(json.dumps(d) + "\n" for d in want), encoding="utf-8")
    run_score(None, input=src, output=tmp_path / "a.jsonl", threshold=4, seed=0)
    run_score(None, input=ref, output=tmp_path / "b.jsonl", threshold=4, seed=0)
    a = (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    b = (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(a) == 8 and a == b
    assert json.loads(a[4])["stats"]["created_at"] == "2023-05-06T07:08:09.123456Z"
    assert json.loads(a[5])["stats"]["reactions"] == 2 ** 70
