"""``baseline:rules``: keyword rules over the item text (symptom, environment, tried, paper), offline.

Each rule that fires proposes a direction with a weight; the three best distinct directions are the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval_diagnosis.answers import render_directions
from eval_diagnosis.directions import normalize
from reprodiag.schema import EvalItem


@dataclass(frozen=True)
class Rule:
    pattern: str
    direction: str
    why: str
    weight: float


RULES: tuple[Rule, ...] = (
    Rule(r"\bbleu\b|sacrebleu|\bchrf\b|\bter\b|translation|\bwmt", "tokenized vs detokenized BLEU (sacreBLEU tokenizer)",
         "BLEU depends heavily on tokenization and the scoring script", 3.0),
    Rule(r"\bbleu\b|translation|summari[sz]\w*|generation|\brouge", "decoding settings: beam size and length penalty",
         "generation metrics move with decoding settings", 2.0),
    Rule(r"\brouge", "ROUGE implementation and sentence splitting (rougeLsum)",
         "ROUGE packages differ in stemming and sentence splitting", 2.5),
    Rule(r"\bfid\b|inception|\bgan\b|diffusion|\bis score", "FID implementation and reference statistics",
         "FID varies with the Inception weights, resizing and sample count", 3.0),
    Rule(r"top ?1|top ?5|imagenet|classification|\bvit\b|resnet", "input preprocessing and normalization "
         "(resize/crop, mean/std)", "ImageNet accuracy is sensitive to the preprocessing pipeline", 2.5),
    Rule(r"top ?1|imagenet|classification", "learning-rate schedule and epochs",
         "classification recipes depend on schedule length", 1.5),
    Rule(r"\bmap\b|\bap\b|coco|detection|detector|\bbox", "COCO evaluation protocol (pycocotools, score threshold, NMS)",
         "detection mAP changes with evaluation thresholds and the toolkit", 2.5),
    Rule(r"\b\d+ ?(?:x ?)?gpu\b|number of gpu|multigpu|single gpu|one gpu|distributed",
         "effective batch size and learning-rate scaling with the number of GPUs",
         "the paper's recipe assumes its GPU count", 3.0),
    Rule(r"\bbs\b|\bgradaccum\b", "batch size / effective batch size", "the batch size differs from the paper", 2.0),
    Rule(r"\bfp16\b|precision|\bnan\b|overflow", "mixed precision (FP16/AMP) numerics",
         "half precision can change results or diverge", 2.5),
    Rule(r"\bseed\b|variance|fluctuat\w*|unstable|different runs|each run|run to run|std",
         "random seed and run-to-run variance", "the paper may report the best of several runs", 2.5),
    Rule(r"(?:pytorch|tensorflow|cuda|transformers|timm|jax|torchvision) ?v?\d|\bversion|upgrad\w*",
         "framework version changed a default", "library updates change default behaviour", 2.0),
    Rule(r"\bf1\b|squad|\bner\b|glue|exact match|\bem\b", "metric averaging and the official evaluation script",
         "F1 variants (macro/micro, normalisation) differ", 2.5),
    Rule(r"\bf1\b|squad|\bner\b|glue|bert|perplexity|\bppl\b|language model",
         "tokenization and maximum sequence length", "subword tokenization and truncation change scores", 2.0),
    Rule(r"\bwer\b|\bcer\b|speech|asr", "text normalization before WER scoring",
         "casing and punctuation normalization change WER", 2.5),
    Rule(r"reward|return|atari|mujoco|reinforcement|\brl\b|episode", "random seed and run-to-run variance",
         "RL results vary strongly across seeds", 3.0),
    Rule(r"\bsplit\b|validation set|test set|dev set|20\d\d", "dataset version and split",
         "papers often report on a different split or release", 1.5),
    Rule(r"\bwarmup\b|\blr\b|schedul|\bepoch\b", "learning rate and warmup schedule",
         "the optimisation schedule differs", 1.5),
    Rule(r"\bpreprocess\b|\bnormaliz\b|resiz|crop", "input preprocessing and normalization",
         "the preprocessing differs from the paper's", 1.5),
)

FALLBACK = (
    ("learning rate and batch size", "the most common source of reproduction gaps"),
    ("data preprocessing", "the second most common source"),
    ("evaluation script and metric version", "metrics are often computed differently"),
)


class RulesBaseline:
    spec = "baseline:rules"
    cacheable = False

    def answer(self, item: EvalItem) -> str:
        text = " " + normalize(" ".join([item.symptom, item.environment, item.tried, item.paper])) + " "
        scored: dict[str, tuple[float, str]] = {}
        for r in RULES:
            if re.search(r.pattern, text):
                w, why = scored.get(r.direction, (0.0, r.why))
                scored[r.direction] = (w + r.weight, why)
        ranked = sorted(scored.items(), key=lambda kv: -kv[1][0])[:3]
        picks = [(d, why) for d, (_w, why) in ranked]
        for d, why in FALLBACK:
            if len(picks) >= 3:
                break
            if d not in scored:
                picks.append((d, why))
        return render_directions([(d, f"because {why}") for d, why in picks])
