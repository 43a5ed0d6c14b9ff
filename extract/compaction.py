"""Prompt compaction: the thread as the model sees it, with the noise removed.

Dropped: bot comments and automated notices; quoted earlier replies ("> "
lines whose text already appeared earlier in the thread); e-mail reply
boilerplate ("On … wrote:", "Reply to this email directly", "Sent from my
iPhone"). Long code blocks / logs / tracebacks are cut to their head and tail.
Every kept post keeps its id (``[body]`` or ``[c:<comment id>]``) so evidence still
points at the original comment. Token counts are estimated at 4 characters
per token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extract.threadtext import WS, is_bot_comment, is_maintainer
from reprodiag.schema import Thread

#: Code blocks longer than this many lines keep only HEAD_LINES + TAIL_LINES.
MAX_BLOCK_LINES = 30
HEAD_LINES = 12
TAIL_LINES = 8
#: A single post longer than this many characters is cut in the middle.
MAX_POST_CHARS = 6000

_FENCE = re.compile(r"(```|~~~)[^\n]*\n.*?(?:\1|\Z)", re.S)
_EMAIL_START = re.compile(r"^\s*(?:On .{5,200}wrote:|-{2,} ?Original Message ?-{2,}|From: .+@.+)\s*$", re.M)
_EMAIL_LINE = re.compile(
    r"^\s*(?:Sent from my \w+.*|You are receiving this because.*|Reply to this email directly.*|"
    r"—\s*$|-- ?$|Unsubscribe.*|view it on GitHub.*|\[\S+\]\(https://github\.com/notifications.*)$",
    re.I | re.M,
)


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _trim_block(block: str) -> str:
    lines = block.split("\n")
    if len(lines) <= MAX_BLOCK_LINES:
        return block
    cut = len(lines) - HEAD_LINES - TAIL_LINES
    return "\n".join(lines[:HEAD_LINES] + [f"... [{cut} lines trimmed] ..."] + lines[-TAIL_LINES:])


def _trim_logs(text: str) -> str:
    text = _FENCE.sub(lambda m: _trim_block(m.group(0)), text)
    lines = text.split("\n")
    # unfenced tracebacks / logs: long runs of indented or log-looking lines
    if len(lines) > MAX_BLOCK_LINES * 2:
        text = _trim_block(text)
    if len(text) > MAX_POST_CHARS:
        half = MAX_POST_CHARS // 2
        text = text[:half] + f"\n... [{len(text) - MAX_POST_CHARS} characters trimmed] ...\n" + text[-half:]
    return text


def _strip_email(text: str) -> str:
    m = _EMAIL_START.search(text)
    if m:
        rest = text[m.end():]
        # everything after "On … wrote:" that is quoted is the earlier mail
        if all(not ln.strip() or ln.lstrip().startswith(">") for ln in rest.splitlines()):
            text = text[:m.start()]
    return _EMAIL_LINE.sub("", text)


def _strip_quotes(text: str, seen: str) -> str:
    """Drop "> " lines that repeat text already seen earlier in the thread."""
    out = []
    for ln in text.split("\n"):
        s = ln.lstrip()
        if s.startswith(">"):
            q = WS.sub(" ", s.lstrip("> ").strip())
            if not q or q in seen:
                continue
        out.append(ln)
    return "\n".join(out)


@dataclass(frozen=True)
class Compacted:
    """The rendered thread and what was kept. ``kept_ids``: comment ids shown (None = body)."""

    text: str
    kept_ids: tuple[str | None, ...]
    dropped_bot: int
    full_tokens: int
    tokens: int


def _header(thread: Thread) -> str:
    state = thread.state + (f" ({thread.state_reason})" if thread.state_reason else "")
    header = [f"Repository: {thread.repo}", f"Kind: {thread.kind}; state: {state}; created: "
              f"{thread.created_at.date().isoformat()}"]
    if thread.labels:
        header.append("Labels: " + ", ".join(thread.labels))
    header.append(f"Title: {thread.title}")
    return "\n".join(header)


def render_full(thread: Thread) -> str:
    """The thread rendered in the same layout without any compaction (the baseline for savings)."""
    parts = [_header(thread), f"[body] {thread.author} (asker):\n{thread.body}"]
    for c in thread.all_comments():
        parts.append(f"[c:{c.id}] {c.author} ({c.author_association}):\n{c.body}")
    return "\n\n".join(parts)


def compact(thread: Thread) -> Compacted:
    """Render ``thread`` for a prompt; see the module docstring for what is removed."""
    body = _trim_logs(_strip_email(thread.body))
    parts = [_header(thread), f"[body] {thread.author} (asker):\n{body}"]
    seen = WS.sub(" ", thread.title + " " + thread.body)
    kept: list[str | None] = [None]
    dropped = 0
    for c in thread.all_comments():
        if is_bot_comment(c):
            dropped += 1
            continue
        text = _trim_logs(_strip_quotes(_strip_email(c.body), seen)).strip()
        seen += " " + WS.sub(" ", c.body)
        if not text:
            continue
        role = "asker" if c.author and c.author == thread.author else (
            "maintainer" if is_maintainer(c.author_association) else "user")
        answer = "; accepted answer" if c.is_answer or c.id == thread.answer_id else ""
        parts.append(f"[c:{c.id}] {c.author} ({role}{answer}):\n{text}")
        kept.append(c.id)
    out = "\n\n".join(parts)
    return Compacted(out, tuple(kept), dropped, estimate_tokens(render_full(thread)), estimate_tokens(out))
