"""LLM judges: ``llm:SPEC`` (given the gold root cause and acceptable directions) and ``llm-free:SPEC``
(reference-free: the judge decides from the item alone which directions are plausible root causes).

The answer is parsed into directions first (as for the offline grader) and shown to the judge in a
shuffled order (seeded by item and answer, so a rerun asks the same), each with its own number; the judge
returns, per direction, its reasoning *before* its verdict:
``{"verdicts": [{"n": 2, "reasoning": "...", "match": true}, ...]}`` (the older ``{"matches": [...]}`` list,
in the order shown, is read too). When the verdict disagrees with the offline grader's, the judge grades
again in another order: two agreeing judge passes decide; two disagreeing ones leave the offline decision,
marked ``uncertain``. A judge reply that is not such JSON is retried once, then the grade is an error
(reported apart from misses), never a crash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from eval_diagnosis.answers import parse_directions
from eval_diagnosis.graders.base import DirectionGrade, Grade
from eval_diagnosis.prompt import user_prompt
from eval_diagnosis.providers import ChatClient, ProviderError
from reprodiag.jsontext import first_json_object
from reprodiag.schema import EvalItem

#: Changes with every change of the judge's system prompt or request layout: recorded verdicts made for
#: another version are stale.
JUDGE_PROMPT_VERSION = "judge-v2"
JUDGE_SYSTEM = (
    "You grade answers to a machine-learning reproduction diagnosis question against the item's true root "
    "cause. For each numbered direction decide whether it names the true root cause.\n"
    "- A hit names the same underlying cause: the same mechanism, in any words or language.\n"
    "- Not a hit: a bare category ('hyperparameters', 'the data', 'evaluation differences'); a list that names "
    "every category; a direction the answer itself rules out.\n"
    "- The right category with a different mechanism is a miss (another library's version when the cause is the "
    "PyTorch version; 'unfixed seeds' when the cause is nondeterminism under a fixed seed). A version mismatch of "
    "the right library is a hit, whichever way it suggests to move.\n"
    "- A direction written for another problem (it names this item's cause only through details this item does "
    "not have) is a miss.\n"
    "- A fragment of a direction is a hit only if it names the mechanism on its own.\n"
    "- A cause with two parts: naming the part the thread establishes as decisive is a hit; naming only a "
    "secondary part is a miss.\n"
    "Reason first, then decide. Reply with JSON only: "
    '{"verdicts": [{"n": <direction number>, "reasoning": "one sentence", "match": true|false}, ...one per '
    'direction], "reason": "one sentence"}.'
)
FREE_SYSTEM = (
    "You grade answers to a machine-learning reproduction diagnosis question without a reference answer. "
    "For each numbered direction decide whether it is a specific, plausible root cause for this symptom "
    "that an expert would check first. Reason first, then decide. Reply with JSON only: "
    '{"verdicts": [{"n": <direction number>, "reasoning": "one sentence", "match": true|false}, ...], '
    '"reason": "one sentence"}.'
)


def _order(item: EvalItem, answer: str, n: int, salt: int) -> list[int]:
    """A seeded shuffle of direction indices (the same item, answer and pass give the same order)."""
    import hashlib
    import random

    seed = int(hashlib.sha256(f"{item.id}\n{answer}\n{salt}".encode()).hexdigest()[:16], 16)
    idx = list(range(n))
    random.Random(seed).shuffle(idx)
    return idx


def _judge_prompt(item: EvalItem, directions: list[str], reference: bool, order: list[int] | None = None) -> str:
    parts = ["Question given to the model:", user_prompt(item), ""]
    if reference:
        parts += [f"True root cause: {item.gold_root_cause}",
                  "Acceptable directions: " + "; ".join(item.acceptable_directions or [item.gold_root_cause]), ""]
    parts.append("Directions in the answer (in no particular order; keep their numbers):")
    parts += [f"{i + 1}. {directions[i]}" for i in (order if order is not None else range(len(directions)))]
    return "\n".join(parts)


def _parse_verdict(text: str, n: int, order: list[int] | None = None) -> list[bool] | None:
    """Verdicts per direction in the answer's own order, from the keyed ``verdicts`` list (or the older
    ``matches`` list in the order shown)."""
    doc = first_json_object(text)
    if not isinstance(doc, dict):
        return None
    shown = order if order is not None else list(range(n))
    verdicts = doc.get("verdicts")
    if isinstance(verdicts, list):
        out = [False] * n
        seen = False
        for v in verdicts:
            if not isinstance(v, dict) or not isinstance(v.get("match"), bool):
                return None
            k = v.get("n")
            if isinstance(k, int) and 1 <= k <= n:
                out[k - 1] = v["match"]
                seen = True
        return out if seen or not verdicts else None
    matches = doc.get("matches")
    if not isinstance(matches, list) or not all(isinstance(x, bool) for x in matches):
        return None
    matches = (matches + [False] * n)[:n]
    out = [False] * n
    for pos, i in enumerate(shown):
        out[i] = matches[pos]
    return out


@dataclass(frozen=True)
class JudgeRequest:
    """What the judge is asked about one answer: its parsed directions, their texts, the order they are shown
    in, the prompt, and the request's custom id (stable for the same item, answer, prompt version and pass)."""

    dirs: list[Any]
    texts: list[str]
    order: list[int]
    system: str
    prompt: str
    custom_id: str


