"""``reprodiag build``: the published datasets (SFT, DPO, diagnosis eval) from scored records.

Input: kept records (``store.iter_scored(kept_only=True)``), each redacted (:mod:`reprodiag.redact`) before
any of its text reaches a dataset, the threads they came from, and replay verdicts (``store.iter_verdicts()``,
matched on ``thread_id``; ``verified`` = a confirmed verdict).

Prompts hold only what the asker knew before the diagnosis (:mod:`reprodiag.rowtext`): the title and the
cleaned opening post, "what I tried" and values only from the asker's text before the first reply. Answers
are complete sentences; names in greetings and sign-offs become role placeholders. A row whose prompt
already holds the cause (:func:`reprodiag.audit.leak_share` above the audit's threshold) is left out, and
so is an eval item without a declarative gold cause; both are counted in the card. DPO rejected answers
come from real content (:mod:`reprodiag.pairs`). The build ends with :func:`reprodiag.audit.audit` of its
own output (``audit.json``, summary in the card).

Eval repositories are carved out first: a repository whose records feed the eval set contributes
nothing to SFT/DPO (in any split), so training and eval are repository-disjoint. Records of the
``filtered`` temporal tier never reach SFT/DPO. SFT/DPO splits follow the record's ``split``
(train/validation/test, assigned by scoring per repository; missing → train).

People's reviews (``reprodiag review``, :mod:`reprodiag.review.decisions`) apply: the fields a reviewer
changed replace the reader's, an item rejected in the eval queue leaves the eval set (one rejected in the SFT
queue leaves SFT and DPO), ``--reviewed-only`` builds the eval set from accepted or edited items only, and the
card reports the reviewed share per type and the agreement figures (:mod:`reprodiag.review.agreement`). With
nothing reviewed the build is what it was without reviews.

Output (``OUT``): one folder per configuration (:mod:`reprodiag.mixes`): ``sft/``, the SFT mixes
``sft_resolved/`` and ``sft_full/`` (subsets of ``sft``), ``dpo/``, ``eval/`` (``DatasetDict.save_to_disk`` plus
``<split>.parquet``), and ``README.md`` (dataset card, whose ``configs:`` make ``load_dataset(OUT, NAME)`` work). The whole directory is built under a
temporary name and renamed into place, so a killed build leaves the previous ``OUT`` intact.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprodiag import console as out
from reprodiag.card import CardFacts, dataset_card
from reprodiag.errors import UserError
from reprodiag.mixes import CONFIGS, SFT_MIXES, MixFacts, sft_mixes
from reprodiag.pairs import Candidate, Rejected, choose_donors, donor_pair, swapped
from reprodiag.rowtext import (
    MAX_OPENING_CHARS,
    AskerView,
    addressee_placeholder,
    as_sentence,
    asker_view,
    cut_text,
    known_sentences,
    neutralize_names,
    value_known,
)
from reprodiag.schema import ERROR_TYPES, EvalItem, Record, StageReport, Symptom, parse_record
from reprodiag.store import Store

if TYPE_CHECKING:
    from reprodiag.review.agreement import ReviewFacts

MARKER = ".reprodiag-build"
SPLITS = ("train", "validation", "test")
MAX_EVAL_SHARE = 0.34
EVAL_QUESTION = ("List the most likely diagnosis directions for this gap, most likely first, one per numbered "
                 "line, each with a short justification. No fix is needed.")
SFT_QUESTION = "What is the most likely cause of the gap, and how do I fix it?"
DPO_QUESTION = "What is the most likely cause of the gap?"
SYSTEM_PROMPT = ("You are an experienced machine-learning researcher. Someone cannot reproduce a number reported "
                 "in a paper. Reason from the symptom through the plausible hypotheses to the most likely root "
                 "cause, say how to verify it, and how to fix it. If the evidence is not conclusive, say so and "
                 "name what to check next.")

# --------------------------------------------------------------------------- pure parts


@dataclass(frozen=True)
class EvalCarve:
    """Which records go to eval, which leave training with their repository, and which remain for training."""

    eval_records: list[Record]
    eval_repos: frozenset[str]
    held_out: list[Record]
    train_records: list[Record]
    shortfall: dict[str, int] = field(default_factory=dict)


#: ``build --eval-from``: eval items from the LLM reader's records only (the default), or from the offline
#: reader's records too (``offline``; the card flags them with the offline reader's measured eval_sound).
EVAL_FROM = ("llm", "offline")


def reader_of(r: Record) -> str:
    """``offline`` for the rules extractor's records, ``llm`` for every LLM reader's (any provider, recorded
    answers included)."""
    return "offline" if r.extractor.backend == "rules" else "llm"


def eval_eligible(r: Record) -> bool:
    """A record can become an eval item: one of the five types and a known root cause."""
    if r.error_type not in ERROR_TYPES or not (r.root_cause or "").strip():
        return False
    return r.is_resolved or r.resolution_type == "resolved" or any(h.outcome == "confirmed"
                                                                  for h in r.hypothesis_chain)


def carve_eval(records: list[Record], *, per_type_min: int, per_type_max: int, seed: int,
               max_share: float = MAX_EVAL_SHARE) -> EvalCarve:
    """Pick eval repositories (seeded order): those scoring put in the test split, then others, while they
    help a type below ``per_type_min``; then more test-split repositories while a type is below
    ``per_type_max``. Repositories taken for eval
    may hold at most ``max_share`` of all records (so a small corpus keeps training data); the
    ``shortfall`` maps each type to the items it lacks below ``per_type_min``."""
    per_type_max = max(per_type_max, 1)
    by_repo: dict[str, list[Record]] = {}
    for r in records:
        by_repo.setdefault(r.repo, []).append(r)
    elig = {repo: [r for r in rs if eval_eligible(r)] for repo, rs in by_repo.items()}
    rng = random.Random(seed)
    test_repos = sorted(repo for repo, rs in by_repo.items() if sum(r.split == "test" for r in rs) * 2 > len(rs))
    other = sorted(set(by_repo) - set(test_repos))
    rng.shuffle(test_repos)
    rng.shuffle(other)
    budget = max_share * len(records)
    counts: Counter[str] = Counter()
    used = 0
    taken: list[str] = []

    def gain(repo: str, ceiling: int) -> int:
        have = Counter(r.error_type for r in elig[repo])
        return sum(min(n, max(0, ceiling - counts[t])) for t, n in have.items())

    passes = ((test_repos, per_type_min), (other, per_type_min), (test_repos, per_type_max))
    for repos, ceiling in passes:
        for repo in repos:
            if repo in taken or not elig[repo] or gain(repo, ceiling) == 0:
                continue
            cost = len(by_repo[repo])
            if used + cost > budget:
                continue
            taken.append(repo)
            used += cost
            for r in elig[repo]:
                counts[r.error_type] += 1
    eval_recs: list[Record] = []
    held: list[Record] = []
    per_type: Counter[str] = Counter()
    for repo in sorted(taken):
        for r in sorted(by_repo[repo], key=lambda x: x.thread_id):
            if eval_eligible(r) and per_type[r.error_type] < per_type_max:
                eval_recs.append(r)
                per_type[r.error_type] += 1
            else:
                held.append(r)
    taken_set = frozenset(taken)
    train = [r for r in records if r.repo not in taken_set]
    shortfall = {t: per_type_min - per_type[t] for t in ERROR_TYPES if per_type[t] < per_type_min}
    return EvalCarve(eval_recs, taken_set, held, train, shortfall)


def _num(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:g}"


@dataclass(frozen=True)
class RowSource:
    """One kept record as the datasets see it: redacted, with the asker's view of its thread (None when the
    workspace does not hold the thread) and the values a prompt may show (those the asker wrote)."""

    record: Record
    view: AskerView | None
    shown: Symptom
    #: The thread participants' logins as stored (for the audit's check that none reached a dataset).
    logins: tuple[str, ...] = ()

    @property
    def created(self) -> datetime | None:
        return self.record.stats.created_at

    @cached_property
    def diagnosis(self) -> Diagnosis | None:
        """:func:`diagnosis_of` this source, computed once (SFT, DPO and eval all read it)."""
        return diagnosis_of(self)


def shown_symptom(r: Record, view: AskerView | None) -> Symptom:
    """The record's symptom restricted to what the asker wrote before any reply: a value that is not in the
    asker's text is left out (it came from a quote or a later post), and equal paper and obtained values
    (no gap: one of them was misread) are both left out."""
    s = r.symptom
    pv, ov = s.paper_value, s.obtained_value
    if view is not None:
        pv = pv if value_known(pv, view.known) else None
        ov = ov if value_known(ov, view.known) else None
    if pv is not None and ov is not None and pv == ov:
        pv = ov = None
    gap = round(ov - pv, 6) if pv is not None and ov is not None else None
    return Symptom(metric=s.metric, paper_value=pv, obtained_value=ov, gap=gap)


def symptom_text(src: RowSource) -> str:
    """``"BLEU: obtained 26.1, paper reports 28.4 (gap -2.3)"``; one side only when only one is known."""
    s = src.shown
    if s.paper_value is not None and s.obtained_value is not None:
        return (f"{s.metric or 'metric'}: obtained {_num(s.obtained_value)}, paper reports {_num(s.paper_value)} "
                f"(gap {s.obtained_value - s.paper_value:+.4g})")
    if s.paper_value is not None:
        return f"{s.metric or 'metric'}: paper reports {_num(s.paper_value)}; my run does not reach it"
    if s.obtained_value is not None:
        return f"{s.metric or 'metric'}: obtained {_num(s.obtained_value)}, which does not match the paper's number"
    return f"{s.metric}: my result does not match the paper" if s.metric else "my result does not match the paper"


def environment_text(r: Record) -> str:
    if r.environment:
        return r.environment
    return ", ".join(f"{k} {v}" for k, v in sorted(r.temporal_tag.framework_versions.items()))


def paper_text(r: Record, paper_titles: dict[str, str]) -> str:
    return r.paper or paper_titles.get(r.repo) or r.repo


def tried_text(src: RowSource) -> str:
    """"What I tried": only sentences the asker wrote before anyone replied, and not already in the opening."""
    r, view = src.record, src.view
    if view is None:
        return ""
    tried = known_sentences(r.tried, view.known)
    opening = " ".join(view.opening.split()).lower()
    return "" if not tried or " ".join(tried.split()).lower().strip(" .") in opening else tried


def report_text(src: RowSource) -> str:
    """The asker's own report: the title and the cleaned opening post (or, without the thread, the record's
    problem statement cut at a sentence end)."""
    if src.view is not None:
        return "\n".join(p for p in (src.view.title, src.view.opening) if p)
    text, _cut = cut_text(" ".join((src.record.problem_statement or "").split()), MAX_OPENING_CHARS)
    return text


def user_message(src: RowSource, paper_titles: dict[str, str], question: str = SFT_QUESTION) -> str:
    r = src.record
    lines = [f"I am trying to reproduce a result of {paper_text(r, paper_titles)} (code: {r.repo})."]
    env = environment_text(r)
    if env:
        lines.append(f"Environment: {env}")
    lines.append(f"Symptom: {symptom_text(src)}")
    tried = tried_text(src)
    if tried:
        lines.append(f"What I tried: {tried}")
    report = report_text(src)
    if report:
        lines += ["", report]
    lines += ["", question]
    return "\n".join(lines)


#: Each error type named briefly (the rejected side of a DPO pair may point at another type's cause).
TYPE_NAME: dict[str, str] = {
    "hyperparameter": "a training hyperparameter", "data": "the data",
    "evaluation_protocol": "the evaluation protocol", "framework_version": "a framework or library version",
    "seed_hardware": "seeds or hardware", "other": "a cause outside the five usual categories",
}


def _same(a: str, b: str) -> bool:
    """Whether two texts say the same thing (one contains the other, whitespace- and case-insensitive)."""
    x, y = " ".join(a.lower().split()).strip(" ."), " ".join(b.lower().split()).strip(" .")
    return bool(x) and bool(y) and (x in y or y in x)


@dataclass(frozen=True)
class Diagnosis:
    """A diagnosis as an assistant turn renders it; every text a complete sentence (see ``rowtext``).

    ``gap``: the measured gap in this thread's numbers (None without a number); ``bases``: (hypothesis, what
    ruled it in or out) for the hypotheses whose basis the reader gave; ``verification``: how the thread
    verified the cause; ``open_questions``: what is still open (threads that are not resolved)."""

    error_type: str
    refuted: tuple[str, ...]
    confirmed: tuple[str, ...]
    untested: tuple[str, ...]
    cause: str | None
    resolved: bool
    fix: str | None
    gap: str | None
    #: Refuted hypotheses that were stated as claims (not asked as questions): candidates for a rejected cause.
    claims: tuple[str, ...] = ()
    bases: tuple[tuple[str, str], ...] = ()
    verification: str | None = None
    open_questions: tuple[str, ...] = ()


def _clean(text: str | None, *, questions: bool = True) -> str | None:
    return as_sentence(neutralize_names(text or "", addressee="asker_0", writer="maintainer_0"),
                       questions=questions)


def gap_sentence(s: Symptom) -> str | None:
    """The gap as measured, in the thread's own numbers (None unless the asker gave both: one number alone
    restates the prompt, and threads about the same paper would share the sentence)."""
    if s.paper_value is None or s.obtained_value is None:
        return None
    metric = s.metric or "the metric"
    d = s.obtained_value - s.paper_value
    text = (f"{metric} came out at {_num(s.obtained_value)} against the paper's {_num(s.paper_value)}, "
            f"{abs(d):.3g} {'below' if d < 0 else 'above'} it.")
    return text if len(text) > 1 and text[1].isupper() else text[:1].upper() + text[1:]  # "mAP" stays


def diagnosis_of(src: RowSource) -> Diagnosis | None:
    """The record's reasoning as complete sentences (None when nothing is left to teach): hypotheses
    grouped by outcome with what ruled them in or out (duplicates and those restating the cause or fix
    dropped), the cause, how the thread verified it, the fix (left out when it only restates the cause), and
    for unresolved threads what is still open."""
    from reprodiag.audit import declarative

    r = src.record
    cause = _clean(r.root_cause, questions=False)
    if cause is not None and not declarative(cause):  # an instruction is no cause (it may still be the fix)
        cause = None
    fix = _clean(r.resolution)
    if fix and cause and _same(fix, cause):
        fix = None
    groups: dict[str, list[str]] = {"refuted": [], "confirmed": [], "untested": []}
    claims: list[str] = []
    bases: list[tuple[str, str]] = []
    seen: list[str] = [t for t in (cause, fix) if t]
    for h in r.hypothesis_chain:
        t = _clean(h.text)
        if t is None or any(_same(t, s) for s in seen):
            continue
        seen.append(t)
        groups.get(h.outcome, groups["untested"]).append(t)
        if h.outcome == "refuted" and _clean(h.text, questions=False) == t:
            claims.append(t)
        basis = _clean(h.basis) if h.outcome != "untested" else None
        if basis and not _same(basis, t):
            bases.append((t, basis))
    if cause is None and not any(groups.values()):
        return None
    resolved = r.resolution_type == "resolved" or r.is_resolved
    verification = _clean(r.verification) if resolved else None
    if verification and any(_same(verification, x) for x in (cause, fix) if x):
        verification = None
    opened = tuple(q for q in (_clean(x) for x in r.open_questions) if q) if not resolved else ()
    return Diagnosis(error_type=r.error_type, refuted=tuple(groups["refuted"]),
                     confirmed=tuple(groups["confirmed"]), untested=tuple(groups["untested"]), cause=cause,
                     resolved=resolved, fix=fix, gap=gap_sentence(src.shown), claims=tuple(claims),
                     bases=tuple(bases), verification=verification, open_questions=opened)


def _clause(sentence: str) -> str:
    """A sentence as the start of a longer one: without its final stop."""
    return sentence.rstrip().rstrip(".!")


def _lower_first(sentence: str) -> str:
    """The first letter lowered unless it starts an acronym or a name-like token ("PyTorch", "BLEU")."""
    w = sentence.split(" ", 1)[0]
    return sentence if len(w) > 1 and (w[1:] != w[1:].lower() or not w[0].isupper()) else w[:1].lower() + sentence[1:]


#: How each outcome is said after the hypothesis (a few wordings, picked by the hypothesis's text, so no
#: single phrase runs through every answer).
_VERDICT = {
    "refuted": ("this was ruled out", "this did not hold", "this turned out not to be it"),
    "confirmed": ("this held up", "this was confirmed", "this turned out to be right"),
    "untested": ("nobody tested this", "this was not checked", "this stayed untested"),
}


def _verdict(outcome: str, text: str) -> str:
    options = _VERDICT[outcome]
    return options[int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % len(options)]


def render(d: Diagnosis, *, with_fix: bool = True, short: bool = False) -> str:
    """The diagnosis written as an expert reasons, in short paragraphs of complete sentences: the gap as
    measured; each hypothesis with what ruled it in or out; the cause (said to be unconfirmed when the thread
    did not confirm it); how the thread verified it; the fix; for threads that are not resolved, what is still
    open. ``short`` (DPO answers): the gap, the hypotheses without their bases and the cause, nothing else, so
    both sides of a pair are written alike. Every sentence carries this thread's content: there is no fixed
    sentence to repeat across rows, and a record that knows less gives a shorter answer."""
    basis = dict(d.bases) if not short else {}
    paras: list[str] = []
    if d.gap:
        paras.append(d.gap)
    hyps = []
    for outcome, group in (("refuted", d.refuted), ("confirmed", d.confirmed), ("untested", d.untested)):
        for t in group:
            b = basis.get(t)
            hyps.append(f"{_clause(t)}; {_verdict(outcome, t)}" + (f": {_lower_first(_clause(b))}." if b else "."))
    if hyps:
        paras.append(" ".join(hyps))
    tail: list[str] = []
    if d.cause:
        tail.append(f"Root cause: {d.cause}" if d.resolved else
                    f"Most likely cause, not confirmed in the thread: {d.cause}")
        if not short and d.verification:
            tail.append(f"Verified: {d.verification}")
        if with_fix and not short and d.fix:
            tail.append(f"Fix: {d.fix}")
    if not short and d.open_questions:
        tail.append("Still open: " + "; ".join(_clause(q) for q in d.open_questions) + ".")
    if tail:
        paras.append("\n".join(tail))
    return "\n\n".join(paras).strip()


def diagnosis_text(src: RowSource) -> str | None:
    """The SFT assistant turn (None when the record teaches no diagnosis)."""
    d = src.diagnosis
    return None if d is None else render(d)


def is_verified(r: Record, confirmed_threads: set[str]) -> bool:
    return r.thread_id in confirmed_threads or (r.replay is not None and r.replay.verdict == "confirmed")


def sft_row(src: RowSource, *, confirmed_threads: set[str], paper_titles: dict[str, str]) -> dict[str, Any] | None:
    """One TRL conversational example (None when the record teaches no diagnosis)."""
    r = src.record
    diag = diagnosis_text(src)
    if diag is None:
        return None
    return {
        "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                     {"role": "user", "content": user_message(src, paper_titles)},
                     {"role": "assistant", "content": diag}],
        "weight": float(r.temporal_tag.weight),
        "verified": is_verified(r, confirmed_threads),
        "error_type": r.error_type,
        "thread_id": r.thread_id,
        "repo": r.repo,
        "created_year": r.temporal_tag.created_year,
        "resolution_type": r.resolution_type,
        "tier": r.temporal_tag.tier,
    }


def dpo_eligible(src: RowSource, d: Diagnosis | None) -> bool:
    """A pair needs a cause in the chosen answer (so both answers state one) and either a refuted claim
    or a thread that established the cause."""
    return d is not None and d.cause is not None and (bool(d.claims) or d.resolved)


def dpo_row(src: RowSource, chosen: Diagnosis, rejected: Rejected, *, confirmed_threads: set[str],
            paper_titles: dict[str, str]) -> dict[str, Any] | None:
    """A preference pair: both answers rendered the same way (no fix line in either, the prompt asks for the
    cause), so a preference model learns content, not format."""
    r = src.record
    c, x = render(chosen, with_fix=False, short=True), render(rejected.diagnosis, with_fix=False, short=True)
    if _same(c, x):
        return None
    return {
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT},
                   {"role": "user", "content": user_message(src, paper_titles, DPO_QUESTION)}],
        "chosen": [{"role": "assistant", "content": c}],
        "rejected": [{"role": "assistant", "content": x}],
        "weight": float(r.temporal_tag.weight),
        "verified": is_verified(r, confirmed_threads),
        "error_type": r.error_type,
        "thread_id": r.thread_id,
        "repo": r.repo,
        "created_year": r.temporal_tag.created_year,
        "rejected_source": rejected.source,
    }


def eval_gold(src: RowSource) -> str | None:
    """The eval item's gold cause: the record's root cause as a declarative sentence, else None."""
    d = src.diagnosis
    return d.cause if d is not None else None


def eval_inputs(src: RowSource, paper_titles: dict[str, str]) -> dict[str, str]:
    """What an eval item shows the model: environment, paper, symptom (with the start of the asker's
    report) and what was tried."""
    r = src.record
    report, _cut = cut_text(report_text(src), 400)
    return {"environment": environment_text(r), "paper": paper_text(r, paper_titles),
            "symptom": symptom_text(src) + (f"\n{report}" if report else ""), "tried": tried_text(src)}


def eval_item_id(thread_id: str) -> str:
    """The eval item id of a thread's record (``rd-`` and 12 hex digits of its SHA-256)."""
    return "rd-" + hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:12]


