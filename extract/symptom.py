"""Symptom extraction: the metric, the paper's value and the value the asker obtained.

Numbers are read from prose (code blocks removed), clause by clause. Each
candidate number is attributed to the paper side ("paper reports 81.8",
"81.8 in Table 2", "README says", "can't reach 81.8") or to the asker's side
("I get 79.8", "my result is", "only 38.1", "我的结果是 76.1") by the nearest cue
inside its clause; "A vs B" pairs and markdown tables with Paper/Ours columns
are read as pairs. Versions, years, counts (GPUs, epochs, batch size), issue
numbers and the spread after "±" are never values. Values keep the unit the
text uses ("79.8%" → 79.8); ``gap = obtained - paper``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extract.signals import METRIC_WORDS
from extract.threadtext import section_value, strip_code, template_sections

#: A number that is a value candidate; one glued to ``_`` ("15_pretrain.sh") is part of a name.
_NUM = re.compile(r"(?<![A-Za-z0-9_.#/@-])(?:~|≈|about |around )?(\d{1,4}(?:\.\d+)?)(?![A-Za-z0-9_.]*\d)(?!_)(\s?%)?")
_CLAUSE = re.compile(r"(?<!\d)\.(?!\d)\s*|[;\n。；，!?！？]|,(?!\d{3})\s*|\s(?=but\s|while\s|whereas\s|however)", re.I)

_PAPER_LEFT = re.compile(
    r"(?:paper|reported|reports?|claim(?:ed|s)?|readme|table\s?\d+|tab\.?\s?\d+|model ?zoo|official(?:ly)?|"
    r"original|published|expected|target|should (?:be|get|reach)|supposed to|your (?:paper|results?|numbers?)|論文|논문|"
    r"(?:can'?t|cannot|unable to|couldn'?t|could not|not|fail(?:ed)? to|how to|trying to|try to)\s+"
    r"(?:\w+\s)?(?:reach|achieve|get|match|reproduce|obtain)\s*(?:the |your )?(?:reported |claimed )?"
    r"(?:\w+\s){0,2}|reproduce (?:the |your )|论文|原文|文中|报告|官方|表\s?\d)[^\d]{0,30}$",
    re.I,
)
_PAPER_RIGHT = re.compile(
    r"^\s?%?\s*[^\d\n]{0,6}(?:\(?\s*(?:in |from |of |as |on |by )?(?:the |your )?(?:paper|reported|claimed|"
    r"readme|table|model ?zoo|official|original|published|expected)|论文|原文|文中|报告|官方|論文|논문)",
    re.I,
)
_MINE_LEFT = re.compile(
    r"(?:\b(?:i|we)(?:'m| am| are)?\s+(?:\w+\s){0,3}?(?:get|got|getting|obtain(?:ed)?|achieve[ds]?|reach(?:ed)?|"
    r"see|saw|observe[ds]?|measured?|end(?:ed)? up with|only have|have)|\bmy\b|\bmine\b|\bours?\b|"
    r"\breproduced\b|\breproduction\b|\bre-?implement\w*|\bonly\b|\bgives?\b|\bgave\b|\byields?\b|"
    r"\bresults? (?:is|are|was|were)\b|\bjust\b|\bgets?\b|\bgot\b|\bgetting\b|\bobtained\b|\bachieved\b|\bbest\b|\bfinal\b|我|跑出|得到|只有|只能|复现|测得|实际)"
    r"[^\d]{0,35}$",
    re.I,
)
_LABELS_NEXT = re.compile(r"\s*(?:says|reports?|lists|is|value)?\s*[:=]?\s*\**\d")
_MINE_RIGHT = re.compile(
    r"^\s?%?\s*[^\d\n]{0,6}(?:\(?\s*(?:mine|ours|my|reproduced|by me|in my|on my|we got|i got)|"
    r"\s*(?:に|が|가|이)?\s*(?:なります|なりました|出ます|出ました|나옵니다|나왔습니다|나와요))", re.I)
_NOT_VALUE_LEFT = re.compile(
    r"(?<![a-z])(?:v|version|torch|pytorch|cuda|cudnn|python|tensorflow|tf|transformers|jax|numpy|==|>=|<=|"
    r"epochs?|batch[ _-]?size|bs|lr|learning rate|seeds?|gpus?|iter(?:ation)?s?|steps?|warmup|layers?|"
    r"#|issue|pr|commit|step|resolution|size|x|@|r@|pass@|k=|n=|beam|width|dim|heads?|rtx|gtx|geforce|titan|张|块|台|"
    r"±|\+/-|\+-|std|variance)\s*[:=]?\s*$|(?<![a-z])[a-z]\s?=\s?$",
    re.I,
)
_NOT_VALUE_RIGHT = re.compile(
    r"^(?:\s?[x×]\b|\s?[x×]\s?(?:v100|a100|h100|gpu|rtx|titan)|\s*(?:gpus?|cards?|nodes?|epochs?|iters?|"
    r"iterations?|steps?|k\b|m\b|b\b|gb|mb|tb|hours?|hrs?|days?|mins?|minutes?|seconds?|s\b|images?|samples?|"
    r"examples?|seeds?|runs?|times|layers?|params?|parameters|classes|px|pixels|fps|it/s|batch|tokens|words|"
    r"ms|threads|cores|workers|bit|-bit|th\b|st\b|nd\b|rd\b|gpus|张|块|卡|个|轮)|"
    r"\s?%?\s*(?:points?|pts?|pp|percentage points?|(?:\w+ )?(?:lower|higher|worse|better|less|more|drop|gap)\b)|"
    r"[-/]\d|\.\d+\.\d)",
    re.I,
)
_METRIC = re.compile(r"(?:\b|(?<=_))(?:" + METRIC_WORDS + r")\b|top-?1|top-?5|准确率|精度", re.I)

_CANON = [
    (re.compile(r"^top-?1", re.I), "top-1 accuracy"),
    (re.compile(r"^top-?5", re.I), "top-5 accuracy"),
    (re.compile(r"^(?:acc|accuracy|准确率|精度)$", re.I), "accuracy"),
    (re.compile(r"^sacrebleu$", re.I), "BLEU"),
    (re.compile(r"^(?:ppl|perplexity)$", re.I), "perplexity"),
    (re.compile(r"^(?:em|exact match)$", re.I), "exact match"),
    (re.compile(r"^f-?1$", re.I), "F1"),
    (re.compile(r"^box ?ap$", re.I), "box AP"),
    (re.compile(r"^mask ?ap$", re.I), "mask AP"),
]


@dataclass(frozen=True)
class Value:
    value: float
    quote: str
    start: int


@dataclass(frozen=True)
class SymptomFound:
    """What the text states. Quotes are verbatim substrings of ``source``'s text."""

    metric: str | None = None
    metric_quote: str | None = None
    paper: Value | None = None
    obtained: Value | None = None

    @property
    def gap(self) -> float | None:
        if self.paper is None or self.obtained is None:
            return None
        return round(self.obtained.value - self.paper.value, 6)


