"""Cue lexicons of the rules extractor (English and Chinese), compiled once.

``CAUSE_FAMILIES`` name the five root-cause types of SPEC.md. Each type has a
*strong* pattern (terms that name the cause: "learning rate", "dataset
version", "beam size", "torch 2.1", "random seed") and a *weak* one (terms that
only lean that way: "steps", "data", "metric", "version", "GPUs"). All cue
patterns are written in lower case and matched against lower-cased text
(markedly faster than ``re.IGNORECASE``). ``CONFIRM`` / ``ACK`` / ``REFUTE``
are how an asker answers a suggestion; ``NEGATED_LEFT`` / ``NEGATED_RIGHT``
mark a cue that is ruled out ("not the lr", "warmup didn't help");
``HYPOTHESIS`` marks a suggestion or diagnostic question; ``CAUSAL`` an
explanation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Types in order of their prior share in SPEC.md (ties go to the earlier one).
TYPE_ORDER = ("hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware")

_LIBS = (r"(?:pytorch|torch|tensorflow|tf|cuda|cudnn|jax|jaxlib|flax|transformers|numpy|scipy|timm|mmcv(?:-full)?|"
         r"mmdet(?:ection)?|mmseg(?:mentation)?|detectron2|torchvision|torchaudio|torchtext|keras|sklearn|"
         r"scikit-learn|pandas|librosa|gym(?:nasium)?|mujoco(?:-py)?|fairseq|sacrebleu|pillow|pil|opencv(?:-python)?|"
         r"cv2|datasets|tokenizers|accelerate|deepspeed|apex|python|nccl|lightning|pytorch-lightning|spacy|nltk|"
         r"dgl|torch_geometric|pyg|xformers|triton|onnx|tensorrt|paddle(?:paddle)?|mindspore)")


@dataclass(frozen=True)
class CueFamily:
    """One root-cause type's cues: ``strong`` matches count 2, ``weak`` matches 1."""

    name: str
    strong: re.Pattern[str]
    weak: re.Pattern[str]


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


