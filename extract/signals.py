"""The relevance filter's cue signals: what a thread says, read as named cues.

Positive cues (an intent to reproduce, a reference to the paper, a gap, the asker's own result) and negative
ones (a bug report, install/CUDA help, out-of-memory, a feature request, weights and licence questions, a
question about the paper's equations) are matched over the title, the asker's body and the first comments,
in English and Chinese (and a few Japanese and Korean forms). :func:`signals` returns them with their summed
weights; the learned filter (:func:`extract.relevance.classify`) uses them as features, and the older
hand-weighted decision (:func:`extract.relevance.rules_positive`) sums them. The metric vocabulary
(``METRIC_WORDS``) is shared with the symptom reader.
"""


from __future__ import annotations

import re
from dataclasses import dataclass

from extract.threadtext import is_bot_comment, strip_code, template_pair
from reprodiag.schema import Thread

_I = re.I

#: Reading windows, in characters: the body, the first part (for negative cues), each comment.
BODY_CHARS = 3000
OPENING_CHARS = 600
COMMENT_CHARS = 800
MAX_COMMENTS = 4

#: Metric names matched case-insensitively, and those matched only as written (short acronyms).
METRIC_WORDS_CI = (
    r"top-?[15]|acc(?:uracy)?|m?AP(?:50|75|@\.?5|_?[sml])?|box ?AP|mask ?AP|(?:sacre)?BLEU|ROUGE(?:-?[12L])?|"
    r"F-?1|exact match|FID|m?IoU|PSNR|SSIM|LPIPS|perplexity|PPL|AUC|AUROC|NDCG|"
    r"recall(?:@\d+)?|R@\d+|precision|Dice|CIDEr|METEOR|SPICE|RMSE|success rate|reward|"
    r"score|Spearman|Pearson|mAcc|CLIP ?score|pass@\d+|error rate|top1|top5|(?:average|mean|episodic|episode|eval) returns?"
)
METRIC_WORDS_CS = r"IS|EM|PQ|NDS|MAE|MSE|KID|CER|WER|MRR|MCC|mATE"
METRIC_WORDS = METRIC_WORDS_CI + r"|(?-i:" + METRIC_WORDS_CS + ")"

_NUM = r"\d+(?:\.\d+)?\s?%?"

