"""Diagnosis *directions*: the vocabulary shared by eval-set construction, baselines and graders.

A direction is a short phrase naming where a reproduction gap comes from
("learning-rate warmup", "tokenized vs detokenized BLEU"). Text is first
normalised (:func:`normalize`: NFKC, lower case, common Chinese terms mapped to
English, synonyms folded: lr/learning rate, bs/batch size, fp16/AMP/mixed
precision, tokenizer/tokenization …), then matched against :data:`CONCEPTS`,
each of which belongs to one or more of the five error types. Generic concepts
("hyperparameters", "the data") identify a type but are too vague to count as
naming a root cause.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

#: Chinese (and a few full-width) terms → English, applied before synonym folding.
_ZH: tuple[tuple[str, str], ...] = (
    ("学习率预热", " warmup "), ("预热", " warmup "), ("热身", " warmup "),
    ("学习率衰减", " lr decay "), ("学习率调度", " lr schedule "), ("学习率", " learning rate "),
    ("批量大小", " batch size "), ("批大小", " batch size "), ("批次大小", " batch size "), ("批量", " batch "),
    ("梯度累积", " gradient accumulation "), ("显卡数量", " number of gpus "), ("卡数", " number of gpus "),
    ("多卡", " multi gpu "), ("单卡", " single gpu "), ("分布式", " distributed "),
    ("随机种子", " random seed "), ("种子", " seed "), ("随机性", " randomness "), ("不确定性", " nondeterminism "),
    ("非确定性", " nondeterminism "), ("混合精度", " mixed precision "), ("半精度", " half precision "),
    ("精度溢出", " overflow "), ("显卡型号", " gpu type "), ("硬件", " hardware "),
    ("分词器", " tokenizer "), ("分词", " tokenization "), ("词表", " vocabulary "), ("大小写", " lowercase "),
    ("预处理", " preprocessing "), ("后处理", " postprocessing "), ("归一化", " normalization "),
    ("标准化", " normalization "), ("均值", " mean "), ("方差", " std "), ("数据增强", " augmentation "),
    ("数据集版本", " dataset version "), ("数据集", " dataset "), ("数据划分", " data split "),
    ("划分", " split "), ("验证集", " validation set "), ("测试集", " test set "), ("训练集", " training set "),
    ("分辨率", " resolution "), ("裁剪", " crop "), ("数据", " data "),
    ("束搜索", " beam search "), ("集束", " beam "), ("解码", " decoding "), ("长度惩罚", " length penalty "),
    ("评测脚本", " evaluation script "), ("评估脚本", " evaluation script "), ("评测", " evaluation "),
    ("评估", " evaluation "), ("指标实现", " metric implementation "), ("指标", " metric "),
    ("测试时增强", " test time augmentation "), ("检查点", " checkpoint "),
    ("版本", " version "), ("升级", " upgrade "), ("降级", " downgrade "), ("默认值", " default value "),
    ("默认", " default "), ("框架", " framework "), ("超参数", " hyperparameters "), ("超参", " hyperparameters "),
    ("轮数", " epochs "), ("迭代次数", " iterations "), ("权重衰减", " weight decay "), ("优化器", " optimizer "),
    ("阈值", " threshold "), ("距离", " distance "), ("切句", " sentence split "), ("分句", " sentence split "),
    ("换行", " newline "), ("句子级", " sentence level "), ("摘要级", " summary level "),
    ("因为", " because "), ("由于", " because "), ("所以", " so "),
)

#: Synonym folding on normalised text (regex → canonical token). Order matters: longer phrases first.
_SYNONYMS: tuple[tuple[str, str], ...] = (
    (r"learning[ ]?rates?|\blrs?\b|step ?size", " lr "),
    (r"warm ?ups?|warming up", " warmup "),
    (r"mini ?batch(?:es)? sizes?|batch ?sizes?|\bbsz?\b|per gpu batch", " bs "),
    (r"gradient accumulation|grad(?:ient)? accum\w*|accumulation steps|update freq\w*", " gradaccum "),
    (r"mixed[ ]precision|half[ ]precision|automatic mixed precision|\bamp\b|float ?16|\bfp ?16|\bbf ?16|bfloat ?16",
     " fp16 "),
    (r"\bde ?tokeni[sz]\w*", " detokeniz "),
    (r"\btokeni[sz]\w*", " tokeniz "),
    (r"\bpre ?process\w*", " preprocess "),
    (r"\bpost ?process\w*", " postprocess "),
    (r"\bnormali[sz]\w*", " normaliz "),
    (r"non ?determinis\w*|non ?deterministic\w*", " nondetermin "),
    (r"random seeds?|seeds?|seeding|seeded", " seed "),
    (r"weight ?decay|\bwd\b|l2 regulari[sz]\w*", " weightdecay "),
    (r"label ?smoothing", " labelsmooth "),
    (r"test ?time augment\w*|\btta\b", " tta "),
    (r"distributed data parallel|\bddp\b|multi ?gpus?|multiple gpus|data ?parallel\w*|multi ?nodes?", " multigpu "),
    (r"sync(?:hroni[sz]ed)? ?(?:bn|batch ?norm\w*)", " syncbn "),
    (r"batch ?norm\w*|\bbn\b", " batchnorm "),
    (r"\bgpus\b", " gpu "),
    (r"\bepochs\b", " epoch "),
    (r"\btorch\b", " pytorch "),
    (r"\btf\b(?= ?\d)|tensor ?flow", " tensorflow "),
    (r"\bckpts?\b|checkpoints", " checkpoint "),
    (r"exponential moving average|\bema\b", " ema "),
    (r"hyper ?-?param(?:eter)?s?|\bhparams?\b", " hyperparameter "),
    (r"\bevaluat\w*|\beval\b", " eval "),
    (r"\baugment\w*", " augment "),
    (r"\bschedul\w*", " schedul "),
)

_SYN_RE = [(re.compile(p), r) for p, r in _SYNONYMS]
_NON_WORD = re.compile(r"[^0-9a-z\u4e00-\u9fff.]+")
_STRAY_DOT = re.compile(r"(?<![0-9])\.|\.(?![0-9])")
_SPACES = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower-cased, NFKC, Chinese terms translated, punctuation → spaces, synonyms folded to one token."""
    t = unicodedata.normalize("NFKC", text or "").lower()
    for zh, en in _ZH:
        if zh in t:
            t = t.replace(zh, en)
    t = t.replace("_", " ").replace("-", " ")
    t = _NON_WORD.sub(" ", t)
    t = _STRAY_DOT.sub(" ", t)
    t = " " + _SPACES.sub(" ", t).strip() + " "
    for rx, rep in _SYN_RE:
        t = rx.sub(rep, t)
    return _SPACES.sub(" ", t).strip()


