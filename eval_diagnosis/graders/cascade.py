"""``lexical+llm:SPEC``: the offline grader first; only the grades it marks ``uncertain`` go to the LLM judge
(whose verdict replaces them). Cost: one judge call per uncertain answer instead of one per answer."""

from __future__ import annotations

from eval_diagnosis.graders.base import Grade, Grader
from eval_diagnosis.graders.llm import LLMGrader
from reprodiag.schema import EvalItem


class CascadeGrader:
    def __init__(self, first: Grader, judge: Grader) -> None:
        self.first = first
        self.judge = judge
        self.name = f"{first.name}+{judge.name}"
        self.sent_to_judge = 0

    def grade(self, item: EvalItem, answer: str) -> Grade:
        g = self.first.grade(item, answer)
        if not g.uncertain:
            return g.model_copy(update={"grader": self.name})
        self.sent_to_judge += 1
        j = (self.judge.grade(item, answer, offline_hit=g.hit) if isinstance(self.judge, LLMGrader)
             else self.judge.grade(item, answer))
        if j.error is not None:  # the judge failed: keep the offline decision, still marked uncertain
            return g.model_copy(update={"grader": self.name, "reason": g.reason + f"; judge failed: {j.error}"})
        return j.model_copy(update={"grader": self.name, "uncertain": False, "confidence": g.confidence,
                                    "reason": f"judge: {j.reason} (offline p={g.confidence})"})
