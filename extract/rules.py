"""The offline rules extractor: a grounded Record from a thread's text and structure alone.

How each field is read:

* symptom: :func:`extract.symptom.find_symptom` on the title + body, then the
  asker's own comments for whatever is still missing (the obtained value only
  from comments posted before anyone replied: later numbers are post-fix).
* exchange: :mod:`extract.exchange` finds the reply the asker confirmed (or
  refuted), the accepted answer, and the closing explanation of a thread closed
  as completed.
* hypotheses: cause-naming suggestion/question sentences of replies (the settled
  reply's plain statements too); outcome ``confirmed`` / ``refuted`` /
  ``untested`` from the exchange.
* root cause / resolution: the settled reply (confirmed, accepted, else the
  closing or a maintainer's explanation).
* error_type: :mod:`extract.causetype` (cue families weighted by each post's
  role in the exchange, negation and refutation counted against a type).
* resolution_type: :func:`extract.exchange.resolution_type`.
  ``diagnostic_depth`` = distinct hypotheses (≤ 4) + 1 for a root cause + 1 for
  a maintainer explanation.

Every field that states a fact carries Evidence; a field whose quote does not
check out against the thread is dropped, and ``grounded`` says all kept
evidence checked out.
"""

from __future__ import annotations

from dataclasses import dataclass

from extract.base import Extractor
from extract.causetype import cause_scores
from extract.cues import CAUSAL, CONFIRM, FIX, HYPOTHESIS
from extract.evidence import ThreadIndex, check_evidence
from extract.exchange import Exchange, resolution_type
from extract.reading import Reading, read_thread
from extract.relevance import classify
from extract.symptom import SymptomFound
from extract.threadinfo import environment, paper_mention, thread_stats, tried_quotes
from extract.threadtext import Post, has_code, sentences
from reprodiag.schema import (
    Evidence,
    ExtractorInfo,
    Hypothesis,
    Record,
    Symptom,
    TemporalTag,
    Thread,
)

PROMPT_VERSION = "rules-1"
MAX_HYPOTHESES = 8
MAX_SENTENCE = 400


@dataclass(frozen=True)
class _Hyp:
    text: str
    comment_id: str | None
    post_index: int
    outcome: str
    types: tuple[str, ...]


def _cause_types(text: str) -> dict[str, float]:
    """Types whose cues score positively in ``text``."""
    return {t: v for t, v in cause_scores(text.lower()).items() if v > 0}


def _hypotheses(ps: list[Post], ex: Exchange, resolved: bool) -> list[_Hyp]:
    """Cause-naming suggestions of replies (at most 2 per reply). The settled reply (confirmed, or the closing
    explanation of a resolved thread) counts as confirmed, and its plain statements ("Use --aug-test.") are
    hypotheses too."""
    out: list[_Hyp] = []
    seen: set[str] = set()
    settled = ex.cause if ex.cause is not None else ex.closing if resolved else None
    for p in ps[1:]:
        if p.is_asker or p.is_bot:
            continue
        confirmed = p.index in ex.confirmed or p.index == settled
        outcome = "confirmed" if confirmed else "refuted" if p.index in ex.refuted else "untested"
        n = 0
        for s in sentences(p.body, p.comment_id):
            if len(s.text) > MAX_SENTENCE or not (confirmed or HYPOTHESIS.search(s.text)):
                continue
            types = tuple(_cause_types(s.text))
            if not types:
                continue
            key = s.text.lower()
            if key in seen:
                continue
            seen.add(key)
            out.append(_Hyp(s.text, p.comment_id, p.index, outcome, types))
            n += 1
            if n >= 2:
                break
    return out[:MAX_HYPOTHESES]


def _pick_sentence(text: str, cid: str | None, prefer: tuple[str, ...] = ()) -> str | None:
    """The most explanatory sentence of a post: causal + cause cue, then cause cue, then causal."""
    best: tuple[float, str] | None = None
    for s in sentences(text, cid):
        if len(s.text) > MAX_SENTENCE:
            continue
        types = _cause_types(s.text)
        score = (3 if CAUSAL.search(s.text) else 0) + (2 if types else 0) + (1 if any(t in types for t in prefer)
                                                                             else 0)
        if score and (best is None or score > best[0]):
            best = (score, s.text)
    return best[1] if best else None


def _fix_sentence(text: str, cid: str | None) -> str | None:
    """The sentence that states the fix: a fix verb with a cause cue, else a confirmation."""
    ss = [s.text for s in sentences(text, cid) if len(s.text) <= MAX_SENTENCE]
    for s in ss:
        if FIX.search(s) and _cause_types(s):
            return s
    return next((s for s in ss if CONFIRM.search(s.lower())), None)


def _problem_statement(thread: Thread, sym: SymptomFound) -> str:
    parts = [thread.title.strip()]
    for v in (sym.obtained, sym.paper):
        if v is not None and v.quote not in parts and v.quote not in thread.title:
            parts.append(v.quote)
    return " — ".join(p for p in parts if p)[:600]


def pick_values(thread: Thread, rd: Reading) -> tuple[SymptomFound, str | None]:
    """The symptom with its values chosen by the learned value rankers (``values_paper`` /
    ``values_obtained``): the best-ranked candidate of each side when its calibrated probability reaches
    the model's threshold, else null (a null is better than a wrong value). The metric is the rules'."""
    from extract.learned.predict import rank_values

    return rank_values(thread, rd)