CAUSE_FAMILIES: tuple[CueFamily, ...] = (
    CueFamily(
        "hyperparameter",
        _c(r"learning[ _-]?rates?|\blrs?\b|warm-?up|batch[ _-]?sizes?|\bbatch of \d|(?:total|effective|global|"
           r"per[- ]gpu|per[- ]device|mini-?) ?batch|samples_per_gpu|imgs_per_gpu|per_device_train_batch_size|"
           r"grad(?:ient)?[ _-]?accum\w*|accum(?:ulation)?[ _-]steps|accum_grad|weight[ _-]?decay|optimi[sz]ers?|"
           r"momentum|\badam\w*|\bsgd\b|\blamb\b|\blars\b|(?:lr|learning rate) (?:schedul\w*|decay|policy)|"
           r"(?:cosine|linear|step|poly(?:nomial)?|exponential) (?:lr |learning rate )?(?:schedul\w*|decay|"
           r"annealing)|\bschedul(?:e|er)\b|\bepochs?\b|training (?:steps|iterations|length|schedule|budget)|"
           r"train(?:ed|ing)? (?:longer|for longer|shorter)|not (?:fully |yet )?(?:converged|trained long enough)|"
           r"under-?trained|how long (?:did you|have you) train\w*|训练(?:了)?多久|训练(?:还)?不充分|没有?收敛|\d+\s?轮|\bmax[_ ](?:steps|iters?|epochs)|\bnum[_ ](?:steps|epochs|"
           r"iters?|train_epochs)|number of (?:steps|epochs|iterations|updates|training steps)|hyper-?param\w*|"
           r"label[ _-]smoothing|dropout|temperature|\bema[ _-](?:decay|rate|momentum)|gradient (?:clipping|norm)|"
           r"clip[ _-]?(?:grad|norm)\w*|linear(?:ly)? scal\w*|scal(?:e|ed|ing) (?:the )?(?:lr|learning rate)|"
           r"loss (?:weight|coefficient)s?|regulari[sz]ation (?:weight|strength|coefficient)|\btrain(?:ing)? config|"
           r"学习率|批大小|批量大小|预热|权重衰减|优化器|训练轮数|轮数|迭代次数|超参|梯度累积|训练步数|学习率调度"),
        _c(r"\biterations?\b|\biters?\b|\bsteps\b|\bupdates\b|default (?:values?|args|arguments|settings?|config)|"
           r"--[a-z][a-z0-9_-]+[ =]\d|\b[a-z]+_(?:alpha|beta|lambda|weight|coef|ratio|temp|scale)\b|\balpha\b|"
           r"\blambda\b|\bbeta\b|\bbs\b|\bconfigs?\b|\bgpus\b|cards|\bdefaults?\b(?! (?:\w+ )?(?:changed|behaviou?r))|"
           r"默认|步|批"),
    ),
    CueFamily(
        "data",
        _c(r"(?:dataset|data|annotation|label) (?:versions?|variants?|release)|version of the (?:data|dataset|"
           r"annotations?)|\bsplits?\b|train/(?:val|dev|test)|train ?\+ ?(?:val|dev)|trainval|pre-?process\w*|"
           r"normali[sz](?:e|ed|ing|ation)? (?:the )?(?:inputs?|images?|pixels?|features?|audio|data)|(?:input|image|"
           r"pixel|feature|data) normali[sz]\w*|mean(?: and |/| & )std|normali[sz]ation (?:constants|stats|"
           r"statistics)|data[ -]augment\w*|augmentations?|tokeni[sz](?:e|ed|ing|ation|er) (?:of )?(?:the )?"
           r"(?:inputs?|data|text|corpus|sentences|source)|vocab\w*|\bbpe\b|sentencepiece|download(?:ed|ing)? "
           r"(?:the )?(?:data|dataset|version|files)|annotations?|label (?:files?|noise|mapping)|(?:training|train) "
           r"(?:data|set|images|split|corpus|samples)|\bsubsets?\b|filter(?:ed|ing) (?:the )?(?:data|dataset|samples|"
           r"examples|images)|duplicat\w+ (?:images|samples|examples|data|entries|rows)|(?:wrong|different|old|new|"
           r"newer|older|other|original|full|clean) (?:version of the )?(?:data|dataset|split|annotations|corpus)\b|"
           r"synthetic (?:data|images|only)|real data|data ?loader|(?:input|image|crop) (?:size|resolution)|"
           r"\bresiz\w*|\bcrop(?:s|ping|ped)?\b|sampl(?:ing|e) rate|speed perturb\w*|\bcmvn\b|feature extraction|"
           r"text normali[sz]\w*|lower-?cas\w*|\bcorpus\b|(?:combined|merged|mixed|union of)(?: the)? (?:\w+ ){0,3}"
           r"(?:sets|splits|subsets)\b|\b(?:test|dev)[-_ ](?:clean|other)\b|\bdatasets?\b|\bv\d+(?:\.\d+)? (?:of )?(?:the )?(?:data|"
           r"dataset|split|annotations)|数据集|数据版本|预处理|归一化|数据增强|划分|标注|分词|词表|训练集|验证集|"
           r"采样率|清洗"),
        _c(r"\bdata\b|\bimages\b|\bsamples\b|\bexamples\b|\bval(?:idation)? set\b|\btest set\b|\blabels?\b|"
           r"\bfeatures\b|\bv\d+(?:\.\d+)?\b|\brows\b|\bclasses\b|数据|样本"),
    ),
    CueFamily(
        "evaluation_protocol",
        _c(r"eval(?:uation)?[ _-]?(?:scripts?|code|protocols?|settings?|mode|server|toolkit|tools?|metrics?|"
           r"pipeline|procedure|config|loop|function)|test(?:ing)? (?:script|protocol|setting|mode)|"
           r"metric (?:implementation|version|definition|computation|code)|(?:compute[sd]?|computing|calculat\w+|"
           r"measur\w+) (?:the )?(?:metrics?|scores?|bleu|accuracy|map|f1|em|wer|cer|fid|miou|ap|ppl|perplexity)|"
           r"official (?:eval\w*|scorer|scripts?|metrics?|server|toolkit|implementation)|beam[ _-]?(?:size|search|"
           r"width)|\bbeams?\b|greedy (?:decod\w*|search)|length[ _-]penalty|sacre ?bleu|multi-bleu|tokeni[sz]ed "
           r"bleu|detokeni[sz]\w*|-tok\b|\b13a\b|case-?(?:in)?sensitive|test[- ]time augment\w*|\btta\b|aug[-_ ]test|"
           r"flip[-_ ]?test\w*|(?:multi|single)[- ]scale (?:test\w*|inference|eval\w*)|\bms ?\+ ?flip\b|center crop|"
           r"ten[- ]crop|single[- ]crop|(?:macro|micro|weighted)[ -]?(?:averag\w*|f1|avg)|average=|\bthreshold\w*|"
           r"post-?process\w*|\bnms\b|ignore[ _]index|model\.eval|eval(?:uation)? mode|(?:answer|text|prediction) "
           r"normali[sz]\w*|normali[sz](?:e|ed|ation) (?:the )?(?:answers?|predictions?|outputs?)|soft (?:score|"
           r"accuracy)|filtered (?:setting|metric|ranking|results?)|raw setting|pycocotools|coco ?api|\bscorer\b|"
           r"rouge_score|pytorch-fid|clean-?fid|\bpit\b|permutation[- ]invariant|reference (?:statistics|stats)|"
           r"gt (?:boxes|bbox)|ground[- ]truth (?:boxes|bbox\w*)|use_gt_bbox|(?:val|validation|dev) (?:vs\.?|instead "
           r"of|not) (?:the )?test|test-dev|test-std|evaluated? (?:on|against) (?:the )?(?:val|validation|test|dev)|"
           r"checkpoint (?:averag\w*|selection)|(?:best|last|final) checkpoint|\bensembl\w*|\btop-?k\b accuracy|"
           r"reported (?:on|for) (?:the )?(?:test|val\w*|dev)|(?:test|evaluation|eval|leaderboard) server|codalab|"
           r"(?:iou|confidence|score|detection) threshold|maxdets|k-fold|cross-validation|per-(?:class|image|sample|"
           r"instance|query)|(?:class|sample|image|instance|token|sentence|corpus)[- ](?:wise|level) (?:averag\w*|"
           r"mean|metric|score|bleu|accuracy)|(?:mean|averag\w*) over (?:the )?(?:classes|images|samples|queries|"
           r"episodes|sentences|tokens)|(?:normali[sz]ed|standardi[sz]ed|z-scored|original|real-unit|raw) (?:scale|"
           r"units?|values?|scores?|returns?)|inverse[_ ]transform|denormali[sz]\w*|(?:nucleus|top-p|greedy|beam) "
           r"(?:decoding|sampling)|number of (?:samples|generations) per|\bpass@k\b|the way (?:we|you|they) "
           r"(?:compute|measure|evaluate|report)|how (?:we|you|they|the paper) (?:compute|measure|evaluate|report)|"
           r"(?:computed|calculated|measured|evaluated|scored|averaged) (?:on|with|using|over|against|at|by|per)\b|"
           r"\b(?:is|are|was|were) (?:computed|calculated|measured|averaged)\b|(?:ap|map|iou|ar)[@_ ]?(?:0?\.5|50|75)|"
           r"iou ?= ?0?\.\d|(?:voc|coco)[- ]?(?:07|2007|12|2012)?[- ](?:style|metric)|11-point|interpolat\w+|"
           r"(?:un)?cased (?:bleu|metric|evaluation|scores?)|(?:word|character|char|token|sentence|frame|video|"
           r"segment|pixel|object|image)[- ]level (?:metric|accuracy|f1|evaluation|score|bleu|map|ap)|"
           r"(?:handl\w*|tokeni[sz]\w*|normali[sz]\w*|strip\w*|remov\w*) (?:of )?(?:the )?(?:\w+ )?punctuations?|"
           r"评估脚本|评测脚本|评测|评估方式|测试脚本|测试方式|后处理|阈值|指标计算|评价指标|官方评测|计算方式"),
        _c(r"\bevaluat\w*|\bmetrics?\b|\bscoring\b|\bdecod\w*|\bflip\b|multi-scale|\btest set\b|\baliases\b|"
           r"\bprotocol\b|\bscore\b|评估|测试"),
    ),
    CueFamily(
        "framework_version",
        _c(r"\b" + _LIBS + r"[ =v@-]{0,3}(?:version\s*)?\d+\.\d+|(?:library|package|framework|dependency|"
           r"dependencies|software) versions?|\bversions? (?:of|mismatch|difference|change)|(?:newer|older|later|"
           r"earlier|latest|recent|new|old|different) (?:version|release)s?|(?:upgrad|downgrad)(?:e|ed|es|ing)|"
           r"updat(?:e|ed|ing) (?:to|from) (?:version |v)?\d|(?:updat|upgrad|downgrad|switch)(?:e|ed|es|ing)? "
           r"(?:the |my |our )?" + _LIBS + r"\b|\b" + _LIBS + r" (?:update|upgrade|downgrade|release)|changed (?:the |its |their )?defaults?|default (?:\w+ )?"
           r"(?:has |was )?changed|defaults? (?:changed|differ\w*|is different)|changed from \w+ to \w+|behaviou?r "
           r"(?:changed|change|differs)|deprecat\w*|breaking change|api change|release notes|changelog|==\s?\d|"
           r">=\s?\d|\bpin(?:ned|ning)? (?:the )?(?:version|to)|\bin (?:version |v)\d+\.\d+|since (?:version |v)?"
           r"\d+\.\d+|\bbindings\b|版本|升级|降级|默认值(?:变|改)了"),
        _c(r"\bversions?\b|pip install|\bconda\b|\b\d+\.\d+\.\d+\b|\b" + _LIBS + r"\b"),
    ),
    CueFamily(
        "seed_hardware",
        _c(r"\bseeds?\b|random (?:seed|init\w*|variation|state)|randomness|non-?determinis\w*|\bdeterminis\w*|"
           r"\bvariance\b|std (?:across|over|between|of) (?:\d+ )?(?:runs|seeds)|across (?:runs|seeds)|run-to-run|"
           r"\bfp16\b|\bfp32\b|\bbf16\b|\bamp\b|mixed[ -]precision|half[ -]precision|\btf32\b|numerical "
           r"(?:precision|error|noise)|precision (?:issue|difference|loss)|\boverflow\w*|\bunderflow\w*|"
           r"cudnn\.(?:benchmark|deterministic)|use_deterministic_algorithms|sync[ _-]?bn|syncbatchnorm|"
           r"batch ?norm statistics|bn statistics|different (?:gpus?|hardware|machines?|cards?|devices?)|gpu "
           r"(?:type|model|architecture)|\bhardware\b|\batomics?\b|number of gpus|\bfluctuat\w*|\bunstable\b|"
           r"best of \d|mean (?:vs\.?|versus|instead of|rather than) (?:the )?best|graphics cards?|"
           r"(?:a800|h800|a100|v100|h100|rtx ?\d{4}|3090|4090) (?:and|vs\.?|versus) (?:the )?(?:a800|h800|a100|v100|h100|"
           r"rtx ?\d{4}|3090|4090)|不同(?:的)?(?:机器|显卡|设备|卡)|(?:averag\w+|mean) (?:over|of|"
           r"across) (?:\d+ )?(?:seeds|runs)|随机种子|种子|随机性|混合精度|半精度|单精度|波动|方差|显卡型号|硬件|"
           r"不确定"),
        _c(r"\bgpus?\b|\bnoise\b|\bnoisy\b|\bruns\b|\bstd\b|±|\bv100\b|\ba100\b|\bh100\b|显卡"),
    ),
)
CAUSE_CUES: dict[str, CueFamily] = {f.name: f for f in CAUSE_FAMILIES}

