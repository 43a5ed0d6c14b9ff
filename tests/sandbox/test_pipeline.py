"""run_replay and the ``reprodiag replay`` command: failures per case, output files, resumability."""

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
from reprodiag.schema import Verdict
from reprodiag.store import Store
from sandbox.gpu import detect_gpus
from sandbox.pipeline import run_replay
from tests.conftest import REPO_ROOT

MakeCase = Callable[..., Path]

FAST = """
[run]
command = "sh run.sh"
metric_regex = 'score ([0-9.]+)'
[fix]
command = "echo 'score 1.0' > value.txt"
"""
FAST_FILES = {"run.sh": "sleep 0.2; cat value.txt\n", "value.txt": "score 0.5\n"}


def test_failures_end_one_case_never_the_batch(bwrap_ok: None, make_case: MakeCase, tmp_path: Path) -> None:
    good = make_case("good", FAST, files=FAST_FILES, reported=0.5, extra='expected = "confirmed"')
    nometric = make_case("nometric", FAST, files={**FAST_FILES, "run.sh": "echo no number here\n"}, reported=0.5)
    crash = make_case("crash", FAST.replace('"sh run.sh"', '"python -c \'raise SystemExit(3)\'"'),
                      files=FAST_FILES)
    slow = make_case("slow", FAST.replace('"sh run.sh"', '"sleep 30"').replace("[fix]", "timeout_s = 1\n[fix]"),
                     files=FAST_FILES)
    nofix = make_case("nofix", FAST.replace("""command = "echo 'score 1.0' > value.txt\"""", ""), files=FAST_FILES,
                      reported=0.5)
    wrong = make_case("wrong", FAST, files=FAST_FILES, paper=2.0, reported=0.5, extra='expected = "confirmed"')
    out = tmp_path / "all.jsonl"
    report = run_replay(None, cases=[good, nometric, crash, slow, nofix, wrong], backend="bwrap", output=out,
                        concurrency=3)
    got = {d["case_id"]: Verdict.model_validate(d) for d in map(json.loads, out.read_text().splitlines())}
    assert got["good"].verdict == "confirmed"
    assert got["nometric"].verdict == "error" and "no number here" in got["nometric"].reason
    assert got["crash"].verdict == "error" and "exited with 3" in got["crash"].reason
    assert got["slow"].verdict == "timeout"
    assert got["nofix"].verdict == "error" and "[fix]" in got["nofix"].reason
    assert got["wrong"].verdict == "fix_not_confirmed" and got["wrong"].direction_ok is True
    assert report.counts["mismatched_expected"] == 1
    assert report.counts["error"] == 3 and report.counts["timeout"] == 1
    steps = got["good"].steps
    assert [s.phase for s in steps] == ["before", "fix", "after"]
    assert steps[0].metric == 0.5 and steps[2].metric == 1.0 and steps[0].seed == 0
    assert "score 0.5" in steps[0].stdout_tail


def test_seeds_are_passed_as_env(bwrap_ok: None, make_case: MakeCase, tmp_path: Path) -> None:
    case = make_case("seeds", FAST.replace("[fix]", "seeds = 3\n[fix]"),
                     files={**FAST_FILES, "run.sh": 'echo "score 1$SEED"\n'}, paper=11.0, reported=11.0)
    out = tmp_path / "v.json"
    run_replay(None, cases=[case], backend="bwrap", output=out)
    v = Verdict.model_validate_json(out.read_text())
    assert v.before.values == [10.0, 11.0, 12.0]
    assert [s.seed for s in v.steps if s.phase == "before"] == [0, 1, 2]