@dataclass(frozen=True)
class Concept:
    """A named direction. ``types``: error types it belongs to (first = primary); ``generic``: too vague
    to count as naming a root cause on its own."""

    id: str
    types: tuple[str, ...]
    pattern: str
    phrase: str
    generic: bool = False

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_H, _D, _E, _F, _S = "hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware"

_LIBS = (r"(?:pytorch|tensorflow|cuda|cudnn|jax|keras|transformers|timm|numpy|scipy|torchvision|mmcv|mmdet\w*|"
         r"detectron2|fairseq|huggingface|sklearn|scikit learn|opencv|pillow|pil|apex|nccl|python|library|"
         r"libraries|package|framework|dependenc\w*|torchaudio|spacy|nltk|xformers|flash attention|deepspeed)")

CONCEPTS: tuple[Concept, ...] = (
    # hyperparameter
    Concept("lr", (_H,), r"\blr\b", "learning rate"),
    Concept("warmup", (_H,), r"\bwarmup\b", "learning-rate warmup steps"),
    Concept("batch", (_H,), r"\bbs\b|\bgradaccum\b|effective batch|\bbatch\b", "batch size / effective batch size"),
    Concept("gpu_scaling", (_H, _S), r"(?:number|num|count) of gpu|\bgpu count|\b\d+ ?(?:x ?)?gpu\b|linear scaling"
            r"|scal\w* rule|scal\w* (?:the )?(?:lr|bs) (?:with|by|to)", "scaling batch size / learning rate with GPU count"),
    Concept("schedule", (_H,), r"\bschedul\b|\bdecay\b|cosine|step lr|milestone|anneal\w*|polynomial|lr drop",
            "learning-rate schedule / decay"),
    Concept("epochs", (_H,), r"\bepoch\b|\biterations?\b|\biters?\b|training (?:length|steps|longer|shorter|budget)"
            r"|train\w* (?:longer|shorter)|(?:number of|total|max) (?:training )?(?:steps|updates)",
            "number of training epochs / iterations"),
    Concept("weight_decay", (_H,), r"\bweightdecay\b|regulari[sz]\w*", "weight decay / regularization"),
    Concept("optimizer", (_H,), r"optimi[sz]er|\badamw?\b|\bsgd\b|momentum|\bbetas?\d?\b|\bepsilon\b|nesterov"
            r"|\blamb\b|\blars\b|\brmsprop\b|adafactor", "optimizer and its settings"),
    Concept("dropout", (_H,), r"dropout|drop path|stochastic depth", "dropout / drop-path rate"),
    Concept("label_smoothing", (_H,), r"\blabelsmooth\b", "label smoothing"),
    Concept("grad_clip", (_H,), r"clip\w* (?:the )?grad|grad\w* clip\w*|max (?:grad )?norm", "gradient clipping"),
    Concept("loss_weight", (_H,), r"loss (?:weight|coefficient|term|balanc)\w*|\btemperature\b|\bmargin\b",
            "loss weights / temperature"),
    Concept("hp_generic", (_H,), r"\bhyperparameter\b|\bconfig\w*|\bsettings?\b|training recipe|\brecipe\b",
            "hyperparameters", generic=True),
    # data
    Concept("dataset_version", (_D,), r"dataset version|version of (?:the )?data\w*|data\w* (?:year|release|v\d)"
            r"|(?:voc|coco|imagenet|squad|glue|wmt|cityscapes|kitti)\s?(?:20)?\d\d\b|\b20\d\d (?:split|release|version)"
            r"|(?:new|old)\w* (?:version|release) of (?:the )?data", "dataset version / year"),
    Concept("split", (_D,), r"(?<!compound )(?<!sentence )\bsplits?\b|train ?val|\bdev set|validation set|\bval(?:idation)? split"
            r"|test set|\bval set|held out|trainval|\btest dev\b|\b(?:test|dev) (?:clean|other)\b"
            r"|(?:combin\w*|union|mix\w*|merg\w*) (?:of )?(?:the )?(?:\w+ ){0,3}(?:test|dev|val\w*) (?:sets?|splits?|clean|other)",
            "which data split (train/val/test)"),
    Concept("train_data", (_D,), r"train\w* (?:on|with) (?:a |the )?(?:different|another|other|wrong) (?:data ?set|data|corpus)"
            r"|training ?set mismatch|train\w* ?/ ?test\w* (?:data ?set |data )?mismatch|(?:trained|training) on \w+(?: \w+)? and "
            r"(?:only )?test\w* on|train\w* (?:data ?set|set|data) (?:differ\w*|mismatch)",
            "which dataset the model was trained on"),
    Concept("preprocess", (_D,), r"\bpreprocess\b|resiz\w*|\bcrop\w*|resolution|image size|input size|\baugment\b"
            r"|color jitter|mixup|cutmix|randaug\w*|autoaug\w*|interpolation|max (?:sequence|seq|input) length|down ?sampl\w*|antialias\w*"
            r"|truncat\w*|padding", "input preprocessing / augmentation"),
    Concept("normalization", (_D,), r"\bnormaliz\b|mean (?:and|/)? ?std|\bstd\b|imagenet (?:mean|stat\w*)"
            r"|pixel (?:range|scale|value)|\brgb\b|\bbgr\b|channel order|\b255\b", "input normalization constants"),
    Concept("tokenization", (_D, _E), r"\btokeniz\b|\bbpe\b|sentencepiece|wordpiece|vocab\w*|lower ?cas\w*"
            r"|true ?cas\w*|subword|\bmoses\b", "tokenization"),
    Concept("data_filtering", (_D,), r"filter\w* (?:the )?(?:data|samples|examples|images)|data clean\w*|\bclean\w* data"
            r"|dedup\w*|duplicat\w*|label noise|noisy label\w*|annotation\w*|\bmislabel\w*",
            "data filtering / annotations"),
    Concept("data_size", (_D,), r"\bsubset\b|fewer (?:images|samples|examples)|amount of (?:training )?data|data size"
            r"|full (?:data ?set|training set)|extra (?:training )?data|additional (?:training )?data"
            r"|external data|pre ?train\w* (?:data|corpus)", "amount / source of training data"),
    Concept("data_generic", (_D,), r"\bdata\b|\bdataset\b|\binputs?\b", "the data", generic=True),
    # evaluation protocol
    Concept("beam", (_E,), r"\bbeam\w*|length penalty|lenpen|decoding|\bgreedy\b|num ?beams|max(?:imum)? "
            r"(?:generation|decode|decoding|output) length", "decoding settings (beam size, length penalty)"),
    Concept("postprocess", (_E,), r"\bpostprocess\b|\bdetokeniz\b|compound split\w*|\bnms\b|non max\w* suppression"
            r"|(?:score|confidence|iou|detection) threshold", "post-processing of predictions"),
    Concept("metric_impl", (_E,), r"sacrebleu|multi ?bleu|bleu (?:script|implementation|signature|version|score "
            r"computation)|(?:metric|scoring|score) (?:implementation|version|definition|script|computation|calc\w*)"
            r"|(?:official|eval|evaluation) (?:script|toolkit|tool|code|server|api|protocol|setting)|pycocotools"
            r"|coco ?api|rouge (?:script|package|implementation|score|version)|rouge ?l?sum|\b13a\b|\bintl\b"
            r"|case ?(?:in)?sensitiv\w*|tokeniz\w* bleu|macro|micro|weighted (?:f1|average)|averag\w* (?:method|mode)"
            r"|how (?:the )?(?:metric|score) is (?:computed|calculated)|\bap ?50\b|\bmap@|inception (?:feature|network|"
            r"weights|model)|fid (?:computation|implementation|reference|statistics|stats)|clean ?fid|torchmetrics"
            r"|\bbleu\b.{0,20}\bvs\b|eval\w* (?:on|at) (?:the )?(?:original|full)", "metric implementation / version"),
    Concept("metric_threshold", (_E,), r"(?:distance|matching|f ?score|f1|recall|precision) threshold"
            r"|threshold (?:\w+ ){0,3}(?:f ?score|f1|metric|distance|matching)", "threshold inside the metric definition"),
    Concept("summary_level", (_E,), r"rouge ?l ?sum|summary ?level|sentence ?level rouge|rouge ?l (?:\w+ ){0,3}sentence"
            r"|sentence split\w*|split\w* (?:\w+ ){0,2}(?:into )?sentences|newline", "summary-level vs sentence-level ROUGE-L"),
    Concept("answer_normalization", (_E,), r"(?:answer|text|string|prediction)s?(?: \w+){0,3} normaliz\b"
            r"|\bnormaliz\b (?:\w+ )?(?:answer|text|string|prediction)s?|remov\w* (?:of )?(?:the )?(?:articles|punctuation)"
            r"|(?:articles?|punctuation) (?:removal|stripping|handling)", "answer normalization before matching"),
    Concept("tta", (_E,), r"\btta\b|multi ?crop|ten ?crop|10 ?crop|flip\w* (?:at )?test|multi ?scale (?:test|eval|"
            r"infer)|ensembl\w*|center crop at test|(?:multiple|several|many) crops|crops at test|\btest time\b", "test-time augmentation / ensembling"),
    Concept("checkpoint", (_E, _H), r"\bcheckpoint\b|best (?:epoch|model|ckpt)|last (?:epoch|model)|\bema\b"
            r"|model averag\w*|early stop\w*|select\w* (?:on|by) (?:the )?(?:test|val)",
            "checkpoint selection (best vs last, EMA)"),
    Concept("eval_generic", (_E,), r"\beval\b|\bmetrics?\b|\bprotocol\b|\bscoring\b", "the evaluation", generic=True),
    # framework version
    Concept("framework_version", (_F,), _LIBS + r"\W*(?:v?\d[\d.]*\W*)?(?:versions?|upgrade\w*|downgrade\w*|release"
            r"|updates?|updated)|versions? (?:of|mismatch|change\w*|differ\w*)|\bupgrad\w*|\bdowngrad\w*"
            r"|(?:newer|older|different|later|earlier) (?:versions?|release)|\bdeprecat\w*|backward\w* (?:in)?compat\w*"
            r"|breaking change|(?:pytorch|tensorflow|cuda|cudnn|transformers|timm|numpy|torchvision) v?\d+(?:\.\d+)+",
            "framework / library version"),
    Concept("changed_default", (_F,), r"chang\w* (?:the )?default|default (?:value|behavio\w*|argument|arg|setting|"
            r"changed)|defaults? (?:differ|changed)|align ?corners|api chang\w*|behavio\w* chang\w*",
            "a changed default or API behaviour"),
    Concept("version_generic", (_F,), r"\bversions?\b|\benvironment\b|\binstall\w*", "the software environment",
            generic=True),
    # seed / hardware
    Concept("seed", (_S,), r"\bseed\b|random (?:init\w*|variation|fluctuation)|randomness|run to run|variance (?:across|"
            r"between|over) (?:runs|seeds|trials)|(?:multiple|several|more|different) (?:runs|trials)"
            r"|averag\w* (?:over|across) (?:runs|seeds)|\bstochastic\w*|\bluck\w*", "random seed / run-to-run variance"),
    Concept("nondeterminism", (_S,), r"\bnondetermin\b|determinis\w*|cudnn ?benchmark|atomic\w*", "GPU nondeterminism"),
    Concept("multigpu", (_S, _H), r"\bmultigpu\b|distributed|\bsyncbn\b|single gpu|world size|all ?reduce"
            r"|\bnccl\b|one gpu", "multi-GPU / distributed training differences"),
    Concept("precision", (_S,), r"\bfp16\b|\bfp32\b|\btf32\b|float32|\bprecision\b|overflow|underflow|loss scal\w*"
            r"|numerical\w*|\bnan\b", "mixed precision (FP16/AMP) numerics"),
    Concept("gpu_type", (_S,), r"\b(?:v100|a100|h100|p100|t4|k80|rtx|titan|3090|4090|2080|1080|tpus?|ampere|volta)\b"
            r"|gpu (?:type|model|architecture)|different (?:gpu|hardware|machine)|\bhardware\b",
            "GPU type / hardware"),
    Concept("hw_generic", (_S,), r"\bgpu\b|\bcpu\b|\bmachine\b", "the hardware", generic=True),
)

