"""Evidence grounding: every quoted fact must be found verbatim in the thread.

Quotes are compared after whitespace normalisation (runs of whitespace → one
space, case kept). ``comment_id`` None means the thread's title or body. A
quote that does not check out against *its* post is also accepted when it is
found elsewhere in the thread, with the evidence's ``comment_id`` corrected,
because models often mis-attribute the comment but not the words; a quote
found nowhere is rejected.
"""

from __future__ import annotations

import re
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


#: Words that carry no content when :func:`supported` compares a text with the thread.
_FUNCTION_WORDS = frozenset(
    "a an the and or but if then than that this these those there their they them it its is are was were be been "
    "being has have had do does did not no nor of in on at to for from by with without about into over under as "
    "so such very can could would should will may might must also only just more most less any all each some "
    "which what when where who whom whose why how".split()
    # words about the thread rather than its content: a basis made only of them ("undisputed maintainer
    # explanation; the issue was closed") says nothing a training answer could use
    + "maintainer maintainers author authors asker user users poster someone nobody issue issues thread post posts "
      "reply replies replied answer answered comment comments closed completed open said says say reported reports "
      "report explanation explained undisputed dispute disputes disputed confirmed confirms confirm accepted accepts "
      "thanks thanked thank later still got get gets getting used using use paper papers".split())
_WORD = re.compile(r"[\w.+-]*\w", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def supported(text: str, index: ThreadIndex, share: float = 0.4) -> bool:
    """Whether a reader's paraphrase (a hypothesis's basis, a verification, an open question) stands on the
    thread: every number it states occurs in the thread, and at least ``share`` of its content words (three
    letters or more, function words aside; CJK text is compared by characters) do. Texts without content words
    are not supported."""
    hay = " ".join(index.posts.values()).lower()
    words = [w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _FUNCTION_WORDS]
    if any(n not in hay for n in _NUMBER.findall(text)):
        return False
    cjk = [ch for ch in text if "\u4e00" <= ch <= "\u9fff"]
    if cjk:
        return sum(ch in hay for ch in cjk) >= share * len(cjk)
    if not words:
        return False
    return sum(w in hay for w in words) >= share * len(words)
