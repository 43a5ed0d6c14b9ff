"""Facts about a thread read from its structure and text: stats, environment, versions, paper, tried."""

from __future__ import annotations

import re
from dataclasses import dataclass

from extract.threadtext import is_bot_comment, is_bot_login, is_maintainer, sentences, strip_code
from reprodiag.schema import Participant, Thread, ThreadStats

_REF = re.compile(
    r"(?<![\w&])#\d{1,6}\b|\bduplicate of\b|\bsame as #|\bsee (?:also )?(?:issue|#)|"
    r"github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+|\b(?:related|similar) (?:to )?(?:issue|#)",
    re.I,
)


def thread_stats(thread: Thread) -> ThreadStats:
    """Counts and roles. ``comments`` counts every comment and reply, bots included;
    ``bot_only``: the thread has comments and every one is automated."""
    comments = thread.all_comments()
    roles: dict[str, str] = {}
    if thread.author:
        roles[thread.author] = "bot" if is_bot_login(thread.author) else "asker"
    for c in comments:
        if not c.author or c.author in roles:
            continue
        if is_bot_login(c.author):
            roles[c.author] = "bot"
        elif is_maintainer(c.author_association):
            roles[c.author] = "maintainer"
        else:
            roles[c.author] = "contributor"
    text = thread.body + "\n" + "\n".join(c.body for c in comments)
    return ThreadStats(
        kind=thread.kind,
        state=thread.state,
        state_reason=(thread.state_reason or None) and thread.state_reason.lower(),
        created_at=thread.created_at,
        comments=len(comments),
        reactions=thread.reactions + sum(c.reactions for c in comments),
        labels=list(thread.labels),
        participants=[Participant(login=k, role=v) for k, v in roles.items()],  # type: ignore[arg-type]
        referenced=bool(_REF.search(text)),
        bot_only=bool(comments) and all(is_bot_comment(c) for c in comments),
        has_answer=thread.answer_id is not None or any(c.is_answer for c in comments),
    )


_FRAMEWORKS: list[tuple[str, re.Pattern[str]]] = [
    ("pytorch", re.compile(r"\b(?:pytorch|torch)\s*(?:version\s*)?(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("cuda", re.compile(r"\bcuda\s*(?:version\s*)?(?:==|=|:|v)?\s*(\d{1,2}\.\d(?:\.\d+)?)", re.I)),
    ("cudnn", re.compile(r"\bcudnn\s*(?:version\s*)?(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("tensorflow", re.compile(r"\b(?:tensorflow|tf)\s*(?:version\s*)?(?:==|=|:|v)?\s*(\d\.\d+(?:\.\d+)?)", re.I)),
    ("jax", re.compile(r"\bjax\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("transformers", re.compile(r"\btransformers\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("python", re.compile(r"\bpython\s*(?:version\s*)?(?:==|=|:|v)?\s*(3\.\d+(?:\.\d+)?|2\.7)", re.I)),
    ("mmcv", re.compile(r"\bmmcv(?:-full)?\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("mmdet", re.compile(r"\bmmdet(?:ection)?\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("detectron2", re.compile(r"\bdetectron2\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("timm", re.compile(r"\btimm\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("fairseq", re.compile(r"\bfairseq\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("numpy", re.compile(r"\bnumpy\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
    ("sacrebleu", re.compile(r"\bsacrebleu\s*(?:==|=|:|v)?\s*(\d+\.\d+(?:\.\d+)?)", re.I)),
]
_GPU = re.compile(
    r"\b(?:(\d{1,3})\s?[x×]\s?|(\d{1,3})\s+)?((?:NVIDIA |Tesla |GeForce )?(?:RTX\s?\d{4}(?:\s?Ti)?|GTX\s?\d{3,4}(?:\s?Ti)?|"
    r"[VAHP]100|A6000|A40|A10G?|L4|L40S?|T4|K80|P40|H200|TITAN\s?(?:X|V|RTX|Xp)|3090|4090|2080\s?Ti))"
    r"(?:\s?GPUs?)?",
    re.I,
)
_NGPU = re.compile(r"\b(\d{1,3})\s+(?:GPUs|gpus|cards|显卡|卡)\b")


@dataclass(frozen=True)
class Environment:
    text: str | None
    quote: str | None
    quote_comment: str | None
    versions: dict[str, str]


def environment(thread: Thread) -> Environment:
    """Frameworks, versions and hardware the asker states (title, body, then the asker's comments)."""
    sources: list[tuple[str | None, str]] = [(None, thread.title + "\n" + thread.body)]
    sources += [(c.id, c.body) for c in thread.all_comments() if c.author and c.author == thread.author]
    versions: dict[str, str] = {}
    parts: list[str] = []
    quote: str | None = None
    qcid: str | None = None
    for cid, text in sources:
        for name, rx in _FRAMEWORKS:
            if name in versions:
                continue
            m = rx.search(text)
            if m:
                versions[name] = m.group(1)
                label = {"pytorch": "PyTorch", "cuda": "CUDA", "cudnn": "cuDNN", "tensorflow": "TensorFlow",
                         "python": "Python"}.get(name, name)
                parts.append(f"{label} {m.group(1)}")
                if quote is None:
                    quote, qcid = m.group(0), cid
        if not any(p for p in parts if "GPU" in p or _GPU.search(p)):
            g = _GPU.search(text)
            if g:
                n = g.group(1) or g.group(2)
                parts.append(f"{n}x {g.group(3)}" if n else g.group(3))
                if quote is None:
                    quote, qcid = g.group(0), cid
            else:
                ng = _NGPU.search(text)
                if ng:
                    parts.append(f"{ng.group(1)} GPUs")
                    if quote is None:
                        quote, qcid = ng.group(0), cid
    return Environment(", ".join(parts) or None, quote, qcid, versions)


_ARXIV = re.compile(r"https?://(?:www\.)?arxiv\.org/(?:abs|pdf)/[\w.]+(?:v\d+)?|https?://openreview\.net/\S+|"
                    r"https?://(?:aclanthology\.org|papers\.nips\.cc|proceedings\.\w+\.\w+)/\S+", re.I)
_TITLE = re.compile(r"paper\s*(?:titled|called|named)?\s*[\"“']([^\"”'\n]{8,160})[\"”']", re.I)


def paper_mention(thread: Thread) -> tuple[str | None, str | None]:
    """(paper title or URL, verbatim quote) if the thread names the paper."""
    text = thread.title + "\n" + thread.body
    m = _TITLE.search(text) or _ARXIV.search(text)
    if not m:
        return None, None
    value = m.group(1) if m.re is _TITLE else m.group(0).rstrip(").,")
    return value, value


_TRIED = re.compile(
    r"\b(?:i|we)(?:'ve| have)? (?:also |already )?(?:tried|try|re-?ran|checked|used|followed|changed|set|"
    r"increased|decreased|reduced|switched|double-checked|verified)\b|\balready\b|\bdefault (?:config|settings|"
    r"hyper-?parameters)\b|尝试|试过|已经", re.I)


def tried_quotes(thread: Thread) -> list[tuple[str, str | None]]:
    """Sentences where the asker says what they already tried: (sentence, comment id), body first."""
    posts = [(None, thread.body)] + [(c.id, c.body) for c in thread.all_comments()
                                     if c.author and c.author == thread.author][:2]
    for cid, text in posts:
        hits = [(s.text, cid) for s in sentences(strip_code(text), cid) if _TRIED.search(s.text) and len(s.text) < 400]
        if hits:
            return hits[:3]
    return []