def judge_custom_id(item: EvalItem, answer: str, reference: bool = True, salt: int = 0) -> str:
    """A Batch-API-safe id of one judge request."""
    key = f"{JUDGE_PROMPT_VERSION}\n{int(reference)}\n{salt}\n{item.id}\n{item.gold_root_cause}\n{answer}"
    return "jd-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


def judge_request(item: EvalItem, answer: str, reference: bool = True, salt: int = 0) -> JudgeRequest | Grade:
    """The judge request for ``answer`` (pass ``salt``: 0 first, 1 the second order), or the Grade at once when
    there is nothing to ask (an empty or unparsable answer is a miss)."""
    dirs = parse_directions(answer)
    if not dirs:
        why = "empty answer" if not (answer or "").strip() else "no parsable direction (garbage answer)"
        return Grade(id=item.id, reason=f"miss: {why}")
    texts = [(d.raw or d.full)[:500] for d in dirs]
    order = _order(item, answer, len(texts), salt)
    return JudgeRequest(dirs, texts, order, JUDGE_SYSTEM if reference else FREE_SYSTEM,
                        _judge_prompt(item, texts, reference, order), judge_custom_id(item, answer, reference, salt))


def verdict_grade(item: EvalItem, req: JudgeRequest, verdict: list[bool], grader: str, *, note: str = "",
                  uncertain: bool = False) -> Grade:
    """The Grade of a judge's per-direction verdicts (in the answer's own order)."""
    graded = [DirectionGrade(text=t, matched=m, justified=d.justified)
              for t, m, d in zip(req.texts, verdict, req.dirs, strict=True)]
    rank = next((i for i, g in enumerate(graded, start=1) if g.matched), None)
    return Grade(id=item.id, hit=rank is not None, hit_rank=rank, directions=graded,
                 false_positives=sum(not g.matched for g in graded), justified=sum(g.justified for g in graded),
                 reason=(f"hit at rank {rank}" if rank else "miss: judge matched no direction") + note,
                 grader=grader, uncertain=uncertain)


def parse_verdict(text: str, req: JudgeRequest) -> list[bool] | None:
    """The verdicts of a judge reply to ``req`` in the answer's own order (None: not the requested JSON)."""
    return _parse_verdict(text, len(req.texts), req.order)


class LLMGrader:
    def __init__(self, chat: ChatClient, *, reference: bool = True) -> None:
        self.chat = chat
        self.reference = reference
        self.name = ("llm:" if reference else "llm-free:") + chat.spec
        self._offline_grader: object | None = None

    def _ask(self, item: EvalItem, texts: list[str], order: list[int]) -> list[bool] | str:
        prompt = _judge_prompt(item, texts, self.reference, order)
        for _ in range(2):
            try:
                reply = self.chat.complete(JUDGE_SYSTEM if self.reference else FREE_SYSTEM, prompt)
            except ProviderError as exc:
                return f"judge failed: {exc}"
            verdict = _parse_verdict(reply, len(texts), order)
            if verdict is not None:
                return verdict
        return "judge reply was not the requested JSON"

    def grade(self, item: EvalItem, answer: str, offline_hit: bool | None = None) -> Grade:
        """``offline_hit``: the offline grader's decision when the caller already has it (the cascade)."""
        req = judge_request(item, answer, self.reference)
        if isinstance(req, Grade):
            return req.model_copy(update={"grader": self.name})
        texts = req.texts
        first = self._ask(item, texts, req.order)
        if isinstance(first, str):
            return Grade(id=item.id, error=first, reason="error: " + first.split(":")[0], grader=self.name)
        verdict, uncertain, note = first, False, ""
        offline = offline_hit if offline_hit is not None else self._offline(item, answer)
        if offline is not None and any(first) != offline:
            second = self._ask(item, texts, _order(item, answer, len(texts), 1))
            if isinstance(second, list) and any(second) == any(first):
                note = " (confirmed in a second order)"
            elif isinstance(second, list):  # the second pass sides with the offline grader
                verdict, uncertain = second, True
                note = " (judge passes disagree: the offline decision is kept)"
        return verdict_grade(item, req, verdict, self.name, note=note, uncertain=uncertain)

    def _offline(self, item: EvalItem, answer: str) -> bool | None:
        """The offline grader's decision (None when its models are unavailable)."""
        if self._offline_grader is None:
            try:
                from eval_diagnosis.graders.concept import ConceptGrader

                self._offline_grader = ConceptGrader()
            except Exception:  # noqa: BLE001 - the judge works without the offline models
                self._offline_grader = False
        if self._offline_grader is False:
            return None
        return self._offline_grader.grade(item, answer).hit
