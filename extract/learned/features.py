"""Named features of a thread for the learned models. Pure functions of the thread; the same code serves
training (``extract.learned.train``) and the runtime, so a model sees at inference exactly what it was
trained on. Every feature is binary (1.0) unless its name says otherwise (``log_*``)."""

from __future__ import annotations

import math
import re

from extract.cues import CAUSAL, CONFIRM, FIX, HYPOTHESIS, REFUTE
from extract.exchange import LINKED_FIX, SELF_FOUND, Exchange, read_exchange, resolution_type
from extract.signals import OPENING_CHARS, Signals, signals
from extract.threadtext import Post, has_code, has_human_reply, has_other_reply, strip_code
from reprodiag.schema import Thread

Features = dict[str, float]

_WORD = re.compile(r"[a-z][a-z0-9+#-]*|\d+(?:\.\d+)?%?|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_TITLE_NUM = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?\s?%?(?![A-Za-z0-9_.]*\d)")
_POST_CHARS = 1500


def _tokens(text: str) -> list[str]:
    """Lower-cased words; numbers become ``<num>`` / ``<pct>``; a run of CJK characters becomes its character
    bigrams (CJK text has no spaces)."""
    out: list[str] = []
    for tok in _WORD.findall(text.lower()):
        c = tok[0]
        if c.isdigit():
            out.append("<pct>" if tok.endswith("%") else "<num>")
        elif _CJK.match(c):
            out.extend(tok[i:i + 2] for i in range(max(len(tok) - 1, 1)))
        else:
            out.append(tok)
    return out


def _ngrams(prefix: str, toks: list[str], feats: Features, bigrams: bool = True) -> None:
    for i, t in enumerate(toks):
        feats[f"{prefix}:{t}"] = 1.0
        if bigrams and i + 1 < len(toks):
            feats[f"{prefix}2:{t} {toks[i + 1]}"] = 1.0


def _bucket(n: int, edges: tuple[int, ...]) -> str:
    for e in edges:
        if n <= e:
            return f"<={e}"
    return f">{edges[-1]}"


def filter_features(thread: Thread, sig: Signals | None = None) -> Features:
    """Features of the relevance filter: every cue signal of :func:`extract.signals.signals` (``cue:``),
    word uni/bigrams of the title (``t:``, ``t2:``) and of the opening of the body's prose (``b:``, ``b2:``),
    labels, and thread facts (numbers in the title, who replied, the asker's follow-up, code, length)."""
    s = sig if sig is not None else signals(thread)
    f: Features = {"bias_feature": 1.0}
    for n in s.names:
        f[f"cue:{n}"] = 1.0
    _ngrams("t", _tokens(thread.title[:300]), f)
    prose = strip_code(thread.body[:OPENING_CHARS * 6])[:OPENING_CHARS]
    _ngrams("b", _tokens(prose), f)
    for lb in thread.labels[:10]:
        f[f"label:{lb.strip().lower()[:40]}"] = 1.0
    nums = _TITLE_NUM.findall(thread.title)
    if nums:
        f["title_numbers"] = 1.0
        if len(nums) >= 2:
            f["title_two_numbers"] = 1.0
    f[f"kind:{thread.kind}"] = 1.0
    comments = thread.all_comments()
    if not has_human_reply(thread):
        f["no_reply"] = 1.0
    elif not has_other_reply(thread):
        f["asker_only_replies"] = 1.0
    if any(c.author_association in ("OWNER", "MEMBER", "COLLABORATOR") for c in comments):
        f["maintainer_reply"] = 1.0
    if thread.author and any(c.author == thread.author for c in comments):
        f["asker_followup"] = 1.0
    if has_code(thread.body):
        f["body_code"] = 1.0
    f[f"comments:{_bucket(len(comments), (0, 1, 3, 8))}"] = 1.0
    f[f"body_chars:{_bucket(len(thread.body), (200, 800, 3000))}"] = 1.0
    if _CJK.search(thread.title + thread.body[:400]):
        f["cjk"] = 1.0
    return f




# --------------------------------------------------------------------------- is_resolved


def _last(ps: list[Post], pred) -> Post | None:  # type: ignore[no-untyped-def]
    return next((p for p in reversed(ps) if pred(p)), None)