def canonical_metric(word: str) -> str:
    w = word.strip()
    for rx, name in _CANON:
        if rx.search(w):
            return name
    if w.isupper() or any(ch.isdigit() for ch in w):
        return w
    return w if len(w) <= 5 and w.upper() == w else w.lower() if len(w) > 4 else w


@dataclass(frozen=True)
class _Cand:
    value: float
    start: int
    end: int
    clause: str
    side: str  # "paper" | "mine" | "?"
    dist: int
    pct: bool
    agg: bool = False  # an aggregate the asker states over their runs ("mean 72.5")


def _clauses(text: str) -> list[tuple[int, str]]:
    out = []
    pos = 0
    for m in _CLAUSE.finditer(text):
        if m.start() > pos:
            out.append((pos, text[pos:m.start()]))
        pos = m.end()
    if pos < len(text):
        out.append((pos, text[pos:]))
    return [(p, c) for p, c in out if c.strip()]


#: Metric and model names with digits ("top-1", "pass@1", "F1", "AP50", "R@10", "ResNet-50"): masked in the
#: context of a number so that their digits do not break the ``[^\d]`` spans of the side cues.
_DIGIT_NAME = re.compile(r"(?<![\d.])[a-z]+[-@_]?\d+(?:\.\d+)?(?![\d.])", re.I)


#: "can't get 81.8", "trying to reach 81.8": a target, i.e. the paper's number, though "get" is a mine cue.
_UNREACHED = re.compile(
    r"(?:can'?t|cannot|unable to|couldn'?t|could not|not|fail(?:ed)? to|how to|trying to|try to)\s+(?:\w+\s)?"
    r"(?:reach|achieve|get|match|reproduce|obtain)\b[^\d]{0,30}$", re.I)


