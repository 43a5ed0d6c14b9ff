"""What people review, and each item's thread as they read it.

Review items (:func:`load_items`), in thread-id order:

- the **eval queue**: the records ``build`` would turn into eval items: kept scored records, not near
  duplicates, that :func:`reprodiag.build.eval_eligible` accepts and that an LLM read
  (:func:`reprodiag.build.reader_of`; ``include_offline`` adds the offline reader's);
- the **sft queue** (``sample_sft`` > 0): a seeded random sample of the other kept records that give an SFT
  row (a diagnosis to teach, not of the ``filtered`` tier).

An item's ``before`` fields (:mod:`reprodiag.review.fields`) are what ``build`` would use, redacted as the
datasets are: the gold root cause (:func:`reprodiag.build.eval_gold`; the reader's own text where it is not
a declarative cause, which an accept or an edit then makes the gold), the derived acceptable directions, the
values and whether the thread is resolved.

The thread (:func:`thread_view`) is redacted with the project's redactor (:func:`reprodiag.redact.redact_thread`:
logins become ``asker_0``, ``maintainer_0`` …; e-mails, tokens, keys, IPs and home paths are masked); each post
keeps its id, and the record's evidence quotes are located in it (whitespace- and case-insensitively, in the
post the quote names first, then anywhere) so the page can highlight them. Quotes found nowhere are listed
apart. All text here is plain: whoever renders it must escape it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from reprodiag.review.fields import Fields, clean_fields
from reprodiag.schema import Comment, Evidence, Record, Thread
from reprodiag.store import Store

#: Longest quote located in a thread (characters); longer ones are listed apart.
MAX_QUOTE = 2000


@dataclass(frozen=True)
class ReviewItem:
    """One item to review (see the module docstring)."""

    item_id: str
    queue: str
    repo: str
    title: str
    reader: str
    model: str
    before: Fields
    digest: str
    eval_id: str
    metric: str | None = None
    evidence: tuple[Evidence, ...] = ()
    #: the SFT row's assistant answer (sft queue)
    sft_answer: str | None = None
    #: why the item is out of the eval set as the reader left it (e.g. the root cause is a question), or None
    note: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.queue, self.item_id)


def before_fields(src: Any) -> tuple[Fields, str | None]:
    """The reviewable fields of a :class:`reprodiag.build.RowSource` as ``build`` would use them, and a note
    when its root cause is not a declarative cause (``build`` leaves such an item out unless a reviewer
    accepts or edits it)."""
    from reprodiag.build import eval_directions, eval_gold

    r = src.record
    gold = eval_gold(src)
    note = None
    root = gold
    if gold is None:
        root = " ".join((r.root_cause or "").split())
        note = ("the reader's root cause is not a declarative cause: build leaves this item out unless you accept "
                "or edit it")
    fields = {"error_type": r.error_type, "root_cause": root or "",
              "acceptable_directions": eval_directions(src, root) if root else [],
              "paper_value": r.symptom.paper_value, "obtained_value": r.symptom.obtained_value,
              "is_resolved": bool(r.is_resolved)}
    return clean_fields(fields), note


def load_items(store: Store, *, include_offline: bool = False, sample_sft: int = 0, seed: int = 0) -> list[ReviewItem]:
    """The eval queue, then the sft sample (``sample_sft`` rows at most, seeded by ``seed``)."""
    from reprodiag.build import diagnosis_text, eval_eligible, eval_item_id, reader_of, row_sources

    evidence: dict[str, tuple[Evidence, ...]] = {}

    def tap(records: Any) -> Any:
        for r in records:
            evidence[r.thread_id] = tuple(r.evidence)
            yield r

    digests: dict[str, str] = {}
    srcs = row_sources(store, tap(store.iter_scored(kept_only=True)), digests=digests)
    unique = sorted((s for s in srcs if s.record.duplicate_of is None), key=lambda s: s.record.thread_id)

    def item(s: Any, queue: str, answer: str | None = None) -> ReviewItem:
        r: Record = s.record
        before, note = before_fields(s)
        title = (s.view.title if s.view is not None and s.view.title else
                 " ".join((r.problem_statement or "").split())[:160]) or r.thread_id
        ex = r.extractor
        return ReviewItem(item_id=r.thread_id, queue=queue, repo=r.repo, title=title, reader=reader_of(r),
                          model=ex.backend + (f":{ex.model}" if ex.model else ""), before=before,
                          digest=digests[r.thread_id], eval_id=eval_item_id(r.thread_id), metric=r.symptom.metric,
                          evidence=evidence.get(r.thread_id, ()), sft_answer=answer,
                          note=note if queue == "eval" else None)

    cands = [s for s in unique if eval_eligible(s.record) and (include_offline or reader_of(s.record) == "llm")]
    out = [item(s, "eval") for s in cands]
    if sample_sft > 0:
        taken = {s.record.thread_id for s in cands}
        pool = [(s, a) for s in unique if s.record.thread_id not in taken and s.record.temporal_tag.tier != "filtered"
                and (a := diagnosis_text(s)) is not None]
        picked = random.Random(seed).sample(pool, min(sample_sft, len(pool)))
        out += [item(s, "sft", a) for s, a in sorted(picked, key=lambda p: p[0].record.thread_id)]
    return out


# --------------------------------------------------------------------------- the thread as a reviewer reads it

#: A run of post text: the text and, when it is an evidence quote, the record fields the quote supports.
Segment = tuple[str, str | None]


@dataclass(frozen=True)
class Post:
    """One post: ``post_id`` is ``opening`` for the opening post, else the comment's id."""

    post_id: str
    author: str
    role: str
    created: str
    depth: int
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class ThreadView:
    """A redacted thread with its evidence quotes located (``unplaced``: quotes found nowhere)."""

    thread_id: str
    url: str
    kind: str
    state: str
    created: str
    title: tuple[Segment, ...]
    posts: tuple[Post, ...]
    unplaced: tuple[Evidence, ...] = field(default_factory=tuple)