def resolved_features(thread: Thread, ps: list[Post], ex: Exchange | None = None) -> Features:
    """Features of is_resolved (does the thread establish the cause?): the rules' exchange reading
    (confirmed reply, closing explanation, maintainer explanation, refutations), who spoke last, the asker's
    last words, the maintainers' words, state and state reason."""
    ex = ex if ex is not None else read_exchange(thread, ps)
    f: Features = {"bias_feature": 1.0}
    f[f"rules:{resolution_type(thread, ps, ex)}"] = 1.0
    for name, val in (("cause", ex.cause), ("confirmation", ex.confirmation), ("closing", ex.closing),
                      ("maint_expl", ex.maintainer_explanation), ("self_diag", ex.self_diagnosis)):
        if val is not None:
            f[f"ex:{name}"] = 1.0
    if ex.confirmed:
        f["ex:confirmed_any"] = 1.0
    if ex.refuted:
        f["ex:refuted_any"] = 1.0
    f[f"diag_posts:{_bucket(ex.diagnostic_posts, (0, 1, 2, 4))}"] = 1.0
    f[f"state:{thread.state}"] = 1.0
    f[f"reason:{(thread.state_reason or 'none').lower()}"] = 1.0
    if any(p.is_answer for p in ps) or thread.answer_id:
        f["accepted_answer"] = 1.0
    human = [p for p in ps[1:] if not p.is_bot]
    if not human:
        f["no_human_reply"] = 1.0
    if ps and ps[-1].is_bot:
        f["last_is_bot"] = 1.0
    last = human[-1] if human else None
    if last is not None:
        f["last:asker" if last.is_asker else "last:maintainer" if last.is_maintainer else "last:other"] = 1.0
    maint = [p for p in human if p.is_maintainer and not p.is_asker]
    others = [p for p in human if not p.is_asker and not p.is_maintainer and not p.is_corroboration]
    if maint:
        f["maint_replied"] = 1.0
    if others:
        f["other_replied"] = 1.0
    if all(p.is_corroboration or p.is_asker for p in human) and human:
        f["only_corroboration"] = 1.0
    for group, prefix in ((maint, "m"), (others, "o")):
        for p in group:
            body = strip_code(p.body[:_POST_CHARS * 3])[:_POST_CHARS]
            if CAUSAL.search(body):
                f[f"{prefix}:causal"] = 1.0
            if FIX.search(body):
                f[f"{prefix}:fix"] = 1.0
            if HYPOTHESIS.search(body):
                f[f"{prefix}:hypothesis"] = 1.0
            if LINKED_FIX.search(body):
                f[f"{prefix}:linked_fix"] = 1.0
            if "?" in body[-80:]:
                f[f"{prefix}:asks"] = 1.0
            for t in set(_tokens(body[:400])):
                f[f"{prefix}w:{t}"] = 1.0
    asker_later = [p for p in human if p.is_asker]
    if asker_later:
        body = strip_code(asker_later[-1].body[:_POST_CHARS * 3])[:_POST_CHARS].lower()
        if CONFIRM.search(body):
            f["asker_last:confirm"] = 1.0
        if REFUTE.search(body):
            f["asker_last:refute"] = 1.0
        if SELF_FOUND.search(body):
            f["asker_last:self_found"] = 1.0
        for t in set(_tokens(body[:300])):
            f[f"aw:{t}"] = 1.0
    n = len(human)
    f["log_replies"] = math.log1p(n)
    return f


# --------------------------------------------------------------------------- error type


def type_features(ps: list[Post], roles: dict[int, float], rules_type: str,
                  scores: dict[str, dict[str, float]]) -> Features:
    """Features of the error type: the rules' decision, the cue-family scores of the settled posts and of
    the whole thread (``s_*`` / ``a_*``, log-scaled), and words of the replies."""
    f: Features = {"bias_feature": 1.0, f"rules:{rules_type}": 1.0}
    for scope, sc in scores.items():
        for t, v in sc.items():
            if v > 0:
                f[f"log_{scope}:{t}"] = math.log1p(v)
    for p in ps[1:]:
        if p.is_bot or p.is_corroboration:
            continue
        w = "r" if not p.is_asker else "a"
        for t in set(_tokens(strip_code(p.body[:2000])[:600])):
            f[f"{w}:{t}"] = 1.0
    for t in set(_tokens(strip_code(ps[0].body[:2000])[:600])) if ps else ():
        f[f"q:{t}"] = 1.0
    return f





# --------------------------------------------------------------------------- values