#: A clause about test time: its data-processing cues (resize, crop, normalisation, split) describe the
#: evaluation protocol, not the training data.
TEST_TIME = re.compile(
    r"\bat test|test[- ]time|during (?:test|eval|inference|validation)|(?:for|at|in) (?:eval\w*|testing|inference)\b|"
    r"when (?:evaluating|testing)|eval(?:uation)? (?:transforms?|pipeline)|test (?:transforms?|pipeline)|"
    r"测试时|评估时|推理时")
#: A clause that says a library changed: the version change explains whatever it changed (resize, init, ...).
LIBRARY_CHANGE = re.compile(
    r"changed (?:the |its |their )?defaults?|default (?:\w+ )?(?:has |was )?changed|changed from \w+ to|"
    r"(?:upgrad|downgrad)(?:e|ed|ing)|\bin (?:version |v)?\d+\.\d+|since (?:version |v)?\d+\.\d+|"
    r"behaviou?r (?:changed|change|differs)|deprecat|默认值(?:变|改)了|版本(?:变|不同|升级|更新)")

#: A cue ruled out by the words just before it ("not the lr", "I already use warmup").
NEGATED_LEFT = re.compile(
    r"(?:\bnot|n't|\bnever|\bno longer|\balready (?:use[ds]?|using|set|tried|checked|have|had)|"
    r"\brule[sd]? out|\bexclude[sd]?)\s+(?:(?:the|a|an|my|our|due to|because of|related to|caused by|about|"
    r"from|with|using|changing|the same)\s+){0,3}$|不是|并非|排除了?")
