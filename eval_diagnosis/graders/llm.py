"""LLM judges: ``llm:SPEC`` (given the gold root cause and acceptable directions) and ``llm-free:SPEC``
(reference-free: the judge decides from the item alone which directions are plausible root causes).

The answer is parsed into directions first (as for the lexical grader); the judge returns JSON
``{"matches": [true/false per direction], "reason": "..."}``. A judge reply that is not such JSON is
retried once, then the grade is an error (reported apart from misses), never a crash.
"""

from __future__ import annotations

from eval_diagnosis.answers import parse_directions
from eval_diagnosis.graders.base import DirectionGrade, Grade
from eval_diagnosis.prompt import user_prompt
from eval_diagnosis.providers import ChatClient, ProviderError
from reprodiag.jsontext import first_json_object
from reprodiag.schema import EvalItem

JUDGE_SYSTEM = (
    "You grade answers to a machine-learning reproduction diagnosis question. For each numbered direction "
    "decide whether it names the true root cause (same underlying cause, paraphrases and other languages "
    "count; vague category names like 'hyperparameters' or 'the data' do not). Reply with JSON only: "
    '{"matches": [true|false, ...one per direction], "reason": "one sentence"}.'
)
FREE_SYSTEM = (
    "You grade answers to a machine-learning reproduction diagnosis question without a reference answer. "
    "For each numbered direction decide whether it is a specific, plausible root cause for this symptom "
    "that an expert would check first. Reply with JSON only: "
    '{"matches": [true|false, ...one per direction], "reason": "one sentence"}.'
)


def _judge_prompt(item: EvalItem, directions: list[str], reference: bool) -> str:
    parts = ["Question given to the model:", user_prompt(item), ""]
    if reference:
        parts += [f"True root cause: {item.gold_root_cause}",
                  "Acceptable directions: " + "; ".join(item.acceptable_directions or [item.gold_root_cause]), ""]
    parts.append("Directions in the answer:")
    parts += [f"{i}. {d}" for i, d in enumerate(directions, start=1)]
    return "\n".join(parts)


def _parse_verdict(text: str, n: int) -> list[bool] | None:
    doc = first_json_object(text)
    matches = doc.get("matches") if isinstance(doc, dict) else None
    if not isinstance(matches, list) or not all(isinstance(x, bool) for x in matches):
        return None
    return (matches + [False] * n)[:n]


class LLMGrader:
    def __init__(self, chat: ChatClient, *, reference: bool = True) -> None:
        self.chat = chat
        self.reference = reference
        self.name = ("llm:" if reference else "llm-free:") + chat.spec

    def grade(self, item: EvalItem, answer: str) -> Grade:
        dirs = parse_directions(answer)
        if not dirs:
            why = "empty answer" if not (answer or "").strip() else "no parsable direction (garbage answer)"
            return Grade(id=item.id, reason=f"miss: {why}", grader=self.name)
        texts = [(d.raw or d.full)[:500] for d in dirs]
        prompt = _judge_prompt(item, texts, self.reference)
        verdict = None
        for _ in range(2):
            try:
                reply = self.chat.complete(JUDGE_SYSTEM if self.reference else FREE_SYSTEM, prompt)
            except ProviderError as exc:
                return Grade(id=item.id, error=str(exc), reason="error: judge failed", grader=self.name)
            verdict = _parse_verdict(reply, len(dirs))
            if verdict is not None:
                break
        if verdict is None:
            return Grade(id=item.id, error="judge reply was not the requested JSON", reason="error: judge reply",
                         grader=self.name)
        graded = [DirectionGrade(text=t, matched=m, justified=d.justified)
                  for t, m, d in zip(texts, verdict, dirs, strict=True)]
        rank = next((i for i, g in enumerate(graded, start=1) if g.matched), None)
        return Grade(id=item.id, hit=rank is not None, hit_rank=rank, directions=graded,
                     false_positives=sum(not g.matched for g in graded), justified=sum(g.justified for g in graded),
                     reason=f"hit at rank {rank}" if rank else "miss: judge matched no direction", grader=self.name)
