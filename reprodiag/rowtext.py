"""Texts of dataset rows: the prompt holds only what the asker knew, answers are complete sentences.

*The asker's view* (:func:`asker_view`) is what a prompt may show: the title and the asker's opening post,
and "what I tried" sentences from the asker's posts written before anyone else replied. Removed from it:
quoted text (``>`` lines, e-mail replies "On … wrote:" and everything quoted after them), HTML comments of
issue templates, images, and later edits that announce a solution ("EDIT: solved …", "更新：已解决"). The body
is cut at a paragraph or sentence end (never mid-sentence), and a cut text never ends on an introducing ":".

*Sentences* (:func:`as_sentence`): a hypothesis, cause or fix sentence taken from a post becomes a complete
declarative sentence or nothing: list markers, leading fillers ("Yes,", "Hi Li Wei,", "Thanks!") and
emoticons go; questions are rephrased as statements when a pattern fits ("Could be seed variance?" →
"It could be seed variance."), else dropped; fragments (a text ending on ":", a short anaphoric remark
like "That adds ~15% more data.") are dropped.

*Names* (:func:`neutralize_names`): a name in a greeting or sign-off ("Hi Li Wei", "Thanks, Anna") becomes
a role placeholder (``maintainer_0`` addressed by the asker, ``asker_0`` addressed by anyone else, or
the writer's own placeholder in a sign-off). Logins and @mentions are replaced earlier by
:mod:`reprodiag.redact`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reprodiag.schema import Thread

#: Characters of the asker's opening post shown in a prompt (cut at a paragraph or sentence end).
MAX_OPENING_CHARS = 1500
#: Lines kept of one code block or log in a prompt (head and tail).
MAX_BLOCK_LINES = 16

_WS = re.compile(r"[ \t]+")
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>", re.I)
_DETAILS_TAG = re.compile(r"</?(?:details|summary)[^>]*>", re.I)
_FENCE = re.compile(r"(```|~~~)[^\n]*\n.*?(?:\1|\Z)", re.S)
_EMAIL_START = re.compile(r"^\s*(?:On [^\n]{5,200}wrote:|-{2,} ?Original Message ?-{2,}|From: [^\n]+@[^\n]+|"
                          r"在 [^\n]{3,120}写道[:：])\s*$", re.M)
_EMAIL_LINE = re.compile(r"^\s*(?:Sent from my \w+.*|You are receiving this because.*|Reply to this email directly.*|"
                         r"Unsubscribe.*|view it on GitHub.*)$", re.I | re.M)
#: A later edit that reports the outcome: what follows was written after the diagnosis.
_LATER_EDIT = re.compile(r"^\s*(?:\*\*|__)?\s*(?:edit(?:ed)?|update[d]?|solved|resolved|fixed|found it|"
                         r"更新|已解决|解决了|问题已解决)\b[^\n]{0,20}?(?:[:：]|\*\*|\s-|\s—)", re.I | re.M)
_SENT_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")

_GREETING_WORDS = r"(?i:hi|hello|hey|dear|thanks|thank you|many thanks|cheers|best|regards|best regards|sincerely)"
_NAME = r"[A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2}"
_NOT_NAMES = frozenset("""All Everyone Team There Guys Folks For Authors Author Sir Madam Maintainers Again
Everybody Friends You So Very In Advance A Lot Much The This That These Those What When Why How Which Who Where
Is Are Was Were Can Could Would Should Will Do Does Did Have Has I We My Our Your It Its Thanks Thank Please Sorry
Great Nice Good Hello Hi Hey First Even Just Really Also After Before Recently Currently Today Here Now Yes No
Ok Okay Well Regarding About Since As If In On At To With From By An Any Some Using Following Regards Best""".split())
_GREETING_NAME = re.compile(rf"(?m)(^|[.!?]\s+)({_GREETING_WORDS})([,!]?[ \t]+)({_NAME})\b")
_SIGNOFF = re.compile(rf"(?m)^(\s*(?:{_GREETING_WORDS}|(?i:best wishes|kind regards|thanks a lot))[,!.]?)[ \t]*\n"
                      rf"[ \t]*({_NAME})[ \t]*$")

_BULLET = re.compile(r"^\s*(?:[-*•+]\s+|\(?\d{1,2}[.)]\s+|\([a-z]\)\s+)+")
_FILLER = re.compile(r"^\s*(?:(?:yes|yeah|yep|no|nope|ok|okay|well|so|hmm+|sure|right|indeed|actually|oh|ah|"
                     r"great|exactly|correct|true|good (?:question|catch)|i see)\b[,!.:]*\s+)+", re.I)
_GREETING_SENT = re.compile(r"^\s*(?:hi|hello|hey|dear|greetings|thanks|thank you|many thanks|sorry|welcome|"
                            r"good (?:morning|afternoon|evening))\b[^.!?\n]{0,80}?[.!?,:]+\s*", re.I)
_LEADING_MENTIONS = re.compile(r"^\s*(?:@[\w-]+[,:]?\s+)+")
_EMOTICON = re.compile(r"\s*(?::\)|:-\)|:\(|:D|;\)|:P|\^_\^|🙂|😀|😊|👍|🙏)\s*")
_ANAPHORIC = re.compile(r"^(?:that|this|it|which|these|those|also|and|but|then|plus|or)\b", re.I)
_AUX_Q = re.compile(r"^(could|might|may|can|would)\s+(?:it|this|that)?\s*(be|have been)\s+(.+)$", re.I)
_MAYBE_Q = re.compile(r"^(?:maybe|perhaps|probably)\s+(.+)$", re.I)
_DO_Q = re.compile(r"^(did|do|does|have|has)\s+(you|they|we|the authors)\s+(.+)$", re.I)
_IS_Q = re.compile(r"^(is|are|was|were)\s+(it|this|that|there)\s+(.+)$", re.I)
_ADVERBS = frozenset({"also", "really", "actually", "already", "just", "ever", "accidentally", "maybe", "perhaps"})
_IRREGULAR = {"run": "ran", "set": "set", "get": "got", "make": "made", "have": "had", "take": "took", "put": "put",
              "do": "did", "give": "gave", "see": "saw", "find": "found", "build": "built", "keep": "kept",
              "read": "read", "write": "wrote", "choose": "chose", "freeze": "froze", "use": "used",
              "split": "split", "cut": "cut", "begin": "began", "feed": "fed", "forget": "forgot"}


@dataclass(frozen=True)
class AskerView:
    """What the asker knew before anyone replied.

    ``opening``: the cleaned opening post (may be empty); ``known``: the title, the opening and the asker's
    follow-ups written before the first reply by someone else (values and "tried" sentences shown in a
    prompt must come from it); ``cut``: the opening was shortened."""

    title: str
    opening: str
    known: str
    cut: bool


def _trim_block(block: str) -> str:
    lines = block.split("\n")
    if len(lines) <= MAX_BLOCK_LINES:
        return block
    head, tail = MAX_BLOCK_LINES * 2 // 3, MAX_BLOCK_LINES // 3
    return "\n".join(lines[:head] + [f"... [{len(lines) - head - tail} lines trimmed] ..."] + lines[-tail:])


def strip_quoted(text: str) -> str:
    """``text`` without quoted material: e-mail replies (from "On … wrote:" on), ``>`` lines, mail footers."""
    m = _EMAIL_START.search(text)
    if m:
        text = text[:m.start()]
    text = "\n".join(ln for ln in text.split("\n") if not ln.lstrip().startswith(">"))
    return _EMAIL_LINE.sub("", text)


def clean_post(text: str) -> str:
    """A post as a prompt shows it: no quotes, template comments, images or later outcome edits; code blocks
    trimmed; blank-line runs collapsed."""
    text = _HTML_COMMENT.sub("", text or "")
    text = strip_quoted(text)
    m = _LATER_EDIT.search(text)
    if m and m.start() > 0:
        text = text[:m.start()]
    text = _IMAGE.sub("", text)
    text = _DETAILS_TAG.sub("", text)
    text = _FENCE.sub(lambda mm: _trim_block(mm.group(0)), text)
    lines = [_WS.sub(" ", ln).rstrip() for ln in text.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text


def _drop_intro_colon(text: str) -> str:
    """A text that ends by introducing something not shown ("… as follows:") loses that last sentence."""
    t = text.rstrip()
    while t.endswith((":", "：")):
        parts = [p for p in _SENT_END.split(t) if p.strip()]
        if len(parts) <= 1:
            lines = t.split("\n")
            if len(lines) > 1:
                t = "\n".join(lines[:-1]).rstrip()
                continue
            return t.rstrip(":：").rstrip() + "."
        t = t[: t.rfind(parts[-1])].rstrip()
    return t


def cut_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters at a paragraph end, else at a sentence end (a code block
    is never cut open); ``(text, was_cut)``."""
    if len(text) <= limit:
        return _drop_intro_colon(text), False
    paras = re.split(r"\n\s*\n", text)
    kept: list[str] = []
    size = 0
    for p in paras:
        if size + len(p) + 2 > limit:
            break
        kept.append(p)
        size += len(p) + 2
    if not kept:
        first = paras[0]
        if first.lstrip().startswith(("```", "~~~")):
            return "", True
        out = ""
        for s in _SENT_END.split(first):
            if len(out) + len(s) + 1 > limit:
                break
            out = (out + " " + s).strip()
        kept = [out] if out else []
    return _drop_intro_colon("\n\n".join(kept).strip()), True


