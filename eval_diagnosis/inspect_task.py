"""The diagnosis benchmark as an inspect_ai task: ``inspect eval reprodiag/diagnosis --model openai/gpt-4o-mini``.

The ``@task`` itself lives in :mod:`reprodiag.inspect_task` (inspect names a task after the import package
that defines it, so it must be ``reprodiag``); it is registered through the ``inspect_ai`` entry point in
pyproject.toml and calls :func:`build_task`. The eval set is the task argument
``eval_set`` (``-T eval_set=PATH``: JSONL, Parquet or a ``reprodiag build`` output dir), else
``$REPRODIAG_EVAL_SET``, else the small bundled sample. The scorer wraps the lexical grader: a sample is
correct when the answer names the root cause; hit rank, false positives and the grader's reason go
into the score's metadata. Needs the optional extra: ``pip install 'reprodiag[inspect]'``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

try:
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
    from inspect_ai.solver import TaskState, generate, system_message
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the inspect_ai task needs the optional extra: pip install 'reprodiag[inspect]'") from exc

from eval_diagnosis.graders.concept import ConceptGrader
from eval_diagnosis.io import load_eval_set
from eval_diagnosis.prompt import SYSTEM, user_prompt
from reprodiag.schema import EvalItem


def sample_eval_path() -> Path:
    """The bundled sample eval set (fictional items written for this project)."""
    return Path(str(resources.files("eval_diagnosis").joinpath("data", "sample_eval.jsonl")))


def _samples(items: list[EvalItem]) -> list[Sample]:
    return [Sample(id=it.id, input=user_prompt(it), target=it.gold_root_cause,
                   metadata={"item": it.model_dump(mode="json"), "error_type": it.error_type}) for it in items]


@scorer(metrics=[accuracy(), stderr()])
def diagnosis_hit() -> Any:
    """Correct when the offline (lexical) grader finds the root cause among the answer's directions."""
    grader = ConceptGrader()

    async def score(state: TaskState, target: Target) -> Score:
        item = EvalItem.model_validate(state.metadata["item"])
        g = grader.grade(item, state.output.completion if state.output else "")
        return Score(value=CORRECT if g.hit else INCORRECT, answer=(state.output.completion or "")[:2000],
                     explanation=g.reason,
                     metadata={"hit_rank": g.hit_rank, "false_positives": g.false_positives,
                               "directions": len(g.directions), "error_type": item.error_type})

    return score


def build_task(eval_set: str | None = None) -> Task:
    """The reprodiag diagnosis benchmark (one sample per eval item)."""
    path = Path(eval_set or os.environ.get("REPRODIAG_EVAL_SET") or sample_eval_path())
    items = load_eval_set(path)
    return Task(dataset=MemoryDataset(_samples(items), name="reprodiag-diagnosis"),
                solver=[system_message(SYSTEM), generate()], scorer=diagnosis_hit())