#: A number that can be a metric value: up to 4 integer digits, optional decimals, optional %.
_VALUE = re.compile(r"(?<![A-Za-z0-9_.#/@-])(-?\d{1,4}(?:[.,]\d+)?)(?![A-Za-z0-9_.]*\d)(?!_)(\s?%)?")
_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_PAPER_NEAR = re.compile(r"paper|report|claim|readme|table|model ?zoo|official|original|publish|expect|target|"
                         r"论文|原文|文中|官方|報告|論文|논문", re.I)
_MINE_NEAR = re.compile(r"\bi\b|\bwe\b|\bmy\b|\bmine\b|\bours?\b|reproduc|\bget|\bgot\b|obtain|achiev|only|"
                        r"我|跑|得到|只有|复现|私|저는|제가", re.I)
_METRIC_NEAR = re.compile(r"(?:\b|(?<=_))(?:" + r"top-?[15]|acc(?:uracy)?|m?ap\w{0,3}|bleu|rouge\S{0,3}|f-?1|"
                          r"fid|m?iou|psnr|ssim|lpips|ppl|perplexity|auc|auroc|ndcg|recall|precision|dice|cider|"
                          r"meteor|rmse|mae|mse|wer|cer|em|nds|is|kid|score|reward|return|eer|hits@\d+|mrr"
                          + r")\b|准确率|精度|指标", re.I)
_AGG = re.compile(r"\b(?:mean|average|avg)\b", re.I)


class ValueCandidate:
    """One number of the asker's text that may be the paper's or the obtained value. ``feats`` are its
    features for both value rankers; ``value`` is the number in the thread's unit as written."""

    __slots__ = ("value", "post", "start", "feats", "quote", "comment_id")

    def __init__(self, value: float, post: int, start: int, feats: Features, quote: str,
                 comment_id: str | None) -> None:
        self.value, self.post, self.start, self.feats = value, post, start, feats
        self.quote, self.comment_id = quote, comment_id


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _FENCE.finditer(text)]


def _words(text: str, n: int, tail: bool) -> list[str]:
    toks = _tokens(text)
    return toks[-n:] if tail else toks[:n]


def value_candidates(thread: Thread, ps: list[Post], rules_paper: float | None, rules_obtained: float | None,
                     max_per_post: int = 40) -> list[ValueCandidate]:
    """Numbers of the title, the body and the asker's comments (comments before anyone else replied are
    marked ``pre_reply``), with context features: side cues left/right (the rules' attribution), paper /
    mine / metric words near, percent sign, decimals, magnitude, code block, table row, position, and
    whether the rules' symptom chose the same number."""
    out: list[ValueCandidate] = []
    replied = False
    seen_vals: dict[float, int] = {}
    from extract.symptom import _NOT_VALUE_LEFT, _NOT_VALUE_RIGHT, _side

    for p in ps:
        if p.index > 0:
            if not p.is_asker:
                replied = replied or not p.is_bot
                continue
        text = p.body[:12000]
        title_end = len(thread.title) + 1 if p.index == 0 else 0
        spans = _code_spans(text)
        k = 0
        for m in _VALUE.finditer(text):
            raw = m.group(1).replace(",", ".")
            try:
                val = float(raw)
            except ValueError:
                continue
            s, e = m.start(1), m.end()
            left, right = text[max(0, s - 60):s], text[e:e + 40]
            line_start = text.rfind("\n", 0, s) + 1
            line_end = text.find("\n", e)
            line = text[line_start:line_end if line_end >= 0 else len(text)]
            f: Features = {"bias_feature": 1.0}
            where = "title" if s < title_end else "body" if p.index == 0 else (
                "asker_pre" if not replied else "asker_post")
            f[f"where:{where}"] = 1.0
            f[f"order:{min(k, 5)}"] = 1.0
            f[f"order_{where}:{min(k, 3)}"] = 1.0
            if any(a <= s < b for a, b in spans):
                f["in_code"] = 1.0
            if line.count("|") >= 2:
                f["table_row"] = 1.0
            pct = bool(m.group(2))
            if pct:
                f["pct"] = 1.0
            dec = len(raw.split(".")[1]) if "." in raw else 0
            f[f"decimals:{min(dec, 3)}"] = 1.0
            f[f"mag:{'<1' if val < 1 else '<10' if val < 10 else '<100' if val <= 100 else '<1000' if val < 1000 else 'big'}"] = 1.0
            if dec == 0 and 1900 <= val <= 2100:
                f["yearlike"] = 1.0
            if _NOT_VALUE_LEFT.search(left[-16:]):
                f["notval_left"] = 1.0
            if _NOT_VALUE_RIGHT.search(right):
                f["notval_right"] = 1.0
            side, dist = _side(left, right)
            f[f"side:{side}"] = 1.0
            if side != "?":
                f[f"side_near:{side}:{dist < 12}"] = 1.0
            if _PAPER_NEAR.search(left[-35:]):
                f["paper_left"] = 1.0
            if _PAPER_NEAR.search(right[:30]):
                f["paper_right"] = 1.0
            if _MINE_NEAR.search(left[-30:]):
                f["mine_left"] = 1.0
            if _MINE_NEAR.search(right[:25]):
                f["mine_right"] = 1.0
            if _PAPER_NEAR.search(line):
                f["paper_line"] = 1.0
            if _METRIC_NEAR.search(left[-25:]) or _METRIC_NEAR.search(right[:15]):
                f["metric_near"] = 1.0
            if _AGG.search(left[-20:]):
                f["agg_left"] = 1.0
            for w in _words(left[-30:], 2, True):
                f[f"l:{w}"] = 1.0
            for w in _words(right[:25], 2, False):
                f[f"r:{w}"] = 1.0
            if rules_paper is not None and abs(val - rules_paper) < 1e-9:
                f["rules_paper"] = 1.0
            if rules_obtained is not None and abs(val - rules_obtained) < 1e-9:
                f["rules_obtained"] = 1.0
            seen_vals[val] = seen_vals.get(val, 0) + 1
            if seen_vals[val] > 1:
                f["repeat"] = 1.0
            out.append(ValueCandidate(val, p.index, s, f, m.group(0).strip(), p.comment_id))
            k += 1
            if k >= max_per_post:
                break
    _context_features(out, thread, rules_paper, rules_obtained)
    # scale agreement: a number on the same scale as other candidates (percent vs fraction)
    if out:
        scales = [c.value > 1.0 for c in out]
        share = sum(scales) / len(scales)
        for c, big in zip(out, scales, strict=True):
            c.feats["majority_scale"] = 1.0 if (big and share >= 0.5) or (not big and share < 0.5) else 0.0
    return out