_POS: dict[str, tuple[float, re.Pattern[str]]] = {
    "repro_intent": (2.0, re.compile(
        r"\b(?:can(?:no|')?t|could(?: ?no|n'?)t|unable to|fail(?:ed|s)? to|difficult to|hard to|trying to|"
        r"try(?:ing)? to|tried to|attempt(?:ing|ed)? to|able to|how (?:to|can i|do i|could i))\s+"
        r"(?:fully |exactly |successfully )?(?:reproduce|replicate|reach|achieve|match|obtain|get|attain)\b"
        r"(?! (?:th(?:e|is) )?(?:bug|error|crash|issue|problem|exception|segfault))|"
        r"\breproduc(?:e|ed|ing|tion|ibility)\s+(?:of\s+)?(?:the\s+|your\s+|paper'?s?\s+|reported\s+)?"
        r"(?:results?|numbers?|performance|accuracy|scores?|metrics?|experiments?|baselines?|"
        r"table|figure|fig\.|map|bleu|fid|miou|f1)|"
        r"\breplicat(?:e|ed|ing|ion)\b|\bnot reproducible\b|\bresults? (?:are |is )?(?:not )?reproducible\b|"
        r"\b(?:can(?:no|')?t|could(?: ?no|n'?)t) (?:get|reach|achieve) (?:the |your |similar |same |"
        r"comparable )?(?:reported|paper|results?|performance|accuracy|numbers?)|"
        r"复现|重现|复现不了|无法复现|达不到|跑不出|再現|재현", _I)),
    "paper_ref": (1.5, re.compile(
        r"\b(?:in|from|of) (?:the|your|ur) (?:original )?(?:paper|publication|article|readme|model zoo|"
        r"modelzoo|table|repo(?:sitory)?'?s? (?:readme|results))\b|\b(?:the|your) paper(?:'s)?\b|"
        r"\bpaper(?:'s)? (?:reports?|reported|results?|numbers?|claims?|says|shows|states|value|score)\b|"
        r"\breported (?:in|by|on|results?|numbers?|accuracy|performance|score|value|map|bleu|fid)\b|"
        r"\bas reported\b|\b(?:paper|readme|model card|expected|official)\s*(?:says|reports|lists|is)?\s*[:=(]?\s*\**\d|"
        r"\((?:the )?paper\b|\bmodel card\b|\b(?:claimed|reported) (?:\w+ ){0,3}(?:of|is|as) " + _NUM + r"|"
        r"\b(?:table|tab\.?) ?\d+\b|\bmodel ?zoo\b|\bREADME\b|\bofficial (?:results?|numbers?|checkpoint|"
        r"scores?|performance)\b|\bthe paper\b|\b(?:the|was|were|is|are) reported (?:\w+ ){0,2}(?:of )?\d|"
        r"论文|文章中|原文|报告的|表\s?\d|論文|논문", _I)),
    "gap": (1.5, re.compile(
        r"\b(?:lower|worse|higher|better|less|smaller|bigger|larger) (?:\w+ )?than (?:the |what |those |that )?"
        r"(?:reported|paper|expected|claimed|published|in the|official|your)|"
        r"\b(?:don'?t|doesn'?t|do not|does not|didn'?t|did not|not|cannot|can'?t) (?:quite )?match\b|"
        r"\b(?:big|large|huge|significant|considerable|\d+(?:\.\d+)?\s?%?)\s?(?:point |pt |pts )?"
        r"(?:gap|drop|discrepancy|difference|degradation)\b|\bdiscrepanc(?:y|ies)\b|^[^\n]{0,60}\bgap\b|"
        r"\b(?:only|just) (?:got|get|gets|reach(?:ed)?|achieve[ds]?|obtain(?:ed)?|about|around|~)\s*\d|"
        r"\bmuch (?:lower|worse|higher)\b|\bfar (?:from|below|lower)\b|\bbelow (?:the )?(?:reported|paper)|"
        r"\bvs\.? (?:the )?(?:paper|reported|\d+(?:\.\d+)?\s?%? ?\(?(?:in (?:the )?)?(?:paper|reported))|"
        r"\b(?:results?|scores?|numbers?|performance|accuracy|metrics?|values?)\s(?:\w+\s){0,3}(?:very |quite |much |"
        r"so |a lot |significantly )?different from\b|"
        r"\b(?:not|n't) (?:get(?:ting)?|obtain(?:ing)?|reach(?:ing)?|see(?:ing)?) the same (?:\w+ )?(?:results?|scores?|"
        r"numbers?|accuracy|performance)|"
        r"对不上|不一致|不符|差距|差了|低于|差很多|相差|只有\s?\d|只能达到|低了|低い|異な|違い|다릅니다|다르게|차이|낮습니다", _I)),
    "mine": (1.0, re.compile(
        r"\b(?:i|we) (?:only )?(?:get|got|obtain(?:ed)?|achieve[ds]?|reach(?:ed)?|am getting|are getting|"
        r"end up with|ended up with|see|saw|observe[ds]?|measured?)\s+(?:an? |the )?(?:\w+ ){0,3}"
        r"(?:of |around |about |~|≈|[=:]\s?)?\**\d|\b(?:got|gives|gave|get|reaches|yields)\s*[:=]?\s*\**\d|\bmy (?:results?|reproduc\w*|numbers?|accuracy|score|runs?|model)\b|"
        r"\bmy (?:re-?)?implementation\b|\bour (?:results?|reproduction)\b|\bmy (?:[\w-]+ ){1,2}(?:is|are|was|were|of|"
        r"=|:)\s*(?:only |about |around |~)?\**\d|我(?:的|们)?(?:结果|复现|跑|得到|测)|"
        r"跑出来|得到的|测出来", _I)),
}
def _metric_num(words: str) -> str:
    return (r"(?:\b(?:" + words + r")\b[^\n\d]{0,25}\d+(?:\.\d+)?|\d+(?:\.\d+)?\s?%?\s?(?:\b(?:" + words
            + r")\b))")


