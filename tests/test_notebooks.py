"""The notebooks execute against a workspace (the demo's once the whole pipeline exists) and are stored
without outputs."""

from __future__ import annotations

import importlib.util
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


def test_notebooks_are_stored_without_outputs() -> None:
    found = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert {p.name for p in found} >= {"explore.ipynb", "results.ipynb"}
    for p in found:
        nb = nbformat.read(p, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, p.name
