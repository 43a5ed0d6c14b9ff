"""inspect_ai entry point: ``inspect eval reprodiag/diagnosis --model PROVIDER/MODEL [-T eval_set=PATH]``.

inspect names a task after the import package that defines it, so the ``@task`` is declared here, in
``reprodiag``, and builds the task from :mod:`eval_diagnosis.inspect_task`. Needs the optional extra:
``pip install 'reprodiag[inspect]'``.
"""

from __future__ import annotations

try:
    from inspect_ai import Task, task
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the inspect_ai task needs the optional extra: pip install 'reprodiag[inspect]'") from exc

from eval_diagnosis.inspect_task import build_task


@task
def diagnosis(eval_set: str | None = None) -> Task:
    """The reprodiag diagnosis benchmark: one sample per eval item, scored by the lexical grader."""
    return build_task(eval_set)
