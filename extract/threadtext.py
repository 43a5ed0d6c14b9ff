"""Reading a thread as text: who wrote what, bots, code blocks, sentences.

Everything here is pure and cheap; regexes are compiled once at import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reprodiag.schema import MAINTAINER_ASSOCIATIONS, Comment, Thread

#: Logins of well-known bots that do not carry the ``[bot]`` suffix.
KNOWN_BOTS = frozenset({
    "github-actions", "stale", "codecov", "dependabot", "renovate", "allcontributors", "mergify",
    "pre-commit-ci", "welcome", "issue-label-bot", "sonarcloud", "netlify", "vercel", "lgtm-com",
    "facebook-github-bot", "google-cla", "googlebot", "copybara-service", "tensorflow-bot",
    "pytorchbot", "huggingface-bot", "stale-bot", "probot-stale",
})

_BOT_TEXT = re.compile(
    r"this issue has been automatically (?:marked as stale|closed)|this (?:issue|thread) (?:has been|was) "
    r"(?:automatically )?(?:locked|marked stale)|\bstale\b.{0,40}\b(?:days?|inactivity)\b|"
    r"^\s*(?:codecov|coverage) report|/easycla|CLA (?:signed|not signed)",
    re.I | re.M,
)
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_INDENTED_CODE = re.compile(r"(?:^(?: {4}|\t).*\n?){3,}", re.M)
_SENT_SPLIT = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？；])")
#: Words after which a period does not end a sentence ("Sec. 4", "i.e. the", "et al. used", "vs. 28.4").
_ABBREV = frozenset("""e.g i.e etc vs al sec fig figs eq eqs tab cf approx resp no nos ch app ref refs
    mr ms dr prof st jan feb mar apr jun jul aug sep sept oct nov dec est min max avg std""".split())
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")
WS = re.compile(r"\s+")


def is_bot_login(login: str | None) -> bool:
    if not login:
        return False
    low = login.lower()
    return low.endswith("[bot]") or low.endswith("-bot") or low in KNOWN_BOTS


def is_bot_comment(c: Comment) -> bool:
    """A bot author, or an automated notice (stale/lock/CI/CLA) posted by anyone."""
    return is_bot_login(c.author) or bool(_BOT_TEXT.search(c.body[:2000]))


def is_maintainer(association: str | None) -> bool:
    return (association or "").upper() in MAINTAINER_ASSOCIATIONS


def strip_code(text: str) -> str:
    """Text with fenced and indented code blocks replaced by a blank line."""
    text = _CODE_FENCE.sub("\n", text)
    return _INDENTED_CODE.sub("\n", text)


def has_code(text: str) -> bool:
    return bool(_CODE_FENCE.search(text) or _INDENTED_CODE.search(text))


def normalize_ws(text: str) -> str:
    return WS.sub(" ", text).strip()


@dataclass(frozen=True)
class Sentence:
    """A sentence of one post. ``comment_id`` None: the thread body (or title)."""

    text: str
    comment_id: str | None


def sentences(text: str, comment_id: str | None = None) -> list[Sentence]:
    """Non-empty sentences of prose (code removed); each is a verbatim substring of ``text``'s prose."""
    out = []
    for part in _split(strip_code(text)):
        s = part.strip()
        if len(s) >= 2:
            out.append(Sentence(s, comment_id))
    return out


def _split(text: str) -> list[str]:
    """Split at sentence ends and line breaks, but not after abbreviations or single initials."""
    parts: list[str] = []
    start = 0
    for m in _SENT_SPLIT.finditer(text):
        head = text[start:m.start()]
        if "\n" not in m.group(0) and head.endswith("."):
            w = _LAST_WORD.search(head)
            word = w.group(1).lower().rstrip(".") if w else ""
            if word in _ABBREV or (len(word) == 1 and word.isalpha()):
                continue
        parts.append(head)
        start = m.end()
    parts.append(text[start:])
    return parts


@dataclass(frozen=True)
class Post:
    """The thread body or one comment, flattened: who wrote it and how they relate to the repo."""

    comment_id: str | None
    author: str | None
    body: str
    is_asker: bool
    is_maintainer: bool
    is_bot: bool
    is_answer: bool
    index: int  # 0 = the body, then comments in reading order


def posts(thread: Thread) -> list[Post]:
    """The body then every comment and discussion reply, in reading order."""
    out = [Post(None, thread.author, thread.title + "\n" + thread.body, True,
                is_maintainer(thread.author_association), is_bot_login(thread.author), False, 0)]
    for i, c in enumerate(thread.all_comments(), start=1):
        answer = c.is_answer or (thread.answer_id is not None and c.id == thread.answer_id)
        out.append(Post(c.id, c.author, c.body, c.author is not None and c.author == thread.author,
                        is_maintainer(c.author_association), is_bot_comment(c), answer, i))
    return out


def has_human_reply(thread: Thread) -> bool:
    """At least one non-bot comment (the asker's own follow-ups count: others may reply later)."""
    return any(not is_bot_comment(c) for c in thread.all_comments())


def has_other_reply(thread: Thread) -> bool:
    """At least one non-bot comment by someone other than the asker."""
    return any(not is_bot_comment(c) and (c.author is None or c.author != thread.author)
               for c in thread.all_comments())