#: "the lr was not scaled", "warmup wasn't enabled": the cue describes what went wrong, it is not ruled out.
_NOT_DONE = (r"(?!\s+(?:\w+\s)?(?:scaled|set|adjusted|changed|enabled|disabled|applied|used|tuned|updated|aligned|"
             r"specified|reduced|increased|decreased|divided|multiplied|normali[sz]ed|loaded|passed|synced)\b)")
#: A cue ruled out by the words just after it ("warmup didn't help", "seed is not the issue").
NEGATED_RIGHT = re.compile(
    r"^[^.;,]{0,24}?(?:\b(?:is|was|are|were|'s)\s+(?:(?:not|n't)" + _NOT_DONE + r"|unlikely)|"
    r"\b(?:isn't|wasn't|aren't)" + _NOT_DONE + r"|"
    r"\b(?:doesn't|does not|didn't|did not|don't|won't)\s+(?:matter|help|change|explain|affect|make)|"
    r"\bmade no\b|\bhad no\b|\bhas no\b|\bno (?:effect|difference|change)|没用|没有影响|没区别|无关)")

CONFIRM = re.compile(
    r"\b(?:that|this|it|which) (?:\w+ )?(?:fixed|solved|resolved|did the trick|worked|works|helped)|\bworks now\b|"
    r"\b(?:problem|issue) (?:is )?(?:solved|resolved|fixed)|\b(?:solved|fixed) (?:it|the (?:issue|problem))|"
    r"\bnow (?:i|we) (?:get|got|can|could|obtain|reach|match)|\b(?:i|we) (?:can|could) (?:now )?reproduce "
    r"(?:it|the|your)|\byou(?:'re| are) (?:right|correct)|\bthat was (?:it|the (?:issue|problem|reason|cause))|"
    r"\bafter (?:setting|changing|using|fixing|switching|adding|removing|increasing|decreasing|"
    r"upgrading|downgrading)\b.{0,80}\b(?:get|got|reach\w*|match\w*|obtain\w*)\b|"
    r"\bthanks?,? (?:it|that|this) (?:works|worked|helped|solved)|\bmatch(?:es)? (?:the )?(?:paper|reported)"
    r"(?: \w+)? now\b|\b(?:got|get) (?:the )?(?:same|expected|reported) (?:results?|numbers?|accuracy|score)|"
    r"\bproblem was\b|\bexplains?\b|\bmakes sense\b|\bi (?:missed|misread|overlooked)\b|\bmy (?:bad|mistake)\b|"
    r"(?<!not )(?<!n't )\bsolved\s*(?:!|$)|"
    r"解决了|可以了|成功复现|对上了|好了|明白了")