CONCEPT_BY_ID: dict[str, Concept] = {c.id: c for c in CONCEPTS}


def concepts_in(text: str, *, normalized: bool = False) -> list[Concept]:
    """Concepts whose pattern occurs in ``text``, in :data:`CONCEPTS` order."""
    t = text if normalized else normalize(text)
    padded = f" {t} "
    return [c for c in CONCEPTS if c.regex.search(padded)]


def specific(concepts: list[Concept]) -> list[Concept]:
    return [c for c in concepts if not c.generic]


def type_votes(concepts: list[Concept]) -> dict[str, float]:
    """Error-type evidence of a set of concepts: primary type 1.0, secondary 0.5; generic concepts count 0.5."""
    votes: dict[str, float] = {}
    for c in concepts:
        for i, t in enumerate(c.types):
            w = (1.0 if i == 0 else 0.5) * (0.5 if c.generic else 1.0)
            votes[t] = votes.get(t, 0.0) + w
    return votes


def infer_type(text: str) -> str | None:
    """The most likely error type named by ``text`` (None when no concept occurs)."""
    votes = type_votes(concepts_in(text))
    if not votes:
        return None
    return max(votes.items(), key=lambda kv: (kv[1], -_TYPE_ORDER.index(kv[0])))[0]


_TYPE_ORDER = [_H, _D, _E, _F, _S, "other"]