_METRIC_NUM = re.compile(
    _metric_num(METRIC_WORDS) + r"|指标|精度|准确率|(?:论文|原文|論文|논문)[^\n\d]{0,8}[:：是为は에]\s*\d", _I)
#: The same search as ``_METRIC_NUM`` in two faster parts: the case-insensitive words over lower-cased
#: text (no re.IGNORECASE), and the case-sensitive acronyms over the text as written.
_METRIC_NUM_LOW = re.compile(
    (_metric_num(METRIC_WORDS_CI) + r"|指标|精度|准确率|(?:论文|原文|論文|논문)[^\n\d]{0,8}[:：是为は에]\s*\d").lower())
_METRIC_NUM_CS = re.compile(_metric_num(METRIC_WORDS_CS))
_PAIR = re.compile(
    r"\d+(?:\.\d+)?\s?%?(?:\s?[a-z]{1,4}\b)?\**\)?\s*[(,.;]?\s*(?:the )?(?:paper|reported|readme|model card|"
    r"expected|official)"
    r"(?:'s)?\s*(?:says|reports|lists|is|value|number)?\s*[:=]?\s*\**\d|"
    r"\d+(?:\.\d+)?\s?%?\s*(?:vs\.?|versus|v\.s\.|compared (?:to|with)|instead of|rather than|but the paper|"
    r"while the paper|whereas|对比|而论文|但论文|，论文)\s*(?:the )?(?:paper'?s? |reported |"
    r"\(?(?:in )?(?:the )?paper\)?:? )?\d+(?:\.\d+)?",
    _I,
)
#: ``_PAIR`` for lower-cased text without re.IGNORECASE (same answer, faster).
_PAIR_LOW = re.compile(_PAIR.pattern.lower(), _PAIR.flags & ~re.I)