def eval_directions(src: RowSource, gold: str) -> list[str]:
    """Acceptable directions derived from the gold cause, its type and the thread's confirmed hypotheses."""
    from eval_diagnosis.directions import acceptable_directions

    r = src.record
    confirmed = [t for h in r.hypothesis_chain if h.outcome == "confirmed" and (t := _clean(h.text))]
    return acceptable_directions(gold, r.error_type, extra=confirmed)


def eval_item(src: RowSource, gold: str, *, paper_titles: dict[str, str],
              directions: list[str] | None = None) -> EvalItem:
    """One eval item; ``directions`` (a reviewer's) replaces the derived acceptable directions."""
    from eval_diagnosis.graders.concept_features import gold_concepts

    r = src.record
    accept = list(directions) if directions is not None else eval_directions(src, gold)
    return EvalItem(
        id=eval_item_id(r.thread_id),
        error_type=r.error_type,
        **eval_inputs(src, paper_titles),
        question=EVAL_QUESTION,
        gold_root_cause=gold,
        acceptable_directions=accept,
        gold_concepts=gold_concepts(gold, accept, r.error_type),
        source_thread=r.thread_id,
        created_year=r.temporal_tag.created_year,
    )


# --------------------------------------------------------------------------- datasets


def _features(name: str) -> Any:
    """The columns of dataset ``name`` (an SFT mix has the columns of ``sft``)."""
    from datasets import Features, Value

    msg = [{"role": Value("string"), "content": Value("string")}]
    common = {"weight": Value("float64"), "verified": Value("bool"), "error_type": Value("string"),
              "thread_id": Value("string"), "repo": Value("string"), "created_year": Value("int64")}
    if name == "sft" or name in {m.name for m in SFT_MIXES}:
        return Features({"messages": msg, **common, "resolution_type": Value("string"), "tier": Value("string")})
    if name == "dpo":
        return Features({"prompt": msg, "chosen": msg, "rejected": msg, **common,
                         "rejected_source": Value("string")})
    return Features({"id": Value("string"), "error_type": Value("string"), "environment": Value("string"),
                     "paper": Value("string"), "symptom": Value("string"), "tried": Value("string"),
                     "question": Value("string"), "gold_root_cause": Value("string"),
                     "acceptable_directions": [Value("string")], "gold_concepts": [Value("string")],
                     "source_thread": Value("string"), "created_year": Value("int64")})