#: Characters within which two numbers of one post form a pair ("38.1 mAP ... the model zoo says 40.2").
PARTNER_CHARS = 120


def _context_features(out: list[ValueCandidate], thread: Thread, rules_paper: float | None,
                      rules_obtained: float | None) -> None:
    """Features from a candidate's neighbours: how many numbers its post has, whether a number on the same
    scale and within 40% of it stands close by (a comparison pair) and on which side the rules put that
    partner, whether the same number is in the title, and whether the rules found both values."""
    by_post: dict[int, list[ValueCandidate]] = {}
    for c in out:
        by_post.setdefault(c.post, []).append(c)
    title_vals = {c.value for c in out if c.feats.get("where:title")}
    both = rules_paper is not None and rules_obtained is not None
    for cs in by_post.values():
        n = len(cs)
        for c in cs:
            f = c.feats
            f[f"ncand:{'<=2' if n <= 2 else '<=5' if n <= 5 else '>5'}"] = 1.0
            if both:
                f["rules_both"] = 1.0
            if c.value in title_vals and not f.get("where:title"):
                f["also_in_title"] = 1.0
            side = next((k.split(":", 1)[1] for k in f if k.startswith("side:")), "?")
            where = next((k.split(":", 1)[1] for k in f if k.startswith("where:")), "?")
            f[f"side_where:{side}:{where}"] = 1.0
            for o in cs:
                if o is c or abs(o.start - c.start) > PARTNER_CHARS or (o.value > 1.0) != (c.value > 1.0):
                    continue
                hi = max(abs(o.value), abs(c.value), 1e-9)
                if abs(o.value - c.value) / hi > 0.4 or o.value == c.value:
                    continue
                f["has_partner"] = 1.0
                f["partner_after" if o.start > c.start else "partner_before"] = 1.0
                oside = next((k.split(":", 1)[1] for k in o.feats if k.startswith("side:")), "?")
                f[f"partner_side:{oside}"] = 1.0
                if c.value > o.value:
                    f["larger_than_partner"] = 1.0
                if rules_paper is not None and abs(o.value - rules_paper) < 1e-9:
                    f["partner_rules_paper"] = 1.0
                if rules_obtained is not None and abs(o.value - rules_obtained) < 1e-9:
                    f["partner_rules_obtained"] = 1.0
