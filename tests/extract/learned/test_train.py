"""Training of the multi-class model: the class-prior correction is chosen out of fold by macro-averaged
recall and folded into the exported bias, so the shipped weights predict what the selection measured."""

from __future__ import annotations

import math
import random

import pytest

from extract.learned.train import Examples, class_prior, fit_multiclass, macro_recall, top_class

CLASSES = ("a", "b", "c")


def _skewed(seed: int) -> Examples:
    """Class ``a`` is 80% of the rows; ``b`` and ``c`` share a weak cue with ``a`` (``amb``) and only some of
    their rows carry their own cue, so a model that keeps the 80% prior calls most of them ``a``."""
    rng = random.Random(seed)
    ex = Examples()
    for i in range(400):
        y = "a" if i % 10 < 8 else "b" if i % 10 == 8 else "c"
        x = {"bias_feature": 1.0}
        if rng.random() < 0.7:
            x["amb"] = 1.0
        if y != "a" and rng.random() < 0.6:
            x[f"cue_{y}"] = 1.0
        if y == "a" and rng.random() < 0.1:
            x[f"cue_{rng.choice('bc')}"] = 1.0
        x[f"noise_{rng.randrange(30)}"] = 1.0
        ex.add(x, y, f"repo{i % 40}", 1.0, True, f"t{i}")
    return ex


def test_macro_recall_is_the_mean_of_per_class_recalls() -> None:
    y = ["a", "a", "a", "b"]
    pred = {0: "a", 1: "a", 2: "b", 3: "b"}
    assert macro_recall(pred, y, CLASSES) == pytest.approx((2 / 3 + 1.0) / 2)
    assert macro_recall({0: "a", 1: "a", 2: "a", 3: "a"}, y, CLASSES) == pytest.approx(0.5)


def test_class_prior_is_weighted_and_smoothed() -> None:
    ex = Examples()
    ex.add({}, "a", "g", 1.0, True, "1")
    ex.add({}, "a", "g", 1.0, True, "2")
    ex.add({}, "b", "g", 0.5, False, "3")
    p = class_prior(ex, CLASSES)
    assert p == pytest.approx({"a": 3 / 5.5, "b": 1.5 / 5.5, "c": 1 / 5.5})


def test_prior_correction_raises_minority_recall_and_lives_in_the_exported_bias() -> None:
    ex = _skewed(1)
    tr = fit_multiclass("t", ex, 0, {}, classes=CLASSES)
    m = tr.model
    alpha = m.meta["prior_alpha"]
    assert alpha > 0  # the skewed prior costs the minority classes
    prior = m.meta["prior"]
    assert set(prior) == set(CLASSES) and prior["a"] > 0.7
    # the out-of-fold predictions the selection saw: better balanced than without the correction
    corrected = {i: top_class(sc, CLASSES) for i, sc in tr.oof.items()}
    raw = {i: top_class({c: v + alpha * math.log(prior[c]) for c, v in sc.items()}, CLASSES)
           for i, sc in tr.oof.items()}
    assert macro_recall(corrected, ex.y, CLASSES) > macro_recall(raw, ex.y, CLASSES)
    assert sum(v != "a" for v in corrected.values()) > sum(v != "a" for v in raw.values())
    # the exported model applies the same correction: an ambiguous row with only the shared cue and a
    # minority cue is called minority, and its probabilities still sum to one
    probs = m.probs({"bias_feature": 1.0, "amb": 1.0, "cue_b": 1.0})
    assert sum(probs.values()) == pytest.approx(1.0)
    assert max(probs, key=probs.get) == "b"
    # and the bias differs from an uncorrected fit by temperature * alpha * log prior
    m0 = fit_multiclass("t", _skewed(1), 0, {}, classes=CLASSES, prior_grid=(0.0,)).model
    assert m0.meta["prior_alpha"] == 0.0 and m0.coef == m.coef
    exact = class_prior(_skewed(1), CLASSES)
    for c, b, b0 in zip(m.classes, m.bias, m0.bias, strict=True):
        assert b == pytest.approx(b0 - m.temperature * alpha * math.log(exact[c]), abs=2e-5)


def test_same_seed_same_model() -> None:
    a = fit_multiclass("t", _skewed(2), 5, {}, classes=CLASSES).model
    b = fit_multiclass("t", _skewed(2), 5, {}, classes=CLASSES).model
    assert a.dumps() == b.dumps()
