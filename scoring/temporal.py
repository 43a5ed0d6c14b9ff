"""Temporal tags: creation year, framework versions, tier, weight.

Tier rule (SPEC.md "Temporal tiers"):

* a record is **framework-dependent** when ``error_type`` is
  ``framework_version``, or when its cause text (``root_cause`` +
  ``resolution``) ties the cause to a version: it names a framework version
  (:data:`VERSION_PATTERN` finds one) or matches :data:`VERSION_TIE_PATTERN`
  ("after upgrading", "changed the default", "deprecated", ...). Other causes
  (hyperparameters, data, metric definitions, seeds/hardware) are algorithmic.
* not dependent → ``current``; dependent and created 2022 or later →
  ``current``; 2020–2021 → ``historical``; before 2020 → ``filtered``;
  dependent with unknown year → ``historical`` (kept, down-weighted).
* ``still_relevant``: tier is ``current``. ``historical_value``: tier is
  ``historical`` (reasoning transferable, advice dated).
* ``weight``: per-tier sample weight from the config (defaults 1.0 / 0.5 / 0.0).

The patterns here are applied by the vectorized polars path
(:mod:`scoring.vectorized`); they are written in the common subset of Python
``re`` and Rust ``regex``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

CURRENT_FROM_YEAR = 2022
HISTORICAL_FROM_YEAR = 2020

#: Canonical key → aliases (lower case, longest first within each family).
_TF_ALIASES = {"tensorflow": ("tensorflow-gpu", "tensorflow_gpu", "tensorflow", "tf")}
_CUDA_ALIASES = {"cuda": ("cuda compilation tools, release", "cudatoolkit", "cuda toolkit", "cuda-toolkit", "cuda")}
_GENERIC_ALIASES: dict[str, tuple[str, ...]] = {
    "pytorch-lightning": ("pytorch-lightning", "pytorch_lightning"),
    "torchvision": ("torchvision",),
    "torch": ("pytorch", "torch"),
    "cudnn": ("cudnn",),
    "jaxlib": ("jaxlib",),
    "jax": ("jax",),
    "flax": ("flax",),
    "transformers": ("transformers",),
    "tokenizers": ("tokenizers",),
    "sentencepiece": ("sentencepiece",),
    "numpy": ("numpy",),
    "scipy": ("scipy",),
    "scikit-learn": ("scikit-learn", "sklearn"),
    "python": ("python", "py"),
    "mmcv": ("mmcv-full", "mmcv"),
    "mmdet": ("mmdetection", "mmdet"),
    "fairseq": ("fairseq",),
    "timm": ("timm",),
    "detectron2": ("detectron2",),
    "keras": ("keras",),
    "sacrebleu": ("sacrebleu",),
    "apex": ("apex",),
    "nccl": ("nccl",),
    "mxnet": ("mxnet",),
    "paddlepaddle": ("paddlepaddle", "paddle"),
    "accelerate": ("accelerate",),
    "deepspeed": ("deepspeed",),
}

#: alias (lower case) → canonical key
ALIASES: dict[str, str] = {
    a: key for fam in (_TF_ALIASES, _CUDA_ALIASES, _GENERIC_ALIASES) for key, al in fam.items() for a in al
}


def _alt(fam: Mapping[str, tuple[str, ...]]) -> str:
    names = sorted((a for al in fam.values() for a in al), key=len, reverse=True)
    return "|".join(re.escape(n).replace(r"\ ", " ") for n in names)


_SEP = r"[ \t_\-]*(?:\.__version__|version|ver\.)?[ \t]*(?:==|>=|<=|~=|=|:|is)?[ \t]*['\"]?v?"
_GENERIC_VER = r"([0-9]+(?:\.(?:[0-9]+|[xX*]))*(?:(?:a|b|rc|\.post|\.dev)[0-9]+)?)"
_TF_VER = r"([0-2](?:\.(?:[0-9]+|[xX*]))*(?:rc[0-9]+)?)(?:[^0-9A-Za-z]|$)"
_CUDA_VER = r"([1-9][0-9]?\.[0-9]+(?:\.[0-9]+)*|1[0-9]|[7-9])"

#: One scan finds every version mention. Groups: 1/2 TF alias/version, 3/4 CUDA, 5/6 generic, 7 "+cuXYZ" tag.
VERSION_PATTERN = (
    rf"(?i)(?:\b|_)(?:({_alt(_TF_ALIASES)}){_SEP}{_TF_VER}"
    rf"|({_alt(_CUDA_ALIASES)}){_SEP}{_CUDA_VER}"
    rf"|({_alt(_GENERIC_ALIASES)}){_SEP}{_GENERIC_VER})"
    r"|\+cu([0-9]{2,3})\b"
)
#: Internal key for versions derived from wheel tags (``+cu113``); explicit CUDA mentions win over it.
CUDA_TAG_KEY = "cuda_tag"

#: Phrases that tie a cause to a framework version.
VERSION_TIE_PATTERN = (
    r"(?i)\b(?:upgrad(?:e|ed|ing)|downgrad(?:e|ed|ing)|newer versions?|older versions?|later versions?"
    r"|earlier versions?|version mismatch|deprecated|changed (?:the )?defaults?|default (?:value |behaviou?r )?"
    r"changed|breaking change|(?:pin|pinned|pinning) (?:to |the )?(?:version|torch|pytorch|tensorflow|cuda)"
    r"|regression in (?:torch|pytorch|tensorflow|tf|cuda|cudnn|jax|transformers))\b"
)

#: Record fields scanned for versions, in this order (joined with newlines).
TEXT_FIELDS = ("problem_statement", "environment", "tried", "root_cause", "resolution")
