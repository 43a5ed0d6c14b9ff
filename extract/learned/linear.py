"""A sparse linear model over named features, read from and written to a small JSON weights file.

Binary models have one class (``classes == ("positive",)``): ``prob`` is the calibrated probability
``sigmoid(a * z + b)`` of the raw score ``z = bias + sum(coef[f] * x[f])`` (Platt scaling fitted on
cross-validated scores). Multi-class models have one score per class and ``probs`` is
``softmax(z / temperature)``. Features missing from ``coef`` weigh 0 (they never occurred in training).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from reprodiag.errors import UserError, read_user_text

FORMAT = "reprodiag-linear-1"
MODELS_DIR = Path(__file__).resolve().parent.parent / "data" / "models"


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True)
class LinearModel:
    """``threshold`` applies to ``prob`` (binary) or to the top class's probability (multi-class);
    ``meta`` records how the model was trained (data, seed, cross-validated figures)."""

    name: str
    classes: tuple[str, ...]
    bias: tuple[float, ...]
    coef: Mapping[str, tuple[float, ...]]
    calib_a: float = 1.0
    calib_b: float = 0.0
    temperature: float = 1.0
    threshold: float = 0.5
    meta: Mapping[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ scoring

    def scores(self, feats: Mapping[str, float]) -> list[float]:
        out = list(self.bias)
        coef = self.coef
        k = len(out)
        for f, x in feats.items():
            w = coef.get(f)
            if w is not None:
                for i in range(k):
                    out[i] += w[i] * x
        return out

    def score(self, feats: Mapping[str, float]) -> float:
        """Raw score of a binary model (before calibration)."""
        flat = self._flat
        z = self.bias[0]
        for f, x in feats.items():
            w = flat.get(f)
            if w is not None:
                z += w * x
        return z

    @property
    def _flat(self) -> dict[str, float]:
        cached = self.__dict__.get("_flat_cache")
        if cached is None:
            cached = {f: w[0] for f, w in self.coef.items()}
            object.__setattr__(self, "_flat_cache", cached)
        return cached

    def prob(self, feats: Mapping[str, float]) -> float:
        """Calibrated probability of the positive class (binary models)."""
        return _sigmoid(self.calib_a * self.score(feats) + self.calib_b)

    def calibrate(self, z: float) -> float:
        return _sigmoid(self.calib_a * z + self.calib_b)

    def probs(self, feats: Mapping[str, float]) -> dict[str, float]:
        """Class probabilities of a multi-class model."""
        z = [s / self.temperature for s in self.scores(feats)]
        m = max(z)
        e = [math.exp(v - m) for v in z]
        tot = sum(e)
        return {c: v / tot for c, v in zip(self.classes, e, strict=True)}

    # ------------------------------------------------------------------ files

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "name": self.name, "classes": list(self.classes), "bias": list(self.bias),
                "calib_a": self.calib_a, "calib_b": self.calib_b, "temperature": self.temperature,
                "threshold": self.threshold, "meta": dict(self.meta),
                "coef": {f: list(w) for f, w in sorted(self.coef.items())}}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True, indent=0) + "\n"

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.dumps(), encoding="utf-8")
        tmp.replace(path)

    @cached_property
    def digest(self) -> str:
        """Short SHA-256 of the weights file's content (the model's version in records and caches); computed
        once per model object (serializing the weights costs about 0.1 s)."""
        return hashlib.sha256(self.dumps().encode("utf-8")).hexdigest()[:12]

    @classmethod
    def from_json(cls, doc: Any, where: str) -> LinearModel:
        try:
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} weights file")
            classes = tuple(str(c) for c in doc["classes"])
            bias = tuple(float(b) for b in doc["bias"])
            if not classes or len(bias) != len(classes):
                raise ValueError("classes and bias differ in length")
            coef: dict[str, tuple[float, ...]] = {}
            for f, w in dict(doc["coef"]).items():
                ws = tuple(float(v) for v in w)
                if len(ws) != len(classes) or not all(math.isfinite(v) for v in ws):
                    raise ValueError(f"bad weights for feature {str(f)[:40]!r}")
                coef[str(f)] = ws
            vals = [float(doc.get(k, d)) for k, d in (("calib_a", 1.0), ("calib_b", 0.0), ("temperature", 1.0),
                                                         ("threshold", 0.5))]
            if not all(math.isfinite(v) for v in vals + list(bias)) or vals[2] <= 0:
                raise ValueError("non-finite or invalid calibration values")
            meta = doc.get("meta") or {}
            if not isinstance(meta, dict):
                raise ValueError("meta must be an object")
            return cls(name=str(doc["name"]), classes=classes, bias=bias, coef=coef, calib_a=vals[0],
                       calib_b=vals[1], temperature=vals[2], threshold=vals[3], meta=meta)
        except (KeyError, TypeError, ValueError) as exc:
            msg = str(exc) if not isinstance(exc, KeyError) else f"missing key {exc}"
            raise UserError(f"corrupt model weights {where}: {' '.join(msg.split())[:160]} "
                            "(rebuild with `reprodiag train`)") from None

    @classmethod
    def load(cls, path: Path) -> LinearModel:
        """Read a weights file; a missing, unreadable or corrupt one is a one-line :class:`UserError`."""
        text = read_user_text(path, "model weights", "(rebuild with `reprodiag train`)")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"corrupt model weights {path}: invalid JSON at line {exc.lineno} "
                            "(rebuild with `reprodiag train`)") from None
        return cls.from_json(doc, str(path))


def model_path(name: str) -> Path:
    """Where model ``name`` lives: ``$REPRODIAG_MODELS_DIR/<name>.json`` if that variable is set, else the
    shipped ``extract/data/models/<name>.json``."""
    import os

    base = os.environ.get("REPRODIAG_MODELS_DIR")
    return (Path(base) if base else MODELS_DIR) / f"{name}.json"


@lru_cache(maxsize=16)
def _cached(path: str, mtime_ns: int, size: int) -> LinearModel:
    return LinearModel.load(Path(path))


def shipped(name: str) -> LinearModel:
    """The model ``name`` (see :func:`model_path`), read once per file version."""
    p = model_path(name)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UserError(f"model weights not found: {p} (rebuild with `reprodiag train`)") from None
    except OSError as exc:
        raise UserError(f"cannot read model weights {p}: {exc.strerror}") from None
    return _cached(str(p), st.st_mtime_ns, st.st_size)