#: Weaker agreement ("thanks", "closing", "I see"): counts as confirmation when nothing refutes it.
ACK = re.compile(
    r"\bthanks?\b|\bthank you\b|\bthx\b|\bclosing\b|\bconfirmed\b|\bi see\b|\bgot it\b|\bperfect\b|\bgreat\b|"
    r"\bmatch(?:es)?\b|\bwithin (?:the )?noise\b|\bgood enough\b|\bawesome\b|\bworks\b|👍|🎉|"
    r"感谢|谢谢|懂了|原来如此")
REFUTE = re.compile(
    r"\b(?:didn'?t|did not|doesn'?t|does not|won'?t) (?:help|work|change|fix|make)|\bno (?:difference|improvement|"
    r"change|luck|effect)\b|\bstill (?:get|got|getting|the same|lower|only|around|about|short|below|\d)|\bsame "
    r"(?:result|number|accuracy|score)|\balready (?:use|using|used|set|tried|did)\b|\bnot the (?:cause|issue|"
    r"problem|reason)\b|\bunfortunately\b|没用|还是|没有变化|不行|还差")
HYPOTHESIS = re.compile(
    r"\?|\b(?:did|have|are|were|do) you\b|\btry\w*\b|\bcould be\b|\bmight\b|\bmay be\b|\bmaybe\b|\bprobably\b|"
    r"\bpossibly\b|\bi suspect\b|\bi think\b|\bi guess\b|\bmake sure\b|\bcheck\b|\bplease (?:use|set|check|try)\b|"
    r"\byou (?:should|need to|have to|must)\b|\bthe (?:reason|cause|difference|issue|problem) (?:is|was|might|"
    r"could)\b|\bbecause\b|\bdue to\b|\bcaused by\b|\bnote that\b|\bwe used\b|\bthe paper (?:uses|used)\b|"
    r"\bwe use\b|\bis it possible\b|是不是|可能|试试|检查|建议|注意", re.I)
