"""The grader contract: ``grade(item, answer) -> Grade``. One file per grader kind."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from reprodiag.schema import EvalItem


class DirectionGrade(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    matched: bool
    justified: bool = False


class Grade(BaseModel):
    """How one answer scored. ``hit_rank`` is 1-based (None: no hit); ``false_positives`` counts the
    directions that match no acceptable direction; ``error`` is set when no answer could be obtained
    (provider failure) — such grades are reported apart from misses; ``uncertain`` grades are counted apart
    too (they still carry the grader's best decision)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    model: str = ""
    hit: bool = False
    hit_rank: int | None = None
    directions: list[DirectionGrade] = Field(default_factory=list)
    false_positives: int = 0
    justified: int = 0
    error_type_match: bool | None = None
    reason: str = ""
    error: str | None = None
    grader: str = ""
    #: The offline grader's calibrated probability that the answer is a hit (None for other graders).
    confidence: float | None = None
    #: The grader was unsure (probability near its threshold): counted apart, sent to the LLM judge by
    #: ``--grader lexical+llm:SPEC``.
    uncertain: bool = False


class Grader(Protocol):
    """Grades one answer against one item. ``name`` goes into results.json."""

    name: str

    def grade(self, item: EvalItem, answer: str) -> Grade: ...


def error_grade(item_id: str, model: str, error: str, grader: str) -> Grade:
    return Grade(id=item_id, model=model, error=error, reason=f"error: {error}", grader=grader)
