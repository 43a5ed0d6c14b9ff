"""What a [fix] means: the README's ReplaySpec example (a fix that is a different way to run the evaluation)
is confirmed when it is correct and rejected on its metric when it is wrong, never silently ignored; a
tree-changing fix command still reruns [run] command; every verdict says which command gave the after-metric."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.backends.bwrap import BwrapBackend
from sandbox.backends.local import LocalBackend
from sandbox.replay import replay_case
from sandbox.spec import load_spec, same_program

#: An F1 script: micro averaging by default (86.20), the paper's macro averaging with --average macro (70.48).
EVAL_PY = '''import sys
avg = sys.argv[sys.argv.index("--average") + 1] if "--average" in sys.argv else "micro"
scores = {"micro": 86.20, "macro": 70.48, "weighted": 80.10}
print(f"F1: {scores[avg]:.2f}")
'''
HEAD = 'error_type = "evaluation_protocol"\nmetric = "F1"\n'
RUN = '[run]\ncommand = "python3 eval.py"\nmetric_regex = \'F1: ([0-9.]+)\'\n'


def _case(make_case: Callable[..., Path], name: str, fix: str) -> Path:
    return make_case(name, RUN + fix, files={"eval.py": EVAL_PY}, paper=70.48, reported=86.2, extra=HEAD)


@pytest.fixture(params=["local", "bwrap"])
def backend(request: pytest.FixtureRequest, tmp_path: Path):  # noqa: ANN201
    if request.param == "local":
        return LocalBackend()
    from sandbox.backends.bwrap import bwrap_status

    ok, why = bwrap_status()
    if not ok:
        pytest.skip(f"bwrap cannot run here: {why}")
    return BwrapBackend(tmp_path / "scratch")


def test_readme_example_fix_command_is_confirmed_when_correct(make_case, backend, tmp_path: Path) -> None:  # noqa: ANN001
    path = _case(make_case, "f1-average", '[fix]\ncommand = "python3 eval.py --average macro"\n')
    v = replay_case(load_spec(path), path, backend, scratch_root=tmp_path)
    assert v.verdict == "confirmed", v.reason
    assert v.before.values == [86.2] and v.after.values == [70.48]
    assert v.after_command == "python3 eval.py --average macro"
    assert v.fix_note and "read as [fix] run" in v.fix_note


def test_a_wrong_fix_is_rejected_on_its_metric_not_ignored(make_case, backend, tmp_path: Path) -> None:  # noqa: ANN001
    path = _case(make_case, "f1-weighted", '[fix]\ncommand = "python3 eval.py --average weighted"\n')
    v = replay_case(load_spec(path), path, backend, scratch_root=tmp_path)
    assert v.verdict == "fix_not_confirmed"
    assert v.after.values == [80.1]  # the wrong fix's own number, not the unchanged 86.2
    assert "80.1" in v.reason


def test_fix_run_key_and_tree_changing_commands(make_case, backend, tmp_path: Path) -> None:  # noqa: ANN001
    path = _case(make_case, "f1-run", '[fix]\nrun = "python3 eval.py --average macro"\n')
    v = replay_case(load_spec(path), path, backend, scratch_root=tmp_path)
    assert v.verdict == "confirmed" and v.after_command == "python3 eval.py --average macro" and v.fix_note is None
    # a command that edits the script: the unchanged [run] command is measured again, on the changed tree
    path = _case(make_case, "f1-sed", "[fix]\ncommand = \"sed -i 's/else \\\"micro\\\"/else \\\"macro\\\"/' eval.py\"\n")
    v = replay_case(load_spec(path), path, backend, scratch_root=tmp_path)
    assert v.verdict == "confirmed", v.reason
    assert v.after_command == "python3 eval.py" and v.fix_note is None


def test_a_command_that_prints_the_metric_and_changes_nothing_is_the_after_run(make_case, backend,  # noqa: ANN001
                                                                               tmp_path: Path) -> None:
    path = _case(make_case, "f1-sh", '[fix]\ncommand = "sh -c \'python3 eval.py --average macro\'"\n')
    v = replay_case(load_spec(path), path, backend, scratch_root=tmp_path)
    assert v.verdict == "confirmed" and v.fix_note and "changed no file" in v.fix_note


def test_same_program() -> None:
    assert same_program("python eval.py --average macro", "python eval.py")
    assert same_program("SEED=1 python eval.py", "python eval.py --x")
    assert not same_program("python train.py", "python eval.py")
    assert not same_program("sed -i s/a/b/ cfg.yaml", "python eval.py")
    assert not same_program("", "python eval.py")


def test_empty_fix_run_is_one_clear_error(make_case, tmp_path: Path) -> None:  # noqa: ANN001
    from reprodiag.errors import UserError

    path = _case(make_case, "f1-empty", '[fix]\nrun = "  "\n')
    with pytest.raises(UserError, match="fix.run"):
        load_spec(path)