def _before_first_reply(thread: Thread) -> list[str]:
    out = []
    for c in thread.all_comments():
        if c.author != thread.author:
            break
        out.append(c.body)
    return out


def asker_view(thread: Thread, *, limit: int = MAX_OPENING_CHARS) -> AskerView:
    """The asker's view of ``thread`` (see the module docstring)."""
    cleaned = clean_post(thread.body)
    title = " ".join(thread.title.split())
    body = cleaned
    first, _, rest = cleaned.partition("\n")
    if title and " ".join(first.split()).strip("#* ").lower() == title.lower():
        body = rest.strip()
    opening, cut = cut_text(body, limit)
    follow = [clean_post(b) for b in _before_first_reply(thread)]
    known = "\n\n".join([title, cleaned] + follow)
    return AskerView(title=title, opening=opening, known=known, cut=cut)


def value_known(value: float | None, known: str) -> bool:
    """Whether ``value`` is written in the asker's text (as 27.6, 27.60, 0.276 → no: literal only)."""
    if value is None:
        return False
    for m in re.finditer(r"(?<![\d.])[-+]?\d+(?:[.,]\d+)?", known):
        try:
            if abs(float(m.group().replace(",", ".")) - value) <= 1e-9 * max(1.0, abs(value)):
                return True
        except ValueError:
            continue
    return False


