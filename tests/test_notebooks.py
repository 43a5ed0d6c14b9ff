"""The notebooks execute against a workspace (the demo's once the whole pipeline exists) and are stored
without outputs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO_ROOT / "notebooks"
DEMO_PARTS = ("miner.fake_github", "miner.index", "extract.pipeline", "scoring.pipeline", "sandbox.pipeline")


def _have(mod: str) -> bool:
    try:
        return importlib.util.find_spec(mod) is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture(scope="module")
def workspace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo workspace when every stage exists; otherwise a hand-made one laid out like the demo's."""
    if all(_have(m) for m in DEMO_PARTS):
        return request.getfixturevalue("demo_workspace")
    from eval_diagnosis.pipeline import run_eval
    from reprodiag.build import run_build
    from reprodiag.store import Store
    from tests.eval_diagnosis.corpus import make_workspace

    ws = make_workspace(tmp_path_factory.mktemp("nb"))
    with Store(ws) as s:
        run_build(s, ws / "demo-out" / "datasets", per_type_min=1, per_type_max=40, seed=0, push_to_hub=None)
        run_eval(ws / "demo-out" / "datasets", models=["baseline:prior", "baseline:rules"], grader="lexical",
                 out_dir=ws / "demo-out" / "eval", concurrency=2, store=s)
    return ws


def _run(name: str, monkeypatch: pytest.MonkeyPatch, **env: str) -> nbformat.NotebookNode:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(REPO_ROOT)}}).execute()
    return nb


def _text(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def _figures(nb: nbformat.NotebookNode) -> int:
    """Rendered matplotlib figures (PNG display outputs), not text drawn with '#' characters."""
    return sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []))


def test_explore_notebook_runs(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = _run("explore.ipynb", monkeypatch, REPRODIAG_WORKSPACE=str(workspace))
    text = _text(nb)
    assert "kept (score)" in text and "hyperparameter" in text and "####" not in text
    assert _figures(nb) >= 3  # the funnel, types / tiers / resolution, the quality-score histogram


def test_results_notebook_runs(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = workspace / "demo-out" / "eval" / "results.json"
    nb = _run("results.ipynb", monkeypatch, REPRODIAG_RESULTS=str(results))
    assert "baseline:prior" in _text(nb) and "hit@1" in _text(nb)
    assert _figures(nb) >= 2  # hit rate per type with intervals, hit rate vs false positives


TRAIN_DEPS = ("torch", "transformers", "trl")


@pytest.mark.train
@pytest.mark.skipif(not all(_have(m) for m in TRAIN_DEPS),
                    reason="needs reprodiag[train] (torch, transformers, trl): pip install -e '.[train]' or make "
                    "test-train")
def test_train_and_eval_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli) -> None:  # noqa: ANN001
    """build → SFT on sft_full → DPO → eval with hf: on a demo workspace (no replays: the build does not need
    them), with the tiny model."""
    workspace = tmp_path / "ws"
    proc = cli("-q", "demo", "--no-replay", workspace=workspace)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "train"
    monkeypatch.delenv("REPRODIAG_BASE_MODEL", raising=False)
    nb = _run("train_and_eval.ipynb", monkeypatch, REPRODIAG_WORKSPACE=str(workspace), REPRODIAG_TRAIN_OUT=str(out))
    text = _text(nb)
    assert "sft_full mix: resolved" in text and "SFT: 10 steps" in text and "DPO: 6 steps" in text
    assert "model: tiny" in text and "errors 0" in text
    results = json.loads((out / "eval" / "results.json").read_text())
    assert set(results["models"]) == {f"hf:{out / c}" for c in ("base", "sft", "dpo")}
    assert all(m["overall"]["n"] == results["n_items"] for m in results["models"].values())
    assert _figures(nb) >= 2  # the losses, hit rate per type with intervals


def test_notebooks_are_stored_without_outputs() -> None:
    found = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert {p.name for p in found} >= {"explore.ipynb", "results.ipynb", "train_and_eval.ipynb"}
    for p in found:
        nb = nbformat.read(p, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, p.name