def test_git_source_is_cloned_in_setup(bwrap_ok: None, tmp_path: Path) -> None:
    repo = tmp_path / "origin"
    repo.mkdir()
    (repo / "run.sh").write_text("cat value.txt\n")
    (repo / "value.txt").write_text("score 0.5\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."],
                ["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "v1"],
                ["git", "tag", "v1"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env)
    (repo / "value.txt").write_text("score 9\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "v2"], cwd=repo,
                   check=True, env=env)
    case = tmp_path / "case.toml"
    case.write_text(f'id = "gitcase"\npaper_value = 1.0\nreported_value = 0.5\n[source]\ngit = "file://{repo}"\n'
                    f'ref = "v1"\n' + FAST)
    out = tmp_path / "v.json"
    run_replay(None, cases=[case], backend="bwrap", output=out)
    v = Verdict.model_validate_json(out.read_text())
    assert v.verdict == "confirmed", v.reason
    assert v.steps[0].phase == "setup" and v.steps[0].command.startswith("git clone file://")
    assert v.before.values == [0.5]  # the tag, not the newer commit


def test_gpu_case_is_skipped_without_a_gpu(make_case: MakeCase, tmp_path: Path, bwrap_ok: None) -> None:
    if detect_gpus().devices:
        pytest.skip("this host has a GPU")
    case = make_case("gpu", FAST + "[limits]\ngpus = 1\n", files=FAST_FILES)
    out = tmp_path / "v.json"
    run_replay(None, cases=[case], backend="bwrap", output=out)
    v = Verdict.model_validate_json(out.read_text())
    assert v.verdict == "skipped" and "GPU" in v.reason


def test_user_errors(make_case: MakeCase, store: Store) -> None:
    with pytest.raises(UserError, match="unsafe-local"):
        run_replay(None, cases=[make_case("a", FAST, files=FAST_FILES)], backend="local")
    with pytest.raises(UserError, match="nothing to replay"):
        run_replay(None, cases=[])
    with pytest.raises(UserError, match="no ready cases"):
        run_replay(store, cases=[])
    a = make_case("dup", FAST, files=FAST_FILES)
    b = make_case("dup2", FAST, files=FAST_FILES)
    b.write_text(b.read_text().replace('id = "dup2"', 'id = "dup"'))
    with pytest.raises(UserError, match="used by both"):
        run_replay(None, cases=[a, b])


def test_cli_errors_are_one_line(cli, tmp_path: Path, make_case: MakeCase) -> None:  # noqa: ANN001
    bad = tmp_path / "bad.toml"
    bad.write_text('id = "x"\npaper_value = "high"\n')
    proc = cli("replay", "--case", str(bad), "--output", str(tmp_path / "o.json"))
    assert proc.returncode == 2
    assert "paper_value" in proc.stderr and "Traceback" not in proc.stderr
    case = make_case("l", FAST, files=FAST_FILES)
    proc = cli("replay", "--case", str(case), "--backend", "local", "--output", str(tmp_path / "o.json"))
    assert proc.returncode == 2 and "--unsafe-local" in proc.stderr and "Traceback" not in proc.stderr


def test_auto_without_any_backend_skips_instead_of_running_locally(tmp_path: Path, make_case: MakeCase) -> None:
    marker = tmp_path / "ran-locally"
    case = make_case("nobackend", FAST, files={**FAST_FILES, "run.sh": f"touch {marker}; cat value.txt\n"})
    out = tmp_path / "v.json"
    env = {"PATH": str(tmp_path / "empty-bin"), "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "reprodiag", "replay", "--case", str(case), "--output", str(out)],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    v = Verdict.model_validate_json(out.read_text())
    assert v.verdict == "skipped" and "bubblewrap" in v.reason
    assert v.steps == []
    assert not marker.exists()


def _verdict_docs(ws: Path) -> dict[str, dict]:
    with Store(ws) as s:
        return {v.case_id: {**v.model_dump(mode="json", exclude={"steps"}),
                            "steps": [(st.phase, st.metric, st.exit_code) for st in v.steps]}
                for v in s.iter_verdicts()}


def test_sigkill_then_rerun_gives_the_same_verdicts(bwrap_ok: None, make_case: MakeCase, tmp_path: Path,
                                                    cli) -> None:  # noqa: ANN001
    cases = [make_case(f"k{i}", FAST, files=FAST_FILES, reported=0.5) for i in range(4)]
    args = ["replay", "--backend", "bwrap"] + [a for c in cases for a in ("--case", str(c))]
    clean_ws, killed_ws = tmp_path / "clean", tmp_path / "killed"
    assert cli(*args, workspace=clean_ws).returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    proc = subprocess.Popen([sys.executable, "-m", "reprodiag", "-w", str(killed_ws), *args], cwd=REPO_ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        if (killed_ws / "reprodiag.sqlite").exists():
            with Store(killed_ws) as s:
                if s.count("verdicts") >= 1:
                    break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Store(killed_ws) as s:
        assert s.count("verdicts") < 4  # it really was interrupted
    rerun = cli(*args, workspace=killed_ws)
    assert rerun.returncode == 0, rerun.stderr
    assert _verdict_docs(killed_ws).keys() == _verdict_docs(clean_ws).keys()
    for cid, doc in _verdict_docs(clean_ws).items():
        other = _verdict_docs(killed_ws)[cid]
        assert {k: v for k, v in other.items() if k != "steps"} == {k: v for k, v in doc.items() if k != "steps"}
        assert other["steps"] == doc["steps"]
