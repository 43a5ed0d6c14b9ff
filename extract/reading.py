"""What the offline reader reads from a thread before any learned model (:class:`Reading`): the posts, the
symptom, the confirming exchange, the cue-based type decision and the post roles behind it. The rules
extractor (:mod:`extract.rules`) and the learned models (:mod:`extract.learned`) both start from it."""

from __future__ import annotations

from dataclasses import dataclass

from extract.causetype import TypeDecision, decide_type
from extract.exchange import Exchange, read_exchange
from extract.symptom import SymptomFound, find_symptom
from extract.threadtext import Post, is_bot_comment, posts
from reprodiag.schema import Thread


def post_roles(ex: Exchange) -> dict[int, float]:
    """Post weights for :func:`decide_type` from the exchange (see extract.causetype)."""
    roles: dict[int, float] = {i: 0.3 for i in ex.refuted}
    for i in ex.confirmed:
        roles[i] = 2.5
    if ex.closing is not None and ex.cause is None:
        roles[ex.closing] = max(roles.get(ex.closing, 0.0), 2.5)
    if ex.cause is not None:
        roles[ex.cause] = 3.0
    if ex.confirmation is not None:
        roles[ex.confirmation] = 1.5
    if ex.self_diagnosis is not None:
        roles[ex.self_diagnosis] = 3.0
    return roles


def thread_symptom(thread: Thread) -> tuple[SymptomFound, str | None]:
    """Symptom from title + body; missing sides from the asker's comments: the paper's value from any of
    them, the obtained value only from those posted before anyone else replied (later numbers are post-fix
    results, not the failing run)."""
    found = find_symptom(thread.title + "\n" + thread.body)
    if found.paper and found.obtained:
        return found, None
    replied = False
    for c in thread.all_comments():
        if not c.author or c.author != thread.author:
            replied = replied or not is_bot_comment(c)
            continue
        more = find_symptom(c.body)
        paper = found.paper or more.paper
        obtained = found.obtained or (None if replied else more.obtained)
        if (paper, obtained) == (found.paper, found.obtained):
            continue
        if found.paper is None and found.obtained is None:
            return SymptomFound(more.metric, more.metric_quote, paper, obtained), c.id
        return SymptomFound(found.metric or more.metric, found.metric_quote or more.metric_quote, paper,
                            obtained), c.id
    return found, None



@dataclass(frozen=True)
class Reading:
    """What the rules read from a thread before any learned model: posts, the rules' symptom (and the comment
    it came from), the confirming exchange, the rules' type decision and the post roles behind it."""

    posts: list[Post]
    symptom: SymptomFound
    symptom_comment: str | None
    exchange: Exchange
    type_decision: TypeDecision
    roles: dict[int, float]


def read_thread(thread: Thread) -> Reading:
    ps = posts(thread)
    sym, sym_cid = thread_symptom(thread)
    ex = read_exchange(thread, ps, sym.paper.value if sym.paper else None,
                       sym.obtained.value if sym.obtained else None)
    roles = post_roles(ex)
    return Reading(ps, sym, sym_cid, ex, decide_type(ps, roles), roles)
