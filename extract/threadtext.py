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
    """Prose only: fenced and indented code blocks, the bodies of HTML ``<details>`` blocks (their
    ``<summary>`` is kept), machine output pasted as prose (log lines, COCO summaries, ``pip list`` /
    ``collect_env`` / ``nvidia-smi`` dumps) and long tables without a paper/ours row or column are each
    replaced by a line break, so what remains is verbatim text of the post."""
    text = _CODE_FENCE.sub("\n", text)
    text = _INDENTED_CODE.sub("\n", text)
    if "<details" in text or "<DETAILS" in text:
        text = _DETAILS.sub(_details_summary, text)
    return _strip_machine_lines(text)


_DETAILS = re.compile(r"<details[^>]*>(.*?)(?:</details>|\Z)", re.S | re.I)
_SUMMARY = re.compile(r"<summary[^>]*>(.*?)</summary>", re.S | re.I)


def _details_summary(m: re.Match[str]) -> str:
    s = _SUMMARY.search(m.group(1))
    return "\n" + (s.group(1).strip() if s else "") + "\n"


_NUMTOK = re.compile(r"\d+(?:\.\d+)?")
#: ``key: 0.123`` / ``key=12`` pairs, timestamps and progress counters: marks of machine output.
_KEYVAL = re.compile(r"(?<![\w@/()\[\]-])[A-Za-z_][\w@/()\[\]-]*+\s?[:=]\s?-?\d")
_LOGMARK = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\[\s*\d+\s*/\s*\d+\s*\]|\d+/\d+ \[\d\d:\d\d|"
                      r"\d+%\|[^|]*\||@\[ ?IoU|\b\d+(?:\.\d+)?\s?(?:MiB|GiB|W)\b")
#: A version dump line: ``name  1.2.3  [build]``, ``name==1.2.3``, ``Key version: 1.2.3+cu118``.
_DUMPLINE = re.compile(r"^\s*(?:\[(?:pip3?|conda)\]\s+)?[\w.+-]+(?:\s{2,}|==|\s*:\s*|\s+version:?\s+)v?\d+\.\d+(?:\.\d|\+|rc|a\d|b\d|post|dev)[\w.+-]*"
                       r"(?:\s+[\w.+-]+){0,2}\s*$|^\s*[-=+|]{6,}\s*$|^\s*[+|][-=+]{3,}")
#: Three plain words in a row: written by a person, never dropped as machine output.
_PROSE = re.compile(r"(?<![^\W\d_])(?:[^\W\d_]{2,}+[,']?\s){2}[^\W\d_]{2}|[\u4e00-\u9fff]{4}")
#: Characters above which a line is never machine output (logs and dumps have short lines).
MAX_MACHINE_LINE = 1000
#: Data rows above which a table without a paper/ours row or column is a per-class/per-step dump.
MAX_OWN_TABLE_ROWS = 6
_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_OWN_TABLE = re.compile(r"paper|reported|official|readme|original|claimed|\bmine\b|\bours?\b|\bmy\b|reproduc|"
                        r"re-?run|re-?impl|\bme\b|论文|官方|原文|复现|我的|实际", re.I)


def is_machine_line(line: str) -> bool:
    """Machine output pasted as prose: a log/summary line (3+ numbers with key/value pairs, a timestamp, a
    progress counter, memory sizes) or a dependency-dump line, and no run of three plain words."""
    if len(line) > MAX_MACHINE_LINE:
        return False
    if _PROSE.search(line):
        return line.lstrip().startswith(("+", "|")) and bool(_DUMPLINE.search(line))
    if _DUMPLINE.search(line):
        return True
    if len(_NUMTOK.findall(line)) < 3:
        return False
    return len(_KEYVAL.findall(line)) + 2 * len(_LOGMARK.findall(line)) >= 2


#: Lines worth a closer look: three or more numbers, or a table/border line.
_CAND_LINE = re.compile(r"^[^\n]*?\d+(?:\.\d+)?[^\d\n]+\d+(?:\.\d+)?[^\d\n]+\d[^\n]*$|^[ \t]*[|+][^\n]*$", re.M)
_DIGIT = re.compile(r"\d")


def _strip_machine_lines(text: str) -> str:
    if not _DIGIT.search(text):
        return text
    drop: list[tuple[int, int]] = []
    table: list[re.Match[str]] = []

    def flush() -> None:
        rows = sum(1 for m in table if _NUMTOK.search(m.group(0)))
        if rows > MAX_OWN_TABLE_ROWS and not any(_OWN_TABLE.search(m.group(0)) for m in table):
            drop.append((table[0].start(), table[-1].end()))
        table.clear()

    for m in _CAND_LINE.finditer(text):
        line = m.group(0)
        if _TABLE_LINE.match(line) or (table and _DUMPLINE.search(line)):
            if table and text.count("\n", table[-1].end(), m.start()) > 1:
                flush()
            table.append(m)  # a markdown/ascii table: dropped whole when long and without a paper/ours row
            continue
        if table:
            flush()
        if is_machine_line(line):
            drop.append((m.start(), m.end()))
    if table:
        flush()
    if not drop:
        return text
    out: list[str] = []
    pos = 0
    for start, end in sorted(drop):
        if start < pos:
            continue
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "".join(out)


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
    is_corroboration: bool = False  # "+1, same here (I get 91.5 too)" from someone else: not a diagnosis