def known_sentences(text: str | None, known: str) -> str:
    """The sentences of ``text`` that the asker wrote before the first reply (whitespace- and
    case-insensitive containment in ``known``); the others are dropped."""
    if not text:
        return ""
    k = " ".join(known.split()).lower()
    keep = [s for s in _SENT_END.split(" ".join(text.split())) if s.strip() and s.strip(" .…").lower() in k]
    return " ".join(keep).strip()


# --------------------------------------------------------------------------- sentences


def _past(verb: str) -> str:
    v = verb.lower()
    if v in _IRREGULAR:
        return _IRREGULAR[v]
    if v.endswith("e"):
        return v + "d"
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ied"
    return v + "ed"


def _statement_of_question(q: str) -> str | None:
    """A question rephrased as a statement when a common pattern fits, else None."""
    q = q.rstrip("?？ ").strip()
    m = _AUX_Q.match(q)
    if m:
        return f"It could {m.group(2).lower()} {m.group(3)}"
    m = _MAYBE_Q.match(q)
    if m:
        return f"It may be that {m.group(1)}" if re.match(r"(?:the|it|you|your|this|there)\b", m.group(1), re.I) \
            else f"It may be {m.group(1)}"
    m = _DO_Q.match(q)
    if m:
        aux, subj, rest = m.group(1).lower(), m.group(2).lower(), m.group(3)
        words = rest.split(" ", 1)
        if aux == "did":
            adverb = ""
            while len(words) > 1 and words[0].lower() in _ADVERBS:
                adverb += words[0] + " "
                words = words[1].split(" ", 1)
            rest = adverb + _past(words[0]) + (" " + words[1] if len(words) > 1 else "")
        elif aux in ("have", "has"):
            rest = aux + " " + rest
        return f"It was asked whether {subj} {rest}"
    m = _IS_Q.match(q)
    if m:
        return f"It was asked whether {m.group(2).lower()} {m.group(1).lower()} {m.group(3)}"
    return None


