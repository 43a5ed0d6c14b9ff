"""Parse a model's free-text answer into a ranked list of diagnosis directions.

Numbered or bulleted lines ("1.", "2)", "(3)", "-", "*", "•", "一、") each start a
direction; unmarked lines after a bullet continue it. Without any markers,
each non-empty line is one direction. A direction's justification is the part
after "because", "since", "as", "due to", ":" , " - ", "—", "因为", "由于" or "：".
A single line that lists many directions across several error types
("lr, batch size, seed or the data") is split at commas / "or".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval_diagnosis.directions import concepts_in, specific

MAX_DIRECTIONS = 30
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z]*")
_BULLET = re.compile(
    r"^\s*(?:#+\s*)?(?:\(?\d{1,2}[.)、:：]|\(\d{1,2}\)|[-*•·●▪‣–—]|[一二三四五六七八九十]+[、.．)]|[a-hA-H][.)](?=\s))\s*"
)
_JUST = re.compile(
    r"\s+(?:because|since|as (?:the|it|this|they|a)|due to|given that|which (?:would|could|can|may|might|explains)"
    r"|so that|leading to|resulting in|this (?:would|could|can|may|might|explains))\b|[:：]\s|\s[-–—]\s|因为|由于|，因",
    re.I,
)
_CAUSAL = re.compile(r"\b(?:because|since|due to|so that|therefore|leads? to|causes?|explains?|would|results? in)\b|"
                     r"因为|由于|导致", re.I)
_SPLIT_LIST = re.compile(r"\s*(?:,|;|、|，|；|\bor\b|\band\b|/)\s*", re.I)


@dataclass(frozen=True)
class Direction:
    """One direction; ``justification`` is None for a bare guess."""

    text: str
    justification: str | None = None
    raw: str = ""

    @property
    def full(self) -> str:
        return f"{self.text} {self.justification}" if self.justification else self.text

    @property
    def justified(self) -> bool:
        j = self.justification or ""
        return len(j.split()) >= 3 or len(j) >= 8 and bool(re.search(r"[\u4e00-\u9fff]", j)) \
            or bool(_CAUSAL.search(self.text) and len(self.text.split()) >= 8)


def _clean(line: str) -> str:
    line = line.replace("**", "").replace("__", "").replace("`", "")
    return " ".join(line.split()).strip(" .;")


def _split_just(text: str) -> Direction:
    m = _JUST.search(text)
    if m and m.start() > 0:
        head, tail = text[: m.start()].strip(" ,.;:"), text[m.end():].strip()
        if head and tail:
            return Direction(head, tail, text)
    return Direction(text, None, text)


def _explode(d: Direction) -> list[Direction]:
    """Split a one-line shopping list that names three or more error types into its parts."""
    found = specific(concepts_in(d.text))
    types = {c.types[0] for c in found}
    if len(types) < 3:
        return [d]
    parts = [p.strip() for p in _SPLIT_LIST.split(d.text) if p and p.strip()]
    parts = [p for p in parts if len(p) > 1]
    return [Direction(p, None, p) for p in parts] if len(parts) > 1 else [d]


def parse_directions(answer: str | None) -> list[Direction]:
    """Ranked directions of ``answer`` (empty for empty or punctuation-only text); at most 30."""
    text = _FENCE.sub("", _THINK.sub("", answer or ""))
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    marked = [bool(_BULLET.match(ln)) for ln in lines]
    chunks: list[str] = []
    if any(marked):
        current: str | None = None
        for ln, is_b in zip(lines, marked, strict=True):
            if is_b:
                if current is not None:
                    chunks.append(current)
                current = _BULLET.sub("", ln, count=1)
            elif current is not None:
                current += " " + ln.strip()
        if current is not None:
            chunks.append(current)
    else:
        chunks = [ln for ln in lines if not ln.rstrip().endswith((":", "："))] or lines
    out: list[Direction] = []
    for ch in chunks:
        c = _clean(ch)
        if not re.search(r"[A-Za-z0-9\u4e00-\u9fff]", c):
            continue
        out.extend(_explode(_split_just(c)))
        if len(out) >= MAX_DIRECTIONS:
            break
    return out[:MAX_DIRECTIONS]


def render_directions(directions: list[tuple[str, str | None]]) -> str:
    """A numbered answer text from ``(direction, justification)`` pairs (the format models are asked for)."""
    lines = []
    for i, (d, j) in enumerate(directions, start=1):
        lines.append(f"{i}. {d}" + (f": {j}" if j else ""))
    return "\n".join(lines)
