"""Temporal tags: creation year, framework versions, tier, weight.

Tier rule (SPEC.md "Temporal tiers"):

* a record is **framework-dependent** when ``error_type`` is
  ``framework_version``, or when its cause text (``root_cause`` +
  ``resolution``) ties the cause to a version: it names a framework version
  (:func:`detect_versions` finds one) or matches :data:`VERSION_TIE_PATTERN`
  ("after upgrading", "changed the default", "deprecated", ...). Other causes
  (hyperparameters, data, metric definitions, seeds/hardware) are algorithmic.
* not dependent → ``current``; dependent and created 2022 or later →
  ``current``; 2020–2021 → ``historical``; before 2020 → ``filtered``;
  dependent with unknown year → ``historical`` (kept, down-weighted).
* ``still_relevant``: tier is ``current``. ``historical_value``: tier is
  ``historical`` (reasoning transferable, advice dated).
* ``weight``: per-tier sample weight from the config (defaults 1.0 / 0.5 / 0.0).

The regexes here are the single source of truth for the per-record path and
the vectorized polars path (:mod:`scoring.vectorized`); they are written in
the common subset of Python ``re`` and Rust ``regex``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reprodiag.schema import Record, TemporalTag

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
VERSION_RE = re.compile(VERSION_PATTERN)
#: Internal key for versions derived from wheel tags (``+cu113``); explicit CUDA mentions win over it.
CUDA_TAG_KEY = "cuda_tag"

#: Phrases that tie a cause to a framework version.
VERSION_TIE_PATTERN = (
    r"(?i)\b(?:upgrad(?:e|ed|ing)|downgrad(?:e|ed|ing)|newer versions?|older versions?|later versions?"
    r"|earlier versions?|version mismatch|deprecated|changed (?:the )?defaults?|default (?:value |behaviou?r )?"
    r"changed|breaking change|(?:pin|pinned|pinning) (?:to |the )?(?:version|torch|pytorch|tensorflow|cuda)"
    r"|regression in (?:torch|pytorch|tensorflow|tf|cuda|cudnn|jax|transformers))\b"
)
VERSION_TIE_RE = re.compile(VERSION_TIE_PATTERN)

#: Record fields scanned for versions, in this order (joined with newlines).
TEXT_FIELDS = ("problem_statement", "environment", "tried", "root_cause", "resolution")


def cuda_from_tag(tag: str) -> str:
    """``"113"`` → ``"11.3"``, ``"92"`` → ``"9.2"`` (wheel local tags such as ``+cu113``)."""
    return f"{tag[:-1]}.{tag[-1]}"


def _match_key_version(m: re.Match[str]) -> tuple[str, str]:
    if m.group(1) is not None:
        return ALIASES[m.group(1).lower()], m.group(2)
    if m.group(3) is not None:
        return ALIASES[" ".join(m.group(3).lower().split())], m.group(4)
    if m.group(5) is not None:
        return ALIASES[m.group(5).lower()], m.group(6)
    return CUDA_TAG_KEY, cuda_from_tag(m.group(7))


def finalize_versions(found: Mapping[str, str]) -> dict[str, str]:
    """Fold the ``+cuXYZ`` tag into ``cuda`` when no explicit CUDA version was found; sort keys."""
    out = dict(found)
    tag = out.pop(CUDA_TAG_KEY, None)
    if tag is not None and "cuda" not in out:
        out["cuda"] = tag
    return dict(sorted(out.items()))


def detect_versions(text: str) -> dict[str, str]:
    """Framework versions mentioned in ``text``: canonical name → version string as written.

    The first mention of each framework wins. Recognises ``torch==1.1.0``,
    ``PyTorch 1.12``, ``torch version: 1.8.1``, ``TF 1.x``, ``tensorflow-gpu 1.15``,
    ``CUDA 11.8`` / ``CUDA Version: 11.4`` / ``cudatoolkit 11.3`` / ``+cu113``,
    ``cuDNN 8.2``, ``Python 3.8``, ``py3.8`` and ``pip freeze``/``conda list`` lines.
    Device strings (``cuda:0``) and ``TF32`` are not versions.
    """
    found: dict[str, str] = {}
    if not text:
        return found
    for m in VERSION_RE.finditer(text):
        key, ver = _match_key_version(m)
        found.setdefault(key, ver)
    return finalize_versions(found)


def record_text(record: Record) -> str:
    """The record's free text scanned for versions (:data:`TEXT_FIELDS`, then hypotheses)."""
    parts = [getattr(record, f) or "" for f in TEXT_FIELDS]
    parts.extend(h.text for h in record.hypothesis_chain)
    return "\n".join(parts)


def cause_text(record: Record) -> str:
    return f"{record.root_cause or ''}\n{record.resolution or ''}"


def is_framework_dependent(error_type: str, cause: str) -> bool:
    if error_type == "framework_version":
        return True
    if not cause.strip():
        return False
    return VERSION_TIE_RE.search(cause) is not None or VERSION_RE.search(cause) is not None


def tier_for(dependent: bool, year: int | None) -> str:
    if not dependent:
        return "current"
    if year is None:
        return "historical"
    if year >= CURRENT_FROM_YEAR:
        return "current"
    if year >= HISTORICAL_FROM_YEAR:
        return "historical"
    return "filtered"


def temporal_tag(record: Record, weights: Mapping[str, float]) -> TemporalTag:
    """The record's TemporalTag; versions already on the record win over detected ones."""
    year = record.stats.created_at.year if record.stats.created_at else record.temporal_tag.created_year
    versions = {**detect_versions(record_text(record)), **record.temporal_tag.framework_versions}
    dependent = is_framework_dependent(record.error_type, cause_text(record))
    tier = tier_for(dependent, year)
    return TemporalTag(
        created_year=year,
        framework_versions=dict(sorted(versions.items())),
        tier=tier,  # type: ignore[arg-type]
        still_relevant=tier == "current",
        historical_value=tier == "historical",
        weight=float(weights[tier]),
    )
