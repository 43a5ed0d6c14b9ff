"""Drafting ReplaySpecs from records, and replaying a reviewed draft against a local git repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reprodiag.errors import UserError
from reprodiag.schema import Hypothesis, Record, Symptom, Verdict
from reprodiag.store import Store
from sandbox.draft import approve_cases, case_id_for, draft_case, find_command, find_fix
from sandbox.pipeline import run_replay
from sandbox.spec import load_spec

PROBLEM = """I trained with the README command:
```bash
$ python train.py --epochs 3 --lr 0.3
```
and get accuracy 0.6 instead of the 0.9 in the paper."""


def record(**kw: object) -> Record:
    base: dict[str, object] = dict(
        thread_id="acme/toy#12", repo="acme/toy", error_type="hyperparameter", problem_statement=PROBLEM,
        symptom=Symptom(metric="accuracy", paper_value=0.9, obtained_value=0.6),
        resolution="The maintainer says the paper used `--lr 0.001`; with it the asker gets 0.9.",
        hypothesis_chain=[Hypothesis(text="learning rate too high", outcome="confirmed")],
    )
    base.update(kw)
    return Record(**base)  # type: ignore[arg-type]


def test_finds_command_and_flag_fix() -> None:
    assert find_command([PROBLEM]) == "python train.py --epochs 3 --lr 0.3"
    assert find_fix(["set `--lr 0.001` please"], "python x.py") == ("flags", {"--lr": "0.001"})
    assert find_fix(["in config.yaml:\n```yaml\nwarmup_steps: 4000\n```"], None) == \
        ("config", {"warmup_steps": "4000"})
    assert find_fix(["it was the seed, probably"], None) is None


def test_draft_of_a_complete_record(tmp_path: Path) -> None:
    d = draft_case(record())
    assert d.missing == () and d.toml is not None
    assert d.case_id == "acme-toy-12" == case_id_for("acme/toy#12")
    p = tmp_path / "case.toml"
    p.write_text(d.toml)
    spec = load_spec(p)
    assert spec.source.git == "https://github.com/acme/toy.git"
    assert (spec.paper_value, spec.reported_value, spec.thread_id) == (0.9, 0.6, "acme/toy#12")
    assert spec.run.command.startswith("python train.py --epochs 3 --lr 0.3")
    assert "--lr 0.001" in (spec.fix.command or "")


def test_incomplete_records_list_what_is_missing() -> None:
    d = draft_case(record(problem_statement="no code here", symptom=Symptom(metric="BLEU", paper_value=30.0),
                          resolution="unclear", hypothesis_chain=[]))
    assert d.toml is None
    assert set(d.missing) == {"a command in a code block", "obtained value",
                              "a concrete fix (flag or config change)"}
    assert "not a paper-reproduction thread" in draft_case(record(is_reproduction=False)).missing


def test_run_draft_writes_cases_and_is_idempotent(store: Store) -> None:
    store.put_records([record(), record(thread_id="acme/toy#13", resolution=None, hypothesis_chain=[])])
    r1 = run_replay(store, cases=[], draft=True)
    assert (r1.counts["drafted"], r1.counts["not_replayable"]) == (1, 1)
    cases = {c["case_id"]: c for c in store.cases()}
    assert cases["acme-toy-12"]["status"] == "draft"
    assert Path(cases["acme-toy-12"]["path"]) == store.root / "cases" / "acme-toy-12" / "case.toml"
    assert cases["acme-toy-13"]["status"] == "not_replayable"
    assert "a concrete fix (flag or config change)" in cases["acme-toy-13"]["missing"]
    # a reviewed case is never overwritten by a later draft run
    store.put_case("acme-toy-12", status="ready", path=cases["acme-toy-12"]["path"], thread_id="acme/toy#12")
    r2 = run_replay(store, cases=[], draft=True)
    assert r2.counts["already_reviewed"] == 1 and r2.counts["drafted"] == 0
    assert store.cases(status="ready")[0]["case_id"] == "acme-toy-12"


def test_reviewed_draft_replays_against_a_local_git_repo(bwrap_ok: None, store: Store, tmp_path: Path) -> None:
    origin = tmp_path / "toy"
    origin.mkdir()
    (origin / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\n"
        "p.add_argument('--epochs', type=int)\na = p.parse_args()\n"
        "print(f'accuracy: {0.9 if a.lr < 0.01 else 0.6}')\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."],
                ["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=origin, check=True, env=env)
    store.put_records([record()])
    run_replay(store, cases=[], draft=True)
    path = Path(store.cases()[0]["path"])
    # the reviewer points the draft at a reachable copy of the repository and marks it ready
    path.write_text(path.read_text().replace("https://github.com/acme/toy.git", f"file://{origin}"))
    with pytest.raises(UserError, match="no ready cases"):
        run_replay(store, cases=[], backend="bwrap")  # a draft is never replayed before it is approved
    with pytest.raises(UserError, match="no case 'nope'"):
        approve_cases(store, ["nope"])
    assert approve_cases(store, ["acme-toy-12"]).counts["ready"] == 1
    report = run_replay(store, cases=[], backend="bwrap")
    assert report.counts["confirmed"] == 1, report
    v: Verdict = next(store.iter_verdicts())
    assert v.thread_id == "acme/toy#12"
    assert v.before.values == [0.6] and v.after.values == [0.9]