# --------------------------------------------------------------------------- content tokens

STOPWORDS = frozenset(
    """a an the of to in on for with and or but not no is are was were be been being it its this that these those
    as at by from into than then so such very can could may might should would will shall do does did done have has
    had having i you we they he she my your our their me us them there here what which who whom why how when where
    also only just more most less much many some any all each both other another same different one two use used
    using uses model models training train trained result results paper papers reported report reports issue issues
    problem problems because since due cause caused causes reason likely possibly probably maybe perhaps check
    checking make sure try tried value values number numbers get got obtain obtained performance score scores lower
    higher low high gap difference differences mismatch vs versus setting set via e.g i.e etc default defaults correct
    wrong right way ways thing things need needs needed see seems seem look looks like e g vs. direction directions
    diagnosis root cause fix fixed code repo repository github original author authors official implementation
    accuracy bleu rouge f1 map top 1 5 acc metric metrics reproduce reproduced reproduction reproducing run runs
    running while whereas instead which whose their there about after before under over between within without
    still again against though constants constant images sentences tokens predictions output
    outputs scores correctly properly actually although however user users person someone people setup""".split()
)

#: Canonical tokens produced by synonym folding (not informative as key terms on their own).
_CANONICAL = frozenset(r.strip() for _p, r in _SYNONYMS)


