"""Evidence grounding: every quoted fact must be found verbatim in the thread.

Quotes are compared after whitespace normalisation (runs of whitespace → one
space, case kept). ``comment_id`` None means the thread's title or body. A
quote that does not check out against *its* post is also accepted when it is
found elsewhere in the thread, with the evidence's ``comment_id`` corrected,
because models often mis-attribute the comment but not the words; a quote
found nowhere is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass

from extract.threadtext import normalize_ws
from reprodiag.schema import Evidence, Thread

#: Shortest quote accepted (characters after normalisation); shorter quotes prove nothing.
MIN_QUOTE = 3


@dataclass(frozen=True)
class ThreadIndex:
    """Whitespace-normalised text of each post, keyed by comment id (None = title + body)."""

    posts: dict[str | None, str]

    @classmethod
    def of(cls, thread: Thread) -> ThreadIndex:
        posts: dict[str | None, str] = {None: normalize_ws(thread.title + "\n" + thread.body)}
        for c in thread.all_comments():
            posts[c.id] = normalize_ws(c.body)
        return cls(posts)

    def locate(self, quote: str, comment_id: str | None) -> str | None | bool:
        """The comment id holding ``quote`` (its own first), or False if nowhere."""
        q = normalize_ws(quote)
        if len(q) < MIN_QUOTE:
            return False
        own = self.posts.get(comment_id)
        if own is not None and q in own:
            return comment_id
        for cid, text in self.posts.items():
            if q in text:
                return cid
        return False


@dataclass(frozen=True)
class Checked:
    """Evidence that checked out (ids corrected) and the fields whose evidence failed."""

    evidence: list[Evidence]
    failed_fields: list[str]


def check_evidence(thread: Thread, evidence: list[Evidence], index: ThreadIndex | None = None) -> Checked:
    idx = index or ThreadIndex.of(thread)
    ok: list[Evidence] = []
    failed: list[str] = []
    for ev in evidence:
        where = idx.locate(ev.quote, ev.comment_id)
        if where is False:
            failed.append(ev.field)
            continue
        cid = None if where is True else where
        ok.append(ev if cid == ev.comment_id else ev.model_copy(update={"comment_id": cid}))
    # a field is failed only if none of its quotes checked out
    good_fields = {e.field for e in ok}
    return Checked(ok, sorted({f for f in failed if f not in good_fields}))