_NEG: dict[str, tuple[float, re.Pattern[str]]] = {
    "bug_report": (2.5, re.compile(
        r"\bsteps to reproduce\b|\bto reproduce (?:the |this )?(?:bug|error|issue|behaviou?r|problem|crash)\b|"
        r"\breproduc(?:e|ible) (?:the |this )?(?:bug|error|crash|exception|segfault)\b|\bminimal "
        r"(?:reproducible|working|code)? ?example\b|\bexpected behaviou?r\b|\bbug report\b|\bdescribe the bug\b|"
        r"^\s*\[?bug\]?[:\]]|^\s*(?:\*\*)?to reproduce(?:\*\*)?\s*:?\s*$|^\s*to reproduce\s*:", _I | re.M)),
    "no_own_run": (2.5, re.compile(
        r"\bhaven'?t (?:run|trained|tried) (?:anything|it|the code|yet)\b|\bnot trying to reproduce\b|"
        r"\bbefore i (?:start|run|begin)\b|\bwithout (?:running|training) (?:anything|it)\b|"
        r"\bjust (?:noticed|curious|asking|wondering)\b|\b(?:want|like|need) to cite\b|\bfor (?:the |my )?"
        r"(?:related[- ]work|thesis|survey|citation)\b|"
        r"\b(?:typo|mistake|inconsisten\w*) in (?:the )?(?:readme|paper|table)\b|\bplan(?:ning)? to "
        r"(?:reproduce|replicate)\b|想先|打算复现|准备复现", _I)),
    "error_trace": (1.0, re.compile(
        r"Traceback \(most recent call last\)|\b\w+(?:Error|Exception): |\bsegmentation fault\b|"
        r"\bcore dumped\b|\bthrows? an? (?:error|exception)\b|\bcrash(?:es|ed)?\b|报错|出错", _I)),
    "install": (2.0, re.compile(
        r"\b(?:install(?:ation|ing)?|pip install|conda install|setup\.py|compil(?:e|ing|ation)|build(?:ing)? "
        r"(?:fails?|failed|error))\b|\bnvcc\b|\bdriver\b|\bcuda (?:toolkit|runtime|error|install)\b|"
        r"\bNo module named\b|\bImportError\b|\bModuleNotFoundError\b|\bundefined symbol\b|\bDLL\b|"
        r"\bdocker ?(?:file|image)\b|\bwindows\b|安装|编译|环境配置", _I)),
    "oom": (2.5, re.compile(r"\bout of memory\b|\bOOM\b|\bCUDA OOM\b|显存不足|爆显存|内存不足", _I)),
    "feature": (2.0, re.compile(
        r"\bfeature request\b|\b(?:please|could you|can you|would you|will you) (?:add|support|provide|release|"
        r"implement|share|upload)\b|\bsupport for\b|\bis there (?:any )?plan\b|\bany plans?\b|"
        r"\bwould be (?:nice|great|helpful)\b|\bwhen will\b|\brelease (?:the )?(?:code|training)\b|"
        r"\benhancement\b|希望|能否提供|什么时候", _I)),
    "weights_licence": (2.0, re.compile(
        r"\bdownload(?:ing)? (?:link|the (?:pretrained |pre-trained )?(?:weights|model|checkpoint))\b|"
        r"\b(?:pretrained|pre-trained) (?:weights|model|checkpoint)s? (?:link|download|available|missing)\b|"
        r"\b(?:link|url) (?:is )?(?:broken|dead|expired|not working)\b|\bgoogle drive\b|\bbaidu\b|"
        r"\blicen[cs]e\b|\bcommercial use\b|下载|链接失效|权重链接|许可", _I)),
    "success_report": (2.5, re.compile(
        r"\bnot an? (?:issue|problem|bug)\b|\bjust (?:sharing|fyi|wanted to share|to share)\b|\bsharing (?:my |the |some )?"
        r"(?:training )?(?:logs?|results?|numbers?|checkpoints?)\b|\bin case (?:anyone|someone|others?) needs?\b|"
        r"仅供参考|分享一下", _I)),
    "theory_question": (1.5, re.compile(
        r"\b(?:which|what) (?:equation|formula|eq\.?)\b|\b(?:eq(?:uation)?\.?|formula) ?\(?\d+\)?\b|"
        r"\bderivation\b|\bproof\b|\bin section \d|\bconfused about (?:the )?(?:equation|formula|loss)\b|"
        r"公式|推导", _I)),
}
_NEG_LABELS = {
    "bug": "bug_report", "type: bug": "bug_report", "enhancement": "feature", "feature": "feature",
    "feature request": "feature", "installation": "install", "build": "install", "documentation": "feature",
}
_POS_LABELS = re.compile(r"reproduc|replicat|performance|results?\b|accuracy", _I)


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (``a|b(c|d)|[|]`` → ``a``, ``b(c|d)``, ``[|]``)."""
    parts: list[str] = []
    depth = start = i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a character class: ``|`` and ``(`` inside do not count; ``]`` first is literal
            i += 1
            if i < len(pattern) and pattern[i] == "^":
                i += 1
            if i < len(pattern) and pattern[i] == "]":
                i += 1
            while i < len(pattern) and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


class _AnyOf:
    """A cue regex searched as its top-level alternatives one by one (same answer as the whole pattern:
    Python's engine tries every alternative at every position, so separate scans are markedly faster)."""

    def __init__(self, rx: re.Pattern[str]) -> None:
        self.pattern = rx.pattern
        self.parts = tuple(re.compile(p, rx.flags) for p in _alternatives(rx.pattern))

    def search(self, text: str) -> bool:
        return any(r.search(text) is not None for r in self.parts)


def _lowered(table: dict[str, tuple[float, re.Pattern[str]]]) -> dict[str, tuple[float, _AnyOf]]:
    """Case-folded copies: searching lower-cased text without re.IGNORECASE is markedly faster."""
    return {k: (w, _AnyOf(re.compile(rx.pattern.lower(), rx.flags & ~re.I))) for k, (w, rx) in table.items()}


_POS_L = _lowered(_POS)
_NEG_L = _lowered(_NEG)


@dataclass(frozen=True)
class Signals:
    """Cue counts of one thread (for the decision and for reporting)."""

    names: tuple[str, ...]
    pos: float
    neg: float


#: Raw characters read before code, logs and dumps are removed (the windows above apply to the prose left).
RAW_FACTOR = 4


def _window(thread: Thread) -> tuple[str, str, str]:
    """(title + body prose, title + opening of body, comment prose) limited to the reading windows, which
    apply to prose: a pasted environment dump or log before the question does not push it out."""
    prose = strip_code(thread.body[:BODY_CHARS * RAW_FACTOR]).strip()
    body = prose[:BODY_CHARS]
    head = thread.title + "\n" + prose[:OPENING_CHARS]
    comments = []
    for c in thread.all_comments()[:MAX_COMMENTS]:
        if not is_bot_comment(c):
            comments.append(strip_code(c.body[:COMMENT_CHARS * RAW_FACTOR])[:COMMENT_CHARS])
    return thread.title + "\n" + body, head, "\n".join(comments)


#: Literal substrings of lower-cased text, one of which every match of a cue pattern contains: a pattern
#: whose keys are all absent cannot match, so its (much slower) regex is not run. tests/extract check that
#: the prefilter never changes a decision.
KEYS: dict[str, tuple[str, ...]] = {
    "repro_intent": ("reproduc", "replicat", "reach", "achieve", "match", "obtain", "get", "attain", "复现", "重现",
                     "达不到", "跑不出", "再現", "재현"),
    "paper_ref": ("paper", "publication", "article", "readme", "model", "table", "tab", "repo", "reported",
                  "expected", "official", "claimed", "论文", "文章中", "原文", "报告的", "表", "論文", "논문"),
    "gap": ("than", "match", "gap", "drop", "discrepanc", "difference", "degradation", "only", "just", "much", "far",
            "below", "vs", "different from", "the same", "对不上", "不一致", "不符", "差距", "差了", "低于", "差很多", "相差",
            "只有", "只能达到", "低了", "低い", "異な", "違い", "다릅니다", "다르게", "차이", "낮습니다"),
    "mine": ("get", "got", "obtain", "achiev", "reach", "end", "see", "saw", "observ", "measur", "giv", "gave",
             "yield", "my", "our", "我", "跑出来", "得到的", "测出来"),
    "bug_report": ("reproduc", "bug", "minimal", "expected behavio"),
    "no_own_run": ("haven", "not trying", "before i", "without", "just", "typo", "mistake", "inconsisten", "plan",
                   "cite", "related", "thesis", "survey", "citation",
                   "想先", "打算复现", "准备复现"),
    "error_trace": ("traceback", "error: ", "exception: ", "segmentation fault", "core dumped", "throw", "crash",
                    "报错", "出错"),
    "install": ("install", "setup.py", "compil", "build", "nvcc", "driver", "cuda", "no module named",
                "importerror", "modulenotfounderror", "undefined symbol", "dll", "docker", "windows", "安装", "编译",
                "环境配置"),
    "oom": ("out of memory", "oom", "显存不足", "爆显存", "内存不足"),
    "feature": ("feature request", "please", "could you", "can you", "would you", "will you", "support for",
                "is there", "plan", "would be", "when will", "release", "enhancement", "希望", "能否提供", "什么时候"),
    "weights_licence": ("download", "pretrained", "pre-trained", "link", "url", "google drive", "baidu", "licen",
                        "commercial use", "下载", "链接失效", "权重链接", "许可"),
    "success_report": ("not a", "not an", "just", "sharing", "in case", "仅供参考", "分享一下"),
    "theory_question": ("which", "what", "eq", "formula", "derivation", "proof", "in section", "confused about",
                        "公式", "推导"),
}


def _hit(name: str, rx: _AnyOf, text: str, prefilter: bool) -> bool:
    if prefilter and not any(k in text for k in KEYS[name]):
        return False
    return rx.search(text)


def signals(thread: Thread, *, prefilter: bool = True) -> Signals:
    """Cue signals of one thread. ``prefilter`` False runs every regex (same result, slower)."""
    text, head, comments = _window(thread)
    low, head_l, comments_l = text.lower(), head.lower(), comments.lower()
    names: list[str] = []
    pos = 0.0
    for name, (w, rx) in _POS_L.items():
        if _hit(name, rx, low, prefilter):
            names.append(name)
            pos += w
        elif comments_l and _hit(name, rx, comments_l, prefilter):
            names.append(name + ":comments")
            pos += w * 0.4
    if _METRIC_NUM_LOW.search(low) or _METRIC_NUM_CS.search(text):
        names.append("metric_number")
        pos += 1.0
    if _PAIR_LOW.search(low):
        names.append("number_pair")
        pos += 1.5
    # an issue template whose Expected / Actual sections hold two values: a quantified comparison, and its
    # bug-report headings ("Describe the bug", "Expected behavior") are the form, not the content
    tpair = template_pair(text)
    if tpair:
        names.append("template_pair")
        pos += 1.5
    if any(_POS_LABELS.search(lb) for lb in thread.labels):
        names.append("label:positive")
        pos += 1.0
    neg = 0.0
    numeric = tpair or "number_pair" in names or ("metric_number" in names and ("gap" in names or "mine" in names))
    for name, (w, rx) in _NEG_L.items():
        if tpair and name == "bug_report":
            continue
        if _hit(name, rx, head_l, prefilter):
            names.append(name)
            neg += w
        elif _hit(name, rx, low, prefilter):
            names.append(name + ":body")
            neg += w * (0.25 if numeric else 0.5)
    for lb in thread.labels:
        kind = _NEG_LABELS.get(lb.strip().lower())
        if kind and not (tpair and kind == "bug_report"):
            names.append(f"label:{kind}")
            neg += 1.0
    if numeric and neg:
        neg *= 0.6  # a quantified comparison with the paper outweighs incidental setup/bug wording
    if ("no_own_run" in names or "no_own_run:body" in names) and _OWN_RESULT.search(text):
        names.append("own_result")
    if ("feature" in names or "feature:body" in names) and _FAILED.search(text):
        names.append("failed_attempt")
    return Signals(tuple(names), pos, neg)


#: The asker states a result of their own run (read only when a no-own-run cue fired).
_OWN_RESULT = re.compile(
    r"\b(?:i|we)(?:'ve| have)? (?:\w+ ){0,2}(?:get|got|getting|obtain(?:ed)?|achieved?|reach(?:ed)?|trained|ran|re-?ran|"
    r"evaluated|measured)\b[^.\n]{0,40}\d|\bmy (?:results?|runs?|reproduc\w*|numbers?|accuracy|score)\b|我(?:的|们)?(?:结果|跑|得到)",
    _I)
#: The asker says an attempt failed ("I am unable to reproduce"), read only when a request cue fired.
_FAILED = re.compile(
    r"\b(?:can(?:no|')?t|could(?: ?no|n'?)t|unable to|fail(?:ed|s)? to|not able to)\s+(?:\w+\s)?"
    r"(?:reproduce|replicate|reach|achieve|match|get)\b|复现不了|无法复现|达不到|跑不出", _I)