def learned_resolution(thread: Thread, rd: Reading) -> str:
    """``resolved`` when the learned is_resolved model says the thread establishes the cause; otherwise the
    rules' reading decides between ``unresolved_valuable`` and ``unresolved``."""
    from extract.learned.predict import resolved_prob, shipped_model

    m = shipped_model("resolved")
    if resolved_prob(thread, rd) >= m.threshold:
        return "resolved"
    rules = resolution_type(thread, rd.posts, rd.exchange)
    return "unresolved_valuable" if rules == "resolved" else rules


def learned_type(rd: Reading) -> str:
    """The learned error-type model's top class when it was trained to replace the rules (it cross-validated
    better), else the rules' decision."""
    from extract.learned.predict import type_of

    return type_of(rd)


class RulesExtractor(Extractor):
    """Deterministic, offline, cheap. ``extract`` is pure (no I/O)."""

    backend = "rules"

    def extract(self, threads: list[Thread]) -> list[Record]:
        return [self.extract_one(t) for t in threads]

    def extract_one(self, thread: Thread) -> Record:
        rd = read_thread(thread)
        ps, ex, decision = rd.posts, rd.exchange, rd.type_decision
        ev: list[Evidence] = []
        sym, sym_cid = pick_values(thread, rd)
        for field, val in (("symptom.paper_value", sym.paper), ("symptom.obtained_value", sym.obtained)):
            if val is not None:
                ev.append(Evidence(field=field, comment_id=sym_cid, quote=val.quote))
        if sym.metric and sym.metric_quote:
            ev.append(Evidence(field="symptom.metric", comment_id=sym_cid,
                               quote=sym.metric_quote))
        etype = learned_type(rd)
        if decision.quote:
            ev.append(Evidence(field="error_type", comment_id=decision.comment_id, quote=decision.quote))
        root = resolution = None
        src_index = next((i for i in (ex.cause, ex.closing, ex.maintainer_explanation) if i is not None), None)
        source = ps[src_index] if src_index is not None else None
        if source is not None:
            root = _pick_sentence(source.body, source.comment_id, (etype,))
            if root:
                ev.append(Evidence(field="root_cause", comment_id=source.comment_id, quote=root))
        rtype = learned_resolution(thread, rd)
        resolved = rtype == "resolved"
        hyps = _hypotheses(ps, ex, resolved)
        for i, h in enumerate(hyps):
            ev.append(Evidence(field=f"hypothesis_chain.{i}", comment_id=h.comment_id, quote=h.text))
        fix_posts = ([ps[ex.cause]] if ex.cause is not None else []) + (
            [ps[ex.confirmation]] if ex.confirmation is not None else []) + ([source] if source else [])
        for post in fix_posts if resolved else []:
            if resolution is None:
                resolution = _fix_sentence(post.body, post.comment_id)
                if resolution:
                    ev.append(Evidence(field="resolution", comment_id=post.comment_id, quote=resolution))
        env = environment(thread)
        if env.text and env.quote:
            ev.append(Evidence(field="environment", comment_id=env.quote_comment, quote=env.quote))
        paper, pquote = paper_mention(thread)
        if paper and pquote:
            ev.append(Evidence(field="paper", comment_id=None, quote=pquote))
        tq = tried_quotes(thread)
        for q, cid in tq:
            ev.append(Evidence(field="tried", comment_id=cid, quote=q))

        checked = check_evidence(thread, ev, ThreadIndex.of(thread))
        bad = set(checked.failed_fields)
        depth = min(len({h.text for h in hyps}), 4) + (1 if root and "root_cause" not in bad else 0) \
            + (1 if ex.maintainer_explanation is not None else 0)
        pv = None if "symptom.paper_value" in bad or sym.paper is None else sym.paper.value
        ov = None if "symptom.obtained_value" in bad or sym.obtained is None else sym.obtained.value
        symptom = Symptom(metric=None if "symptom.metric" in bad else sym.metric, paper_value=pv,
                          obtained_value=ov, gap=round(ov - pv, 6) if pv is not None and ov is not None else None)
        chain = [Hypothesis(text=h.text, comment_id=h.comment_id, outcome=h.outcome)  # type: ignore[arg-type]
                 for i, h in enumerate(hyps) if f"hypothesis_chain.{i}" not in bad]
        decision = classify([thread])[0]
        return Record(
            thread_id=thread.id,
            repo=thread.repo,
            is_reproduction=decision.is_reproduction,
            relevance=decision.score,
            error_type=etype if "error_type" not in bad else "other",  # type: ignore[arg-type]
            problem_statement=_problem_statement(thread, sym),
            symptom=symptom,
            hypothesis_chain=chain,
            root_cause=root if "root_cause" not in bad else None,
            resolution=resolution if "resolution" not in bad else None,
            is_resolved=resolved,
            resolution_type=rtype,  # type: ignore[arg-type]
            diagnostic_depth=depth,
            has_code_snippet=has_code(thread.body) or any(has_code(c.body) for c in thread.all_comments()),
            evidence=checked.evidence,
            temporal_tag=TemporalTag(created_year=thread.created_at.year, framework_versions=env.versions),
            extractor=ExtractorInfo(backend="rules", model=None, prompt_version=PROMPT_VERSION),
            grounded=bool(checked.evidence) and not bad,
            environment=env.text if "environment" not in bad else None,
            paper=paper if "paper" not in bad else None,
            tried=" ".join(q for q, _ in tq) if tq and "tried" not in bad else None,
            stats=thread_stats(thread),
        )