#: "the README gives 8.3", "Table 2 shows 81.8": the paper is the subject of a mine-like verb.
_PAPER_SUBJECT = re.compile(
    r"(?:paper|readme|table\s?\d+|model ?zoo|model card|release notes?|论文|論文|논문)\s+(?:\w+\s)?"
    r"(?:gives?|gave|shows?|lists?|says|states|reports?|achieves?|gets?|got|has|had|claims?)\b[^\d]{0,30}$", re.I)


def _last(rx: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The match of ``rx`` (anchored at the end of ``text``) that starts last: the cue nearest the number."""
    m = rx.search(text)
    while m is not None:
        nxt = rx.search(text, m.start() + 1)
        if nxt is None:
            return m
        m = nxt
    return None


def _mask_names(text: str) -> str:
    return _DIGIT_NAME.sub(lambda m: "m" * len(m.group(0)), text)


def _side(left: str, right: str) -> tuple[str, int]:
    """Attribute a number by the nearest cue: right-hand cues ("81.8 in the paper") are closest.

    "X (paper: Y)" makes X the asker's; a paper cue that contains a mine cue ("can't get 81.8") is a paper
    cue."""
    left = _mask_names(left)
    if _MINE_RIGHT.search(right):
        return "mine", 0
    pr = _PAPER_RIGHT.search(right)
    if pr:
        if not _LABELS_NEXT.match(right[pr.end():]):
            return "paper", 0
        if not _PAPER_LEFT.search(left):  # "20.9 (paper 18.3)": the cue labels 18.3, so 20.9 is the asker's
            return "mine", 1
    pm = _last(_PAPER_LEFT, left)
    mm = _last(_MINE_LEFT, left)
    if pm and _PAPER_SUBJECT.search(left):
        return "paper", len(left) - pm.end()
    if pm and mm:
        # the cue that starts later (closer to the number) wins; "I can't reach 81.8" is a paper cue after "I"
        pd, md = len(left) - pm.end(), len(left) - mm.end()
        p_start, m_start = pm.start(), mm.start()
        if p_start > m_start or _UNREACHED.search(left):
            return "paper", pd
        if m_start > p_start:
            return "mine", md
        return ("paper", pd) if pd <= md else ("mine", md)
    if pm:
        return "paper", len(left) - pm.end()
    if mm:
        return "mine", len(left) - mm.end()
    return "?", 999


#: "(mean 72.5)", "average over 3 seeds: 72.5": the aggregate of the asker's runs, the value they compare.
_AGG_LEFT = re.compile(r"\b(?:mean|average|avg|averaged)(?: (?:over|of|across) (?:\d+ |the |all |my )?(?:seeds|runs))?"
                       r"\s*(?:is |was |=|:)?\s*$", re.I)


def _candidates(text: str) -> list[_Cand]:
    out: list[_Cand] = []
    for cpos, clause in _clauses(text):
        for m in _NUM.finditer(clause):
            left = clause[max(0, m.start() - 60):m.start()]
            right = clause[m.end():m.end() + 40]
            if _NOT_VALUE_LEFT.search(left[-16:]) or _NOT_VALUE_RIGHT.search(right):
                continue
            raw = m.group(1)
            val = float(raw)
            if "." not in raw and (1900 <= val <= 2100 or val < 10) and not m.group(2):
                continue  # years; small integers are counts, not metric values
            side, dist = _side(left, right)
            agg = side != "paper" and bool(_AGG_LEFT.search(left))
            out.append(_Cand(val, cpos + m.start(1), cpos + m.end(), clause, "mine" if agg else side, dist,
                             bool(m.group(2)), agg))
    return out


_TABLE_ROW = re.compile(r"^\s*\|?(.+\|.+)\|?\s*$")
_PAPER_CELL = re.compile(r"paper|reported|official|readme|original|claimed|论文|官方|原文", re.I)
_MINE_CELL = re.compile(r"\bmine\b|\bours?\b|\bmy\b|reproduc|re-?run|re-?impl|\bme\b|复现|我的|实际", re.I)


def _table_pair(text: str) -> tuple[Value | None, Value | None]:
    """Markdown tables with a Paper/Ours row or column."""
    lines = text.splitlines()
    rows = []
    for ln in lines:
        if _TABLE_ROW.match(ln) and ln.count("|") >= 2:
            rows.append(ln)
        elif rows and len(rows) >= 2:
            break
        else:
            rows = []
    if len(rows) < 2:
        return None, None
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    paper = mine = None
    # row-labelled: | Paper | 81.8 |
    for row, cs in zip(rows, cells, strict=True):
        nums = [m for c in cs[1:] for m in _NUM.finditer(c)]
        if not cs or not nums:
            continue
        n = nums[0]
        v = Value(float(n.group(1)), row.strip(), 0)
        if _PAPER_CELL.search(cs[0]) and paper is None:
            paper = v
        elif _MINE_CELL.search(cs[0]) and mine is None:
            mine = v
    if paper or mine:
        return paper, mine
    # column-labelled: | Model | Paper | Ours |
    header = cells[0]
    pc = next((i for i, c in enumerate(header) if _PAPER_CELL.search(c)), None)
    mc = next((i for i, c in enumerate(header) if _MINE_CELL.search(c)), None)
    if pc is None or mc is None:
        return None, None
    for row, cs in zip(rows[1:], cells[1:], strict=True):
        if len(cs) > max(pc, mc):
            a, b = _NUM.search(cs[pc]), _NUM.search(cs[mc])
            if a and b:
                return Value(float(a.group(1)), row.strip(), 0), Value(float(b.group(1)), row.strip(), 0)
    return None, None


_PAPER_WORD_LEFT = re.compile(r"(?:paper|reported|reports?|claim(?:ed|s)?|readme|table\s?\d+|model ?zoo|official|"
                              r"论文|原文|文中|官方)[^\d]{0,25}$", re.I)
_PAIR = re.compile(
    r"(?<![A-Za-z0-9_.])(\d{1,4}(?:\.\d+)?)\s?%?\s*(?:[\w-]+\s){0,2}(?:vs\.?|versus|v\.s\.|compared (?:to|with)|instead of|"
    r"rather than|对比|而不是)\s*(?:the\s)?(?:[\w']+\s)?(\d{1,4}(?:\.\d+)?)(?![\w.]*\d)(\s?%?\s*[^\n.;,]{0,30})",
    re.I,
)


#: "higher than reported (A vs B)": a comparison whose subject is the asker's result, so A is theirs.
_THAN = re.compile(r"\bthan (?:the |what(?:'s| is)? )?(?:reported|paper|published|claimed|official|expected)", re.I)


def find_symptom(text: str) -> SymptomFound:
    """The symptom stated in one post's text (title + body, or a comment)."""
    prose = _LABEL_BREAK.sub(r"\1 ", strip_code(text))
    cands = _candidates(prose)
    pv: Value | None = None
    ov: Value | None = None
    starts = {c.start for c in cands}
    # "A vs B (paper)" pairs: a paper word on one side decides; otherwise A is mine, B the paper's. Both must
    # be values ("4 GPUs instead of 8" is not), and a pair after an earlier paper-vs-mine statement is a
    # second comparison (another split or metric): the first one stated is the symptom.
    for m in _PAIR.finditer(prose):
        if m.start(1) not in starts or m.start(2) not in starts or _stated_before(cands, m.start()):
            continue
        a, b, tail = float(m.group(1)), float(m.group(2)), m.group(3)
        left = prose[max(0, m.start() - 40):m.start()]
        quote = _line_around(prose, m.start(), m.end())
        a_paper = (bool(_PAPER_WORD_LEFT.search(left)) and not _MINE_LEFT.search(left[-25:])
                   and not _THAN.search(left))
        b_mine = bool(_MINE_RIGHT.search(tail))
        if a_paper or b_mine:
            pv, ov = Value(a, quote, m.start(1)), Value(b, quote, m.start(2))
        else:
            pv, ov = Value(b, quote, m.start(2)), Value(a, quote, m.start(1))
        break
    cands = _pair_in_clause(cands)
    paper = next((c for c in cands if c.side == "paper"), None)
    mine = _first_mine(cands, paper)
    if pv is None and paper is not None:
        pv = Value(paper.value, paper.clause.strip(), paper.start)
    if ov is None and mine is not None:
        ov = Value(mine.value, mine.clause.strip(), mine.start)
    if pv is None or ov is None:
        tp, tm = _table_pair(prose)
        pv, ov = pv or tp, ov or tm
    if pv is None or ov is None:
        tp, tm = _template_pair(prose)
        pv, ov = pv or tp, ov or tm
    # one side known: the first unattributed number on the same scale is the other side
    if (pv is None) != (ov is None):
        known = pv or ov
        rest = [c for c in cands if c.side == "?" and c.value != known.value and _same_scale(c.value, known.value)]
        if len(rest) > 1:
            rest = [c for c in rest if _METRIC.search(c.clause) or c.start < known.start]
        if rest:
            v = Value(rest[0].value, rest[0].clause.strip(), rest[0].start)
            pv, ov = (pv, v) if ov is None else (v, ov)
    metric, mquote = _metric_near(prose, [v for v in (pv, ov) if v is not None])
    return SymptomFound(metric=metric, metric_quote=mquote, paper=pv, obtained=ov)


#: "Paper results:\n49.85 74.95": a label line ending in a colon names the numbers on the next line.
_LABEL_BREAK = re.compile(r"([^\n\d]{2,40}[:：])[ \t]*\n(?=[ \t]*[~≈]?\d)")


def _stated_before(cands: list[_Cand], pos: int) -> bool:
    """A paper number and another number on its scale are both stated before ``pos``."""
    paper = next((c for c in cands if c.side == "paper" and c.start < pos), None)
    return paper is not None and any(c.side != "paper" and c.start < pos and c.value != paper.value
                                     and _same_scale(c.value, paper.value) for c in cands)


def _template_pair(prose: str) -> tuple[Value | None, Value | None]:
    """Issue-template sections read by role: "Expected results" holds the paper's number, "Actual results"
    the asker's."""
    got: dict[str, Value] = {}
    for sec in template_sections(prose):
        m = section_value(prose, sec)
        if m and sec.role not in got:
            got[sec.role] = Value(float(m.group(1)), _line_around(prose, m.start(), m.end()), m.start(1))
    return got.get("expected"), got.get("actual")


def _same_scale(a: float, b: float) -> bool:
    """Both on one scale (a fraction vs a percentage, or a count, are not comparable values)."""
    if a <= 0 or b <= 0:
        return a == b
    if 0.33 <= a / b <= 3.0:
        return True
    # a fraction against a percentage ("R@1: 0.4365" vs the paper's 49.85): the same quantity in two units
    lo, hi = min(a, b), max(a, b)
    return lo < 1.0 <= hi <= 100.0 and 0.5 <= lo * 100 / hi <= 2.0


def _pair_in_clause(cands: list[_Cand]) -> list[_Cand]:
    """"70.2 with new bindings (paper 91.6)": an unattributed number followed in its clause by a paper number
    (and nothing between) is the asker's."""
    out = list(cands)
    for i in range(1, len(out)):
        cur = out[i]
        if cur.side != "paper":
            continue
        j = i - 1  # "66.9 / 67.3 / 66.5 (paper 67.9)": the whole list of runs is the asker's
        while j >= 0 and out[j].side == "?" and out[j].clause == cur.clause and _same_scale(out[j].value, cur.value):
            prev = out[j]
            out[j] = _Cand(prev.value, prev.start, prev.end, prev.clause, "mine", cur.dist, prev.pct, prev.agg)
            j -= 1
    return out


def _first_mine(cands: list[_Cand], paper: _Cand | None) -> _Cand | None:
    """The asker's first reported number: same scale as the paper's and not the paper's own number."""
    mines = [c for c in cands if c.side == "mine" and (paper is None or c.start != paper.start)]
    mines.sort(key=lambda c: not c.agg)  # a stated aggregate over runs before the individual runs
    if paper is not None:
        fit = [c for c in mines if c.value != paper.value and _same_scale(c.value, paper.value)]
        if fit:
            return fit[0]
    return mines[0] if mines else None


def _line_around(text: str, start: int, end: int) -> str:
    a = max(text.rfind("\n", 0, start) + 1, 0)
    b = text.find("\n", end)
    return text[a:b if b >= 0 else len(text)].strip()


def _metric_near(text: str, values: list[Value]) -> tuple[str | None, str | None]:
    """The metric word closest to the values (same clause first), else the first metric in the text."""
    best: tuple[int, str, str] | None = None
    for v in values:
        for m in _METRIC.finditer(v.quote):
            word = m.group(0)
            if word.lower() == "score" and best is not None:
                continue
            d = abs(m.start() - (v.quote.find(_fmt(v.value)) if _fmt(v.value) in v.quote else 0))
            if best is None or d < best[0]:
                best = (d, word, v.quote)
    if best is None:
        for m in _METRIC.finditer(text[:3000]):
            word = m.group(0)
            if word.lower() == "score":
                continue
            best = (0, word, _line_around(text, m.start(), m.end()))
            break
    if best is None:
        return None, None
    return canonical_metric(best[1]), best[2]


def _fmt(v: float) -> str:
    return f"{v:g}"
