"""Fixtures for the build / eval_diagnosis tests: a hand-made workspace and its build output."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprodiag.store import Store
from tests.eval_diagnosis.corpus import make_workspace
from tests.fakes.llm_fixtures import anthropic_server, openai_server  # noqa: F401


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build output directory (sft/dpo/eval) from the hand-made corpus; read-only for tests."""
    from reprodiag.build import run_build

    root = tmp_path_factory.mktemp("built")
    ws = make_workspace(root)
    with Store(ws) as s:
        run_build(s, root / "out", per_type_min=2, per_type_max=4, seed=0, push_to_hub=None)
    return root / "out"