def _stem(tok: str) -> str:
    if len(tok) <= 4 or not tok.isalpha():
        return tok
    for suf in ("ization", "isation", "ations", "ation", "ings", "ing", "ers", "ies", "ed", "es", "er", "s"):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3:
            return tok[: -len(suf)]
    return tok


def content_tokens(text: str, *, normalized: bool = False) -> set[str]:
    """Stemmed, synonym-folded tokens of ``text`` without stopwords (Chinese runs kept whole)."""
    t = text if normalized else normalize(text)
    return {_stem(w) for w in t.split() if w not in STOPWORDS and len(w) > 1}


#: Words that are common in any ML text, so they are weak evidence on their own.
_COMMON = frozenset(_stem(w) for w in """data dataset training test eval lr bs gpu version pytorch batch image images
    text input inputs output outputs loss layer layers network weights weight step steps size learning rate""".split())


_KEY_STOP = frozenset("""table figure fig section appendix eq equation readme paper step steps the this that
    with our we you yes no issue true false none null nan inf self default defaults please thanks note
    before after when then also however since because instead while both either which what where there
    here these those only just even still""".split())


def key_terms(text: str, limit: int = 6) -> list[str]:
    """Distinctive terms of a root cause: identifiers (digits, underscores, dots, hyphens: ``align_corners``,
    ``multi-bleu.perl``, ``13a``) and names written with capitals mid-sentence (``Pillow``, ``CTC``).
    Plain lower-case words are left to the concept phrases: they are too often incidental."""
    raw = unicodedata.normalize("NFKC", text or "")
    out: list[str] = []

    def add(tok: str) -> None:
        low = tok.lower().strip(".-_")
        if (len(low) >= 2 and low not in out and low not in STOPWORDS and low not in _KEY_STOP
                and not re.fullmatch(r"top\d|f1|v\d|\d+(?:\.\d+)?[kmx%]?|\d+(?:st|nd|rd|th)", low)):
            out.append(low)

    for tok in re.findall(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)+|[A-Za-z]+\d[\w.]*|\d+[A-Za-z]+\w*", raw):
        add(tok)
    for m in re.finditer(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}\w*|[A-Z][a-z]{3,})\b", raw):
        if raw[max(0, m.start() - 2):m.start()].strip() not in (".", "!", "?", ":"):
            add(m.group(1))
    return out[:limit]


def acceptable_directions(root_cause: str, error_type: str, *, extra: list[str] | None = None) -> list[str]:
    """Phrases a correct answer may name: the concepts the root cause mentions (their canonical phrase), the
    root cause's distinctive key terms, and ``extra`` (e.g. the thread's confirmed hypotheses).

    Generic concepts are never listed, so vague answers ("check the hyperparameters") do not match.
    The type's own generic phrase is added only when the root cause names no specific concept.
    """
    out: list[str] = []

    def add(p: str) -> None:
        p = " ".join(p.split())
        if p and p.lower() not in (x.lower() for x in out):
            out.append(p)

    found = specific(concepts_in(root_cause))
    in_type = [c for c in found if error_type in c.types]
    for c in in_type + [c for c in found if c not in in_type]:
        add(c.phrase)
    terms = key_terms(root_cause)
    for t in terms:
        add(t)
    for e in extra or []:
        add(e[:200])
    if not found and not terms:
        add(root_cause[:200])
    return out