def strip_fillers(text: str) -> str:
    """Leading @mentions, greetings, thanks, apologies and fillers ("@maintainer_0 Yes,", "Hi Li Wei,")
    removed; emoticons removed."""
    t = _EMOTICON.sub(" ", text).strip()
    for _ in range(3):
        before = t
        t = _LEADING_MENTIONS.sub("", t)
        t = _FILLER.sub("", t)
        m = _GREETING_SENT.match(t)
        if m and len(t) > m.end() + 3:
            t = t[m.end():]
        t = t.strip()
        if t == before:
            break
    return t


def as_sentence(text: str | None, *, min_words: int = 3, questions: bool = True) -> str | None:
    """``text`` as one complete declarative sentence (or a few), or None when it is a fragment.

    None for: empty text; a text that ends by introducing something (":"); a question no pattern can
    rephrase (any question when ``questions`` is false: a cause must be stated, not asked); a short
    anaphoric remark ("That adds ~15% more data.") of fewer than 12 words; fewer than ``min_words`` words."""
    if not text:
        return None
    t = " ".join(text.split())
    t = _BULLET.sub("", t)
    t = t.replace("**", "").replace("__", "")
    t = strip_fillers(t)
    t = _BULLET.sub("", t).strip()
    if not t or t.endswith((":", "：", ",", "，")):
        return None
    if _ANAPHORIC.match(t) and len(t.split()) < 12:
        return None
    if t.endswith(("?", "？")):
        if not questions:
            return None
        t2 = _statement_of_question(t)
        if t2 is None:
            return None
        t = t2
    words = t.split()
    if len(words) < min_words and not re.search(r"[\u4e00-\u9fff]{6,}", t):
        return None
    if t[0].islower():
        t = t[0].upper() + t[1:]
    if not t.endswith((".", "!", "。", "！", '."', ".)")):
        t += "."
    t = re.sub(r"!+$", ".", t)
    return t


# --------------------------------------------------------------------------- names


def addressee_placeholder(writer_is_asker: bool) -> str:
    """Who a greeting addresses: a maintainer when the asker writes, else the asker."""
    return "maintainer_0" if writer_is_asker else "asker_0"


def greeting_names(text: str) -> list[str]:
    """Names written in a greeting or a sign-off of ``text`` ("Hi Li Wei", "Thanks,\\nAnna")."""
    found = [m.group(4) for m in _GREETING_NAME.finditer(text) if _is_name(m.group(4))]
    return found + [m.group(2) for m in _SIGNOFF.finditer(text) if _is_name(m.group(2))]


def _is_name(name: str) -> bool:
    return name.split()[0] not in _NOT_NAMES


def neutralize_names(text: str, *, addressee: str, writer: str) -> str:
    """Names in greetings ("Hi Li Wei") become ``addressee``; a name alone on the line after a sign-off
    ("Thanks,\\nAnna") becomes ``writer``."""

    def greet(m: re.Match[str]) -> str:
        return m.group(1) + m.group(2) + m.group(3) + addressee if _is_name(m.group(4)) else m.group(0)

    text = _GREETING_NAME.sub(greet, text)
    return _SIGNOFF.sub(lambda m: m.group(1) + "\n" + writer if _is_name(m.group(2)) else m.group(0), text)