def _pattern(quote: str) -> re.Pattern[str] | None:
    words = quote.split()
    if not words or len(quote) > MAX_QUOTE:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def segments(text: str, spans: list[tuple[int, int, str]]) -> tuple[Segment, ...]:
    """``text`` cut into runs, the runs covered by ``spans`` ``(start, end, label)`` carrying their labels
    (overlapping spans merge, their labels joined)."""
    merged: list[list[Any]] = []
    for start, end, label in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            if label not in merged[-1][2]:
                merged[-1][2].append(label)
        else:
            merged.append([start, end, [label]])
    out: list[Segment] = []
    pos = 0
    for start, end, labels in merged:
        if start > pos:
            out.append((text[pos:start], None))
        out.append((text[start:end], ", ".join(labels)))
        pos = end
    if pos < len(text) or not out:
        out.append((text[pos:], None))
    return tuple(out)


def _flatten(comments: list[Comment], depth: int = 0) -> list[tuple[Comment, int]]:
    out: list[tuple[Comment, int]] = []
    for c in comments:
        out.append((c, depth))
        out += _flatten(c.replies, depth + 1)
    return out


def thread_view(thread: Thread, evidence: tuple[Evidence, ...] | list[Evidence]) -> ThreadView:
    """The redacted thread with each evidence quote located (see the module docstring)."""
    from reprodiag.redact import redact_text, redact_thread, thread_people

    people = thread_people(thread)
    red, _counts = redact_thread(thread)
    texts: dict[str, str] = {"title": red.title, "opening": red.body}
    meta: dict[str, tuple[str, str, str, int]] = {
        "opening": (red.author or "unknown", "asker", red.created_at.isoformat(), 0)}
    order = ["opening"]
    for c, depth in _flatten(red.comments):
        texts[c.id] = c.body
        role = "no association" if c.author_association.upper() == "NONE" else c.author_association.lower()
        meta[c.id] = (c.author or "unknown", role, c.created_at.isoformat(), depth)
        order.append(c.id)
    spans: dict[str, list[tuple[int, int, str]]] = {k: [] for k in texts}
    unplaced: list[Evidence] = []
    for ev in evidence:
        pat = _pattern(redact_text(ev.quote, people))
        first = ["title", "opening"] if ev.comment_id is None else [ev.comment_id]
        found = None
        if pat is not None:
            for key in first + [k for k in texts if k not in first]:
                m = pat.search(texts.get(key, ""))
                if m:
                    found = (key, m)
                    break
        if found is None:
            unplaced.append(ev.model_copy(update={"quote": redact_text(ev.quote, people)}))
        else:
            spans[found[0]].append((found[1].start(), found[1].end(), ev.field))
    posts = tuple(Post(k, *meta[k][:3], meta[k][3], segments(texts[k], spans[k])) for k in order)
    return ThreadView(thread_id=thread.id, url=thread.url, kind=thread.kind, state=thread.state,
                      created=thread.created_at.isoformat(), title=segments(texts["title"], spans["title"]),
                      posts=posts, unplaced=tuple(unplaced))


def thread_text(view: ThreadView) -> str:
    """The thread as plain text (for Label Studio and JSONL): the title, then each post headed by its id,
    author placeholder, role and date."""
    parts = ["".join(t for t, _ in view.title)]
    for p in view.posts:
        head = "opening post" if p.post_id == "opening" else f"post {p.post_id}"
        parts.append(f"[{head}] {p.author} ({p.role}), {p.created[:10]}\n" + "".join(t for t, _ in p.segments))
    return "\n\n".join(parts)


def evidence_text(view: ThreadView) -> str:
    """The located and unplaced evidence quotes as plain text, one per line: ``field (post ID): "quote"``."""
    lines = []
    for where, segs in [("title", view.title)] + [(p.post_id, p.segments) for p in view.posts]:
        for text, label in segs:
            if label:
                post = "opening post" if where == "opening" else where if where == "title" else f"post {where}"
                lines.append(f'{label} ({post}): "{" ".join(text.split())}"')
    lines += [f'{ev.field} (not found in the thread): "{" ".join(ev.quote.split())}"' for ev in view.unplaced]
    return "\n".join(lines)