def _save(name: str, splits: dict[str, list[dict[str, Any]]], root: Path) -> dict[str, int]:
    from datasets import Dataset, DatasetDict, disable_progress_bars

    disable_progress_bars()
    feats = _features(name)
    dd = DatasetDict({s: Dataset.from_list(rows, features=feats) if rows else
                      Dataset.from_dict({k: [] for k in feats}, features=feats) for s, rows in splits.items()})
    target = root / name
    dd.save_to_disk(str(target), num_shards={s: 1 for s in dd})
    for s, ds in dd.items():
        ds.to_parquet(str(target / f"{s}.parquet"))
    return {s: len(rows) for s, rows in splits.items()}


def _by_split(rows: list[tuple[str | None, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    out_: dict[str, list[dict[str, Any]]] = {"train": []}
    for split, row in rows:
        s = split if split in SPLITS else "train"
        out_.setdefault(s, []).append(row)
    return {s: out_[s] for s in SPLITS if s in out_}


# --------------------------------------------------------------------------- edges


def _prepare_out(out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"output {out_dir} exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / MARKER).exists():
        raise UserError(f"output {out_dir} is not empty and is not a previous reprodiag build; "
                        "choose another --out (nothing was changed)")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {out_dir.parent}: {exc.strerror}") from None
    for stale in list(out_dir.parent.glob(f".{out_dir.name}.building-*")) + list(
            out_dir.parent.glob(f".{out_dir.name}.old-*")):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = out_dir.parent / f".{out_dir.name}.building-{os.getpid()}"
    tmp.mkdir()
    return tmp


def _swap_in(tmp: Path, out_dir: Path) -> None:
    if out_dir.exists():
        old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
        out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out_dir)


def _push(out_dir: Path, repo_id: str, token: str) -> None:
    from datasets import load_from_disk

    try:
        for name in CONFIGS:
            load_from_disk(str(out_dir / name)).push_to_hub(repo_id, config_name=name, token=token)
        from huggingface_hub import HfApi

        HfApi(token=token).upload_file(path_or_fileobj=str(out_dir / "README.md"), path_in_repo="README.md",
                                       repo_id=repo_id, repo_type="dataset")
    except Exception as exc:  # noqa: BLE001 - any hub failure is reported in one line, token scrubbed
        msg = " ".join(str(exc).split())[:200].replace(token, "***")
        raise UserError(f"push to the hub ({repo_id}) failed: {type(exc).__name__}: {msg}") from None


def parse_cutoff(text: str) -> datetime:
    """``YYYY-MM-DD`` (or a full ISO-8601 time) as an aware UTC datetime; a date means its end (23:59:59)."""
    from datetime import UTC, time

    t = text.strip()
    try:
        if len(t) == 10:
            from datetime import date

            return datetime.combine(date.fromisoformat(t), time(23, 59, 59), tzinfo=UTC)
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"--eval-after must be a date like 2025-06-30, got {text!r}") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def row_sources(store: Store, kept_raw: Iterable[Record], *,
                digests: dict[str, str] | None = None) -> list[RowSource]:
    """Redacted records with the asker's view of their threads (same placeholders in prompt and answer).
    ``digests`` (optional) receives each record's :func:`~reprodiag.review.fields.record_digest`, taken
    before redaction (what a review is matched against)."""
    from reprodiag.audit import thread_logins
    from reprodiag.redact import record_people, redact_doc, redact_text, thread_people
    from reprodiag.review.fields import record_digest

    out_: list[RowSource] = []
    for raw in kept_raw:
        if digests is not None:
            digests[raw.thread_id] = record_digest(raw)
        doc = raw.model_dump(mode="json")
        doc["evidence"] = []  # quotes are not dataset text; holding them for every kept record costs memory
        r = parse_record(redact_doc(doc, record_people(raw)))
        thread = store.get_thread(raw.thread_id)
        view = None
        logins = tuple(p.login for p in raw.stats.participants)
        if thread is not None:
            v = asker_view(thread)
            people = thread_people(thread)  # the same placeholders as the record's (order of appearance)
            red = [neutralize_names(redact_text(t, people), addressee=addressee_placeholder(True), writer="asker_0")
                   for t in (v.title, v.opening, v.known)]
            view = AskerView(title=red[0], opening=red[1], known=red[2], cut=v.cut)
            logins = tuple(thread_logins(thread))  # scored records may hold placeholders already
            if r.stats.created_at is None:
                r = r.model_copy(update={"stats": r.stats.model_copy(update={"created_at": thread.created_at})})
        out_.append(RowSource(record=r, view=view, shown=shown_symptom(r, view), logins=logins))
    return out_


def _split_by_date(srcs: list[RowSource], eval_after: datetime | None) -> tuple[list[RowSource], list[RowSource]]:
    """(eligible for eval, eligible for training): with ``eval_after``, threads created after it are
    eval-only and the others training-only; without, every record is both."""
    if eval_after is None:
        return srcs, srcs
    late = [s for s in srcs if s.created is not None and s.created > eval_after]
    early = [s for s in srcs if s.created is None or s.created <= eval_after]
    return late, early


@dataclass
class _Composed:
    """What the build writes, and the few facts about its sources the card and report need (the sources
    themselves are gone once this exists: the rows are the build's only per-record memory)."""

    sft_rows: list[tuple[str | None, dict[str, Any]]]
    dpo_rows: list[tuple[str | None, dict[str, Any]]]
    items: list[dict[str, Any]]
    participants: dict[str, list[str]]
    tiers: Counter[str]
    left_out: Counter[str]
    carve: EvalCarve
    filtered_for_train: int
    #: dataset → reader (:func:`reader_of`) → rows (sft, dpo) or items (eval)
    readers: dict[str, Counter[str]] = field(default_factory=dict)
    #: reader → the extractor models behind it ("openai:gpt-5-mini", "rules")
    reader_models: dict[str, Counter[str]] = field(default_factory=dict)
    #: what the card says about people's reviews (None when the workspace holds none)
    review: ReviewFacts | None = None


def _reviewed(src: RowSource, before: dict[str, Any], after: dict[str, Any]) -> RowSource:
    """``src`` with the fields a reviewer changed (``after`` against ``before``) in place of the reader's: the
    error type, the root cause, the values (and the gap), whether the thread is resolved (and the resolution
    type with it)."""
    from reprodiag.review.fields import changed

    diff = set(changed(before, after))
    r = src.record
    upd: dict[str, Any] = {}
    if "error_type" in diff:
        upd["error_type"] = after["error_type"]
    if "root_cause" in diff:
        upd["root_cause"] = after["root_cause"] or None
    if "is_resolved" in diff:
        upd["is_resolved"] = after["is_resolved"]
        upd["resolution_type"] = ("resolved" if after["is_resolved"] else
                                  "unresolved_valuable" if r.resolution_type == "resolved" else r.resolution_type)
    if diff & {"paper_value", "obtained_value"}:
        pv, ov = after["paper_value"], after["obtained_value"]
        upd["symptom"] = r.symptom.model_copy(update={
            "paper_value": pv, "obtained_value": ov,
            "gap": round(ov - pv, 6) if pv is not None and ov is not None else None})
    if not upd:
        return src
    new = r.model_copy(update=upd)
    return RowSource(record=new, view=src.view, shown=shown_symptom(new, src.view), logins=src.logins)


def _compose(store: Store, *, per_type_min: int, per_type_max: int, seed: int,
             eval_after: datetime | None, eval_from: str = "llm", reviewed_only: bool = False) -> _Composed:
    """The sft rows, dpo pairs and eval items of the workspace's kept records. Eval items come from the LLM
    reader's records only, unless ``eval_from`` is ``offline``.

    People's reviews (:mod:`reprodiag.review.decisions`, combined over reviewers; stale ones ignored): the
    fields a reviewer changed replace the reader's everywhere; an item rejected in the eval queue leaves the
    eval set, one rejected in the SFT queue leaves SFT and DPO; an accepted or edited item's gold is the
    reviewer's root cause (no longer checked for being declarative) and its acceptable directions the
    reviewer's where they changed them. ``reviewed_only``: eval items only from accepted or edited items."""
    from reprodiag.audit import LEAK_THRESHOLD, leak_share
    from reprodiag.redact import redact_text
    from reprodiag.review.agreement import review_facts
    from reprodiag.review.decisions import combine, current_decisions
    from reprodiag.review.fields import changed, still_eligible

    digests: dict[str, str] = {}
    srcs = row_sources(store, store.iter_scored(kept_only=True), digests=digests)  # page by page, one copy
    reviews, stale = combine(current_decisions(store), digests)
    kept = [s.record for s in srcs]
    confirmed_threads = {v.thread_id for v in store.iter_verdicts() if v.thread_id and v.verdict == "confirmed"}
    paper_titles: dict[str, str] = {}
    for repo in sorted({r.repo for r in kept}):
        titles = [p["paper_title"] for p in store.papers_for(repo) if p.get("paper_title")]
        if titles:
            paper_titles[repo] = redact_text(titles[0])
    left_out: Counter[str] = Counter()
    by_id = {s.record.thread_id: s for s in srcs if s.record.duplicate_of is None}
    reader_ok = {k: eval_eligible(s.record) for k, s in by_id.items()}
    kept_by: dict[str, dict[str, Any]] = {}  # item → the reviewed fields, for items a reviewer accepted or edited
    for k, c in reviews.items():
        if k in by_id and c.after is not None:
            by_id[k] = _reviewed(by_id[k], c.before, c.after)
            kept_by[k] = c.after
    gold: dict[str, str | None] = {}
    directions: dict[str, list[str]] = {}
    for k, s in by_id.items():
        c = reviews.get(k)
        eligible = eval_eligible(s.record)
        if c is not None and "eval" in c.rejected_in:
            gold[k] = None
            if eligible or reader_ok[k]:
                left_out["eval: rejected by a reviewer"] += 1
            continue
        if c is not None and k in kept_by:
            if not still_eligible(c.before, kept_by[k], reader_ok[k]):
                gold[k] = None
                if eligible or reader_ok[k]:
                    left_out["eval: a reviewer's fields leave it out (type other, no cause, or not resolved)"] += 1
                continue
            eligible, gold[k] = True, kept_by[k]["root_cause"]
            if "acceptable_directions" in changed(c.before, kept_by[k]):
                directions[k] = kept_by[k]["acceptable_directions"]
        else:
            gold[k] = eval_gold(s)
        if eval_from == "llm" and reader_of(s.record) == "offline" and eligible:
            gold[k] = None
            left_out["eval: read by the offline reader (build --eval-from offline takes it)"] += 1
        elif reviewed_only and k not in kept_by and eligible:
            gold[k] = None
            left_out["eval: not reviewed (build --reviewed-only)"] += 1
        elif eligible and gold[k] is None:
            left_out["eval: gold root cause not a declarative cause"] += 1
        elif gold[k] is not None and eligible:
            item_prompt = "\n".join(eval_inputs(s, paper_titles).values())
            if leak_share(item_prompt, gold[k] or "") > LEAK_THRESHOLD:
                gold[k] = None
                left_out["eval: the symptom already states the cause"] += 1
    for_eval, for_train = _split_by_date(list(by_id.values()), eval_after)
    eval_pool = [s.record.model_copy(update={"root_cause": gold[s.record.thread_id]}) for s in for_eval]
    carve = carve_eval(eval_pool, per_type_min=per_type_min, per_type_max=per_type_max, seed=seed,
                       max_share=MAX_EVAL_SHARE if eval_after is None else 1.0)
    if eval_after is not None:
        left_out["training: created after the eval cut-off"] = len(for_eval)
    train_src = [s for s in for_train if s.record.repo not in carve.eval_repos
                 and s.record.temporal_tag.tier != "filtered"]
    rejected_sft = {k for k, c in reviews.items() if "sft" in c.rejected_in}
    if rejected_sft:
        left_out["training: rejected by a reviewer"] = sum(s.record.thread_id in rejected_sft for s in train_src)
        train_src = [s for s in train_src if s.record.thread_id not in rejected_sft]

    sft_rows: list[tuple[str | None, dict[str, Any]]] = []
    dpo_rows: list[tuple[str | None, dict[str, Any]]] = []
    diags = {s.record.thread_id: s.diagnosis for s in train_src}
    for s in train_src:
        row = sft_row(s, confirmed_threads=confirmed_threads, paper_titles=paper_titles)
        if row is None:
            continue
        cause = diags[s.record.thread_id].cause  # type: ignore[union-attr]
        if cause and leak_share(row["messages"][1]["content"], cause) > LEAK_THRESHOLD:
            left_out["training: the prompt already states the cause"] += 1
            diags[s.record.thread_id] = None
            continue
        sft_rows.append((s.record.split, row))
    cands = {k: Candidate(key=k, repo=by_id[k].record.repo, metric=by_id[k].shown.metric, diagnosis=d)
             for k, d in diags.items() if d is not None}
    eligible = [s for s in train_src if dpo_eligible(s, diags[s.record.thread_id])]
    needs = [cands[s.record.thread_id] for s in eligible if not diags[s.record.thread_id].claims]  # type: ignore[union-attr]
    donors = choose_donors(needs, list(cands.values()), seed=seed)
    for s in eligible:
        k = s.record.thread_id
        d = diags[k]
        assert d is not None
        if d.claims:
            sw = swapped(d, _hypothesis_type(d.claims[0], d.error_type))
            rej = Rejected(sw, "refuted_hypothesis") if sw is not None else None
        elif k in donors:
            d, donor_d = donor_pair(donors[k], d)
            rej = Rejected(donor_d, "other_thread")
        else:
            rej = None
            left_out["dpo: no donor of another type left"] += 1
        if rej is None:
            continue
        pair = dpo_row(s, d, rej, confirmed_threads=confirmed_threads, paper_titles=paper_titles)
        if pair is not None:
            dpo_rows.append((s.record.split, pair))
    items = [eval_item(by_id[r.thread_id], r.root_cause or "", paper_titles=paper_titles,
                       directions=directions.get(r.thread_id)).model_dump(mode="json")
             for r in carve.eval_records]
    review = None
    if reviews or stale:
        review = review_facts(reviews, stale, eval_items=[(r.thread_id, r.error_type) for r in carve.eval_records],
                              reviewed_only=reviewed_only, seed=seed)
    reader = {s.record.thread_id: reader_of(s.record) for s in srcs}
    readers = {"sft": Counter(reader[row["thread_id"]] for _s, row in sft_rows),
               "dpo": Counter(reader[row["thread_id"]] for _s, row in dpo_rows),
               "eval": Counter(reader_of(r) for r in carve.eval_records)}
    models: dict[str, Counter[str]] = {}
    for s in srcs:
        ex = s.record.extractor
        models.setdefault(reader_of(s.record), Counter())[ex.backend + (f":{ex.model}" if ex.model else "")] += 1

    return _Composed(sft_rows, dpo_rows, items, {s.record.thread_id: list(s.logins) for s in srcs},
                     Counter(r.temporal_tag.tier for r in kept), left_out, carve,
                     sum(s.record.temporal_tag.tier == "filtered" for s in for_train), readers, models, review)


def run_build(store: Store, out_dir: Path, *, per_type_min: int, per_type_max: int, seed: int,
              push_to_hub: str | None, eval_after: datetime | None = None, eval_from: str = "llm",
              reviewed_only: bool = False) -> StageReport:
    """Build sft/dpo/eval into ``out_dir`` (replaced atomically), audit them (``audit.json``, summary in the
    card) and optionally push them to the hub. ``eval_after`` (UTC): threads created after it go to the eval
    set only, the others to training only. ``eval_from``: ``llm`` (eval items from LLM-read records only) or
    ``offline`` (the offline reader's records may become eval items too). People's reviews are applied (see
    :func:`_compose`); ``reviewed_only``: the eval set holds accepted or edited items only."""
    from reprodiag.audit import audit_summary_lines, run_audit

    if per_type_min > per_type_max:
        raise UserError(f"--per-type-min ({per_type_min}) is larger than --per-type-max ({per_type_max})")
    token = None
    if push_to_hub is not None:
        if push_to_hub.count("/") != 1 or not all(push_to_hub.split("/")):
            raise UserError(f"--push-to-hub must look like ORG/NAME, got {push_to_hub!r}")
        token = os.environ.get("HF_TOKEN", "").strip()
        if not token:
            raise UserError("--push-to-hub needs HF_TOKEN in the environment (a Hugging Face write token)")
    out_dir = Path(out_dir)
    if eval_from not in EVAL_FROM:
        raise UserError(f"--eval-from must be one of {', '.join(EVAL_FROM)}, got {eval_from!r}")
    c = _compose(store, per_type_min=per_type_min, per_type_max=per_type_max, seed=seed, eval_after=eval_after,
                 eval_from=eval_from, reviewed_only=reviewed_only)
    carve, left_out = c.carve, c.left_out
    n_sft, n_dpo = len(c.sft_rows), len(c.dpo_rows)
    eval_types = Counter(i["error_type"] for i in c.items)
    funnel = {
        "threads mined": store.count("threads"),
        "relevant (filter)": store.count("decisions", "is_reproduction=1"),
        "records (extract)": store.count("records"),
        "kept (score)": store.count("scored", "keep=1"),
        "sft rows": n_sft,
        "dpo pairs": n_dpo,
        "eval items": len(c.items),
    }
    facts = {"resolution": Counter(row["resolution_type"] for _s, row in c.sft_rows),
             "verified": sum(row["verified"] for _s, row in c.sft_rows),
             "rejected_sources": Counter(row["rejected_source"] for _s, row in c.dpo_rows),
             "extractors": Counter(r.extractor.backend for r in (*carve.eval_records, *carve.train_records)),
             "readers": c.readers, "reader_models": c.reader_models, "eval_from": eval_from,
             "reader_figures": _reader_figures(), "review": c.review}
    tmp = _prepare_out(out_dir)
    try:
        sft_splits = _by_split(c.sft_rows)
        sizes = {"sft": _save("sft", sft_splits, tmp)}
        mix_facts: dict[str, MixFacts] = {}
        for name, (rows, mf) in sft_mixes(sft_splits, seed=seed).items():  # the same row objects, no copies
            sizes[name] = _save(name, rows, tmp)
            mix_facts[name] = mf
        c.sft_rows, sft_splits = [], {}  # written: each dataset's rows are let go before the next is built
        sizes["dpo"] = _save("dpo", _by_split(c.dpo_rows), tmp)
        c.dpo_rows = []
        sizes["eval"] = _save("eval", {"test": c.items}, tmp)
        c.items = []
        audit_rep, _ = run_audit(tmp, participants=c.participants)
        card = dataset_card(CardFacts(
            funnel=funnel, sizes=sizes, tiers=c.tiers, eval_types=eval_types, shortfall=carve.shortfall,
            per_type_min=per_type_min, per_type_max=per_type_max, seed=seed, eval_repos=len(carve.eval_repos),
            left_out=dict(left_out), eval_after=eval_after, audit_lines=audit_summary_lines(audit_rep),
            mixes=mix_facts, **facts))
        (tmp / "README.md").write_text(card, encoding="utf-8")
        (tmp / MARKER).write_text("reprodiag build output; safe to replace with `reprodiag build`\n",
                                  encoding="utf-8")
        _swap_in(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    notes = []
    if carve.shortfall:
        notes.append("small corpus: eval has fewer than --per-type-min items for "
                     + ", ".join(f"{t} ({per_type_min - n} of {per_type_min})" for t, n in
                                 sorted(carve.shortfall.items())) + "; took what exists (see README.md)")
    notes.append("audit: " + ("all checks pass" if not audit_rep["failed"] else
                              "FAILED " + ", ".join(audit_rep["failed"])) + f" (see {out_dir / 'audit.json'})")
    if token is not None and push_to_hub is not None:
        _push(out_dir, push_to_hub, token)
        notes.append(f"pushed to https://huggingface.co/datasets/{push_to_hub}")
    out.info(f"build: {n_sft} sft, {n_dpo} dpo, {funnel['eval items']} eval → {out_dir}")
    counts = {**funnel, "eval repositories": len(carve.eval_repos),
              "held out with eval repos": len(carve.held_out),
              "filtered tier (excluded)": c.filtered_for_train,
              **{f"left out ({k})": v for k, v in sorted(left_out.items())},
              **{f"{name} rows": mf.total for name, mf in mix_facts.items()},
              **{f"eval {t}": eval_types[t] for t in ERROR_TYPES}}
    if c.review is not None:
        counts["eval reviewed"] = c.review.reviewed_eval
        notes.append(c.review.summary_line())
    return StageReport(stage="build", counts=counts, notes=notes,
                       outputs={**{name: str(out_dir / name) for name in CONFIGS},
                                "card": str(out_dir / "README.md"), "audit": str(out_dir / "audit.json")})


def _reader_figures() -> dict[str, str]:
    """reader → the line of what it was measured to do (:mod:`extract.measured`)."""
    from extract.measured import BY_READER

    return {k: v.line() for k, v in BY_READER.items()}


def _hypothesis_type(text: str, default: str) -> str:
    """The error type a hypothesis points at (the cue scores of the rules), else ``default``."""
    from extract.causetype import cause_scores

    scores = {t: v for t, v in cause_scores(text.lower()).items() if v > 0 and t in TYPE_NAME}
    return max(sorted(scores), key=lambda t: scores[t]) if scores else default
