"""The diagnostic exchange of a thread: which reply the asker confirmed or refuted, and how it ended.

A thread is read as posts (body, then comments). An asker post *confirms* the
most recent cause-bearing reply before it when it says so ("that fixed it",
"thanks, makes sense"), or when it reports a number that moved most of the way
from the failing value to the paper's value; it *refutes* it when it says the
suggestion made no difference. A discussion's accepted answer is confirmed by
definition. ``closing`` is the last substantive reply before a thread closed as
completed, which on GitHub is usually the explanation that settled it.

Resolution type (SPEC.md): ``resolved`` when the asker confirmed or a reply
explained and the thread was closed as completed (or a discussion answer was
accepted; a maintainer's one-line answer prescribing a setting such as ``--lr 0.02``
counts as an explanation; "Fixed in #123" by a linked pull request resolves a closed
thread unless the asker objected last); ``unresolved_valuable`` when the thread holds at least two
diagnostic exchanges (substantive hypotheses, or the asker reporting the
result of a test) without that; else ``unresolved``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extract.causetype import POST_CHARS, cause_scores
from extract.cues import ACK, CAUSAL, CONFIRM, FIX, HYPOTHESIS, REFUTE
from extract.threadtext import Post, strip_code
from reprodiag.schema import Thread

#: A number in prose, not part of a version, id or exponent ("1.25e-4", "v2.1", "#12" are not read).
_NUM = re.compile(r"(?<![A-Za-z0-9_.#/@-])(\d{1,5}(?:\.\d+)?)(?![A-Za-z0-9_.]*\d|e-|[A-Za-z0-9_])")
#: Fraction of the gap a post-fix number must close to count as the fix working.
CLOSED_GAP = 0.5
#: Closing reasons that mean "done" (issues: COMPLETED; discussions: RESOLVED).
DONE_REASONS = frozenset({"completed", "resolved"})


@dataclass(frozen=True)
class Exchange:
    """Roles of posts (indices into the thread's posts; 0 is the body)."""

    cause: int | None  # the reply confirmed by the asker, or the accepted answer
    confirmation: int | None  # the asker post that confirmed it
    closing: int | None  # last substantive reply before a thread closed as completed
    maintainer_explanation: int | None  # first maintainer reply that explains a cause
    confirmed: frozenset[int]  # replies the asker confirmed (fully or in part)
    refuted: frozenset[int]  # replies the asker said made no difference
    diagnostic_posts: int  # substantive hypotheses + asker test reports
    self_diagnosis: int | None = None  # the asker post that names the cause it found itself ("my bad, I had ...")


#: A concrete setting: a command-line flag, ``key=value``, or a config file / path in backticks.
_SETTING = re.compile(r"(?<![\w-])--[a-z][\w.-]*|`[^`\n]*(?:=|\.ya?ml|\.py|\.json|\.cfg|/)[^`\n]*`|\b[a-z_][\w.]*=[\w.'\"-]+",
                      re.I)
#: Characters (prose) up to which a reply is a one-line answer.
ONE_LINE_CHARS = 200
#: "Fixed in #212", "closed by #31", "resolved via https://github.com/o/r/pull/9": the thread's problem was fixed
#: by a linked pull request or commit.
LINKED_FIX = re.compile(
    r"\b(?:fixed|resolved|addressed|closed|solved|corrected|patched)\s+(?:\w+\s+)?(?:in|by|via|with|through)\s+"
    r"(?:#\d+|(?:pr|pull request|commit)\s*#?\w+|https://github\.com/[\w.-]+/[\w.-]+/(?:pull|commit)/\w+)", re.I)


#: The asker owns up to a cause they found themselves ("my bad", "I see what the problem is", "turns out I ...").
SELF_FOUND = re.compile(
    r"\bmy (?:bad|mistake|fault|error)\b|\bi (?:see|found|figured out|realized|realised) (?:what|where|the|my) "
    r"(?:the )?(?:problem|issue|mistake|bug|reason|cause)|\bturn(?:s|ed) out (?:that )?(?:i|my|we)\b|"
    r"\bit was my\b|\bi (?:had|have) (?:passed|used|set|put|given|left) (?:the )?wrong\b|原来是我|是我(?:自己)?的问题|"
    r"我(?:发现|找到)了?(?:问题|原因)")


#: A post that ends on a question of its own.
_ASKS = re.compile(r"\?\s*(?:[^.?!\n]{0,60})$")


def one_line_setting(p: Post) -> bool:
    """A short reply that prescribes a concrete setting ("use --lr 0.02 for 8 GPUs", "set `use_07_metric=True`")."""
    prose = strip_code(p.body).strip()
    return len(prose) <= ONE_LINE_CHARS and bool(_SETTING.search(p.body)) and bool(FIX.search(prose))


def _has_cause(p: Post) -> bool:
    return any(v > 0 for v in cause_scores(strip_code(p.body[:POST_CHARS]).lower()).values())


def moved_toward(text: str, paper: float | None, obtained: float | None) -> bool:
    """``text`` reports a number that closed at least ``CLOSED_GAP`` of the gap between obtained and paper."""
    if paper is None or obtained is None or paper == obtained:
        return False
    gap = abs(paper - obtained)
    for m in _NUM.finditer(strip_code(text)):
        x = float(m.group(1))
        if x == obtained:
            continue
        if abs(x - paper) <= (1 - CLOSED_GAP) * gap and (x - obtained) * (paper - obtained) > 0:
            return True
    return False


def _verdict(p: Post, paper: float | None, obtained: float | None) -> str:
    """'confirm', 'partial' (improved but still short), 'refute' or '' for one asker post."""
    low = p.body[:POST_CHARS].lower()
    strong = bool(CONFIRM.search(low))
    ack = bool(ACK.search(low))
    ref = bool(REFUTE.search(low))
    improved = moved_toward(p.body[:POST_CHARS], paper, obtained)
    if strong and not REFUTE.search(low[:200]):
        return "confirm"
    if improved and ref:
        return "partial"
    if (ack or improved) and not ref:
        return "confirm"
    if ref:
        return "refute"
    return ""


def read_exchange(thread: Thread, ps: list[Post], paper: float | None = None,
                  obtained: float | None = None) -> Exchange:
    """The exchange of ``thread`` (``ps`` = :func:`extract.threadtext.posts`); ``paper``/``obtained`` are the
    symptom values, used to recognise a post-fix number as confirmation."""
    cause = confirmation = self_found = None
    confirmed: set[int] = set()
    refuted: set[int] = set()
    diagnostic = 0
    last_reply: int | None = None
    for p in ps[1:]:
        if p.is_bot:
            continue
        if p.is_answer and not p.is_asker:
            confirmed.add(p.index)
            if cause is None:
                cause = p.index
        if not p.is_asker:
            if p.is_corroboration:
                continue  # "+1, I get 91.5 too": corroborates the symptom, diagnoses nothing
            # a reply that answers the question just before it ("which split?" -> "the random one") counts
            answers = p.index > 1 and bool(_ASKS.search(strip_code(ps[p.index - 1].body[:POST_CHARS]).strip()[-200:]))
            substantive = (_has_cause(p) or bool(HYPOTHESIS.search(p.body[:POST_CHARS])) or one_line_setting(p)
                           or answers)
            if substantive:
                diagnostic += 1
                last_reply = p.index
            continue
        if self_found is None and SELF_FOUND.search(p.body[:POST_CHARS].lower()) and _has_cause(p):
            # the asker names the cause they found: their post explains, not the reply before it
            self_found = p.index
            confirmation = confirmation if confirmation is not None else p.index
            diagnostic += 1
            continue
        if last_reply is None:
            continue
        v = _verdict(p, paper, obtained)
        if v or _has_cause(p) or _NUM.search(strip_code(p.body[:POST_CHARS])):
            diagnostic += 1  # the asker answered with a result, a verdict or a cause of their own
        # the most recent reply before this post that names a cause (else the most recent one)
        prev = [q for q in ps[1:p.index] if not q.is_asker and not q.is_bot]
        target = next((q.index for q in reversed(prev) if _has_cause(q)), prev[-1].index if prev else None)
        if target is None:
            continue
        if v in ("confirm", "partial"):
            confirmed.add(target)
            if v == "confirm" and confirmation is None:
                confirmation = p.index
                cause = cause if cause is not None else target
        elif v == "refute":
            refuted.add(target)
    closing = None
    reason = (thread.state_reason or "").lower()
    if thread.state == "closed" and reason in DONE_REASONS:
        # a bystander's own question ("does it need CUDA installed?") closes nothing
        replies = [p for p in ps[1:] if not p.is_asker and not p.is_bot and _has_cause(p)
                   and (p.is_maintainer or not _ASKS.search(strip_code(p.body[:POST_CHARS]).strip()[-200:]))]
        if replies:
            closing = replies[-1].index
    expl = next((p.index for p in ps[1:] if p.is_maintainer and not p.is_asker and not p.is_bot
                 and ((_has_cause(p) and (CAUSAL.search(p.body[:POST_CHARS]) or len(p.body) > 120))
                      or one_line_setting(p))), None)
    return Exchange(cause, confirmation, closing, expl, frozenset(confirmed), frozenset(refuted - confirmed),
                    diagnostic, self_found)


def resolution_type(thread: Thread, ps: list[Post], ex: Exchange) -> str:
    """``resolved`` | ``unresolved_valuable`` | ``unresolved`` (see the module docstring)."""
    if any(p.is_answer for p in ps) or thread.answer_id is not None:
        return "resolved"
    reason = (thread.state_reason or "").lower()
    closed_done = thread.state == "closed" and (
        reason in DONE_REASONS or (not reason and not (ps and ps[-1].is_bot)))
    if closed_done:
        if ex.confirmation is not None:
            return "resolved"
        explained = ex.closing is not None or ex.maintainer_explanation is not None
        last_human = next((p for p in reversed(ps[1:]) if not p.is_bot), None)
        refuted_last = last_human is not None and last_human.is_asker and bool(REFUTE.search(last_human.body.lower()))
        if explained and not refuted_last and (reason in DONE_REASONS or ex.maintainer_explanation is not None):
            return "resolved"
        # fixed by a linked pull request or commit ("Fixed in #212") and the asker did not object
        if not refuted_last and any(not p.is_asker and not p.is_bot and LINKED_FIX.search(p.body[:POST_CHARS])
                                    for p in ps[1:]):
            return "resolved"
        # the asker found it themselves and closed
        if reason in DONE_REASONS and any(p.is_asker and p.index and (CONFIRM.search(p.body[:POST_CHARS].lower())
                                                                    or CAUSAL.search(p.body[:POST_CHARS])) for p in ps):
            return "resolved"
    return "unresolved_valuable" if ex.diagnostic_posts >= 2 else "unresolved"