def posts(thread: Thread) -> list[Post]:
    """The body then every comment and discussion reply, in reading order."""
    out = [Post(None, thread.author, thread.title + "\n" + thread.body, True,
                is_maintainer(thread.author_association), is_bot_login(thread.author), False, 0)]
    for i, c in enumerate(thread.all_comments(), start=1):
        answer = c.is_answer or (thread.answer_id is not None and c.id == thread.answer_id)
        asker = c.author is not None and c.author == thread.author
        maint = is_maintainer(c.author_association)
        out.append(Post(c.id, c.author, c.body, asker, maint, is_bot_comment(c), answer, i,
                        not asker and not maint and is_corroboration(c.body)))
    return out


#: A "me too" reply: starts with +1 / same here / me too / 👍 (a short post, maybe with its own number).
_CORROBORATION = re.compile(r"^\s*(?:\+1\b|same (?:here|issue|problem|for me|result)|me too\b|same\b|👍|"
                            r"i (?:also )?(?:see|get|got|have|observe) (?:the )?same|同样|我也|\+1)", re.I)
#: Characters above which a reply is a contribution of its own, not a "+1".
CORROBORATION_CHARS = 240


def is_corroboration(body: str) -> bool:
    """A short "+1 / same here" reply (its numbers corroborate the asker's, they are not the asker's)."""
    text = strip_code(body).strip()
    return len(text) <= CORROBORATION_CHARS and bool(_CORROBORATION.match(text))


def has_human_reply(thread: Thread) -> bool:
    """At least one non-bot comment (the asker's own follow-ups count: others may reply later)."""
    return any(not is_bot_comment(c) for c in thread.all_comments())


def has_other_reply(thread: Thread) -> bool:
    """At least one non-bot comment by someone other than the asker."""
    return any(not is_bot_comment(c) and (c.author is None or c.author != thread.author)
               for c in thread.all_comments())


#: A template heading: ``### Expected results``, ``**Actual behavior**``, ``Expected results:`` on its own
#: line (text after a bold heading or a colon on the same line belongs to the section).
_HEADING = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]*([^\n]+?)[ \t#]*$|(?:\*\*|__)([^\n*_]{2,60})(?:\*\*|__)[ \t]*:?|"
                      r"([A-Z][A-Za-z ]{2,40}):[ \t]*$)", re.M)
_EXPECTED = re.compile(r"^(?:the )?(?:expected|expectation|target|reference|reported|paper'?s?)\b|"
                       r"^(?:results?|numbers?|performance) (?:in|from|of) (?:the )?(?:paper|readme|model ?zoo)|期望|预期|论文",
                       re.I)
_ACTUAL = re.compile(r"^(?:the )?(?:actual|observed|current|obtained|reproduced)\b|^what (?:i|we) (?:got|get|see|saw|"
                     r"obtained)|^(?:my|our) (?:results?|numbers?|output|reproduction)|^results? (?:i|we) (?:got|get)|"
                     r"实际|我的结果|复现结果", re.I)


@dataclass(frozen=True)
class Section:
    """A role-bearing section of an issue template: ``expected`` (the paper's side) or ``actual`` (the
    asker's). ``start``/``end`` are character offsets of its content in the text it was read from."""

    role: str
    start: int
    end: int


def template_sections(text: str) -> list[Section]:
    """Expected/actual sections of an issue template, in text order (other headings only end a section)."""
    heads = list(_HEADING.finditer(text))
    out: list[Section] = []
    for i, m in enumerate(heads):
        name = (m.group(1) or m.group(2) or m.group(3) or "").strip().strip("*_:").strip()
        role = "expected" if _EXPECTED.search(name) else "actual" if _ACTUAL.search(name) else None
        if role:
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            out.append(Section(role, m.end(), end))
    return out


_SECTION_NUM = re.compile(r"(?<![A-Za-z0-9_.#/@-])(\d{1,4}(?:\.\d+)?)(?![A-Za-z0-9_.]*\d)")


def section_value(text: str, sec: Section) -> re.Match[str] | None:
    """The first number of a section that can be a metric value (not a year or a small count)."""
    for m in _SECTION_NUM.finditer(text, sec.start, sec.end):
        raw = m.group(1)
        if "." in raw or 10 <= float(raw) < 1900:
            return m
    return None


def template_pair(text: str) -> bool:
    """The text is a template whose Expected and Actual sections each hold a value on one scale (a
    numeric expectation, not a crash report)."""
    secs = template_sections(text)
    vals: dict[str, float] = {}
    for s in secs:
        m = section_value(text, s)
        if m and s.role not in vals:
            vals[s.role] = float(m.group(1))
    a, b = vals.get("expected"), vals.get("actual")
    return a is not None and b is not None and a != b and 0 < a / max(b, 1e-9) < 3 and b / max(a, 1e-9) < 3