CAUSAL = re.compile(
    r"\bbecause\b|\bdue to\b|\bcaused by\b|\bthe (?:reason|cause|difference|issue|problem) (?:is|was)\b|"
    r"\bthe paper (?:uses|used)\b|\bwe (?:used|use)\b|\byou (?:should|need to|have to|must)\b|\bis why\b|"
    r"\bresults? (?:in|from)\b|\bexplains\b|\bso (?:you|the|your)\b|原因|因为|导致", re.I)
FIX = re.compile(
    r"\b(?:set|use|using|change|changing|switch|add|remove|increase|decrease|scale|upgrade|downgrade|pass|"
    r"enable|disable|replace)\b|设置|改成|换成|使用", re.I)

#: The paper's number itself is wrong or came from different code: the type is ``other`` (no setting of the
#: asker's explains it).
PAPER_ERROR = re.compile(
    r"\b(?:the )?(?:paper|table \d+|reported (?:number|result|value)s?) (?:is|was|are|were) (?:\w+ )?(?:incorrect|wrong|"
    r"mistaken|erroneous)\b|\b(?:typo|mistake|error) in (?:the )?(?:paper|table \d+)\b|"
    r"\bcode (?:was|has been|is) (?:\w+ )?(?:tweaked|changed|modified|refactored|rewritten) (?:for|since|after)\b|"
    r"论文(?:中|里)?(?:的)?(?:结果|数字|数值)?(?:有|写)?(?:错|误)")
