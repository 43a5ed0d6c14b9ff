"""``reprodiag train``: fit the learned models from the real-thread corpus's ``dev`` part.

Each model is an L2 logistic regression (scikit-learn) over the named features of
:mod:`extract.learned.features`, cross-validated with 5 folds grouped by repository (rows of the older
labeled sets, if given, are always in the training folds and never scored). The regularisation strength
is chosen by out-of-fold log-loss; the out-of-fold scores then fit the calibration (Platt scaling, or a
temperature for the error type) and the decision threshold:

* filter: the highest threshold whose out-of-fold recall is ≥ ``FILTER_RECALL`` (0.97);
* resolved: the threshold of best out-of-fold accuracy;
* values: the threshold of best out-of-fold net exactness, a wrong value costing ``VALUE_WRONG_COST`` (4)
  correct ones: below it the value is left null (a null is better than a wrong value);
* error type: part of the training mix's class prior is removed (:func:`fit_multiclass`), and the learned
  model replaces the rules only if its out-of-fold macro-averaged recall is higher.

Training is deterministic for a seed (same data, same seed → byte-identical weights files).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extract.learned.linear import LinearModel
from extract.realcorpus import Labeled
from reprodiag.errors import UserError

FILTER_RECALL = 0.97
#: How many correct values one wrong value costs when the value threshold is chosen.
VALUE_WRONG_COST = 4
C_GRID = (0.03, 0.1, 0.3, 1.0, 3.0)
FOLDS = 5
#: Weight of a row of the older, project-written sets relative to a real-thread row.
OLD_WEIGHT = 0.3
TYPES = ("hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware", "other")


def _sklearn() -> Any:
    try:
        import sklearn  # noqa: F401
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GroupKFold
    except ImportError:
        raise UserError("training needs scikit-learn: install reprodiag[train]") from None
    return DictVectorizer, LogisticRegression, GroupKFold


@dataclass
class Examples:
    """Feature dicts with labels; ``scored`` marks rows evaluated out of fold (real dev rows)."""

    X: list[dict[str, float]] = field(default_factory=list)
    y: list[Any] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)
    scored: list[bool] = field(default_factory=list)
    key: list[str] = field(default_factory=list)  # thread id (values: several candidates per thread)

    def add(self, x: dict[str, float], y: Any, group: str, weight: float, scored: bool, key: str) -> None:
        self.X.append(x)
        self.y.append(y)
        self.groups.append(group)
        self.weight.append(weight)
        self.scored.append(scored)
        self.key.append(key)


def _folds(ex: Examples, seed: int) -> list[tuple[list[int], list[int]]]:
    """(train, held-out) index lists: held-out rows are scored rows of one group fold; unscored rows are
    always trained on."""
    _, _, GroupKFold = _sklearn()
    scored = [i for i, s in enumerate(ex.scored) if s]
    groups = [ex.groups[i] for i in scored]
    n = min(FOLDS, len(set(groups)))
    if n < 2:
        raise UserError("cross-validation needs labeled rows from at least 2 repositories")
    gkf = GroupKFold(n_splits=n, shuffle=True, random_state=seed)
    out = []
    for _, te in gkf.split(scored, groups=groups):
        held = [scored[j] for j in te]
        hs = set(held)
        out.append(([i for i in range(len(ex.X)) if i not in hs], held))
    return out


def _fit(ex: Examples, idx: Sequence[int], C: float, seed: int, multiclass: bool) -> tuple[Any, Any]:
    DictVectorizer, LogisticRegression, _ = _sklearn()
    vec = DictVectorizer(sparse=True, sort=True)
    X = vec.fit_transform([ex.X[i] for i in idx])
    y = [ex.y[i] for i in idx]
    w = [ex.weight[i] for i in idx]
    clf = LogisticRegression(C=C, max_iter=5000, random_state=seed, tol=1e-6)
    if len(set(y)) < 2:
        raise UserError("training needs both classes in every fold: add labeled threads of the missing class")
    clf.fit(X, y, sample_weight=w)
    return vec, clf


def _raw_scores(vec: Any, clf: Any, X: list[dict[str, float]]) -> Any:
    return clf.decision_function(vec.transform(X))


def _log_loss_binary(z: Sequence[float], y: Sequence[int]) -> float:
    tot = 0.0
    for zi, yi in zip(z, y, strict=True):
        p = 1.0 / (1.0 + math.exp(-max(min(zi, 30.0), -30.0)))
        p = min(max(p, 1e-6), 1 - 1e-6)
        tot -= math.log(p) if yi else math.log(1 - p)
    return tot / max(len(y), 1)


def _oof(ex: Examples, C: float, seed: int, multiclass: bool) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for tr, te in _folds(ex, seed):
        vec, clf = _fit(ex, tr, C, seed, multiclass)
        z = _raw_scores(vec, clf, [ex.X[i] for i in te])
        if multiclass:
            classes = list(clf.classes_)
            for i, row in zip(te, z, strict=True):
                out[i] = {c: float(v) for c, v in zip(classes, row, strict=True)}
        else:
            for i, v in zip(te, z, strict=True):
                out[i] = float(v)
    return out


def _platt(z: Sequence[float], y: Sequence[int], seed: int) -> tuple[float, float]:
    _, LogisticRegression, _ = _sklearn()
    if len(set(y)) < 2:
        return 1.0, 0.0
    lr = LogisticRegression(C=1e4, max_iter=1000, random_state=seed)
    lr.fit([[v] for v in z], list(y))
    return float(lr.coef_[0][0]), float(lr.intercept_[0])


def _export(name: str, vec: Any, clf: Any, *, classes: tuple[str, ...], multiclass: bool,
            meta: dict[str, Any], calib: tuple[float, float] = (1.0, 0.0), temperature: float = 1.0,
            threshold: float = 0.5) -> LinearModel:
    names = vec.get_feature_names_out()
    coef: dict[str, tuple[float, ...]] = {}
    if multiclass:
        order = [list(clf.classes_).index(c) for c in classes]
        for j, f in enumerate(names):
            ws = tuple(round(float(clf.coef_[k][j]), 5) for k in order)
            if any(abs(v) >= 1e-5 for v in ws):
                coef[str(f)] = ws
        bias = tuple(round(float(clf.intercept_[k]), 5) for k in order)
    else:
        for j, f in enumerate(names):
            v = round(float(clf.coef_[0][j]), 5)
            if abs(v) >= 1e-5:
                coef[str(f)] = (v,)
        bias = (round(float(clf.intercept_[0]), 5),)
    return LinearModel(name=name, classes=classes, bias=bias, coef=coef, calib_a=round(calib[0], 6),
                       calib_b=round(calib[1], 6), temperature=round(temperature, 6), threshold=round(threshold, 6),
                       meta=meta)


def _choose_c(ex: Examples, seed: int, multiclass: bool,
              loss: Callable[[dict[int, Any]], float]) -> tuple[float, dict[int, Any]]:
    best: tuple[float, float, dict[int, Any]] | None = None
    for C in C_GRID:
        oof = _oof(ex, C, seed, multiclass)
        score = loss(oof)
        if best is None or score < best[0] - 1e-12:
            best = (score, C, oof)
    assert best is not None
    return best[1], best[2]


@dataclass(frozen=True)
class Trained:
    """A fitted model with its out-of-fold predictions on the scored rows (index → score/probabilities)."""

    model: LinearModel
    oof: dict[int, Any]
    examples: Examples


def fit_binary(name: str, ex: Examples, seed: int, choose_threshold: Callable[[list[float], list[int], list[int]], float],
               meta: dict[str, Any]) -> Trained:
    """Fit a calibrated binary model; ``choose_threshold(probs, labels, indices)`` sees the out-of-fold
    calibrated probabilities of the scored rows."""
    ex.y = [int(bool(v)) for v in ex.y]

    def loss(oof: dict[int, Any]) -> float:
        idx = sorted(oof)
        return _log_loss_binary([oof[i] for i in idx], [ex.y[i] for i in idx])

    C, oof = _choose_c(ex, seed, False, loss)
    idx = sorted(oof)
    a, b = _platt([oof[i] for i in idx], [ex.y[i] for i in idx], seed)
    probs = [1.0 / (1.0 + math.exp(-(a * oof[i] + b))) for i in idx]
    thr = choose_threshold(probs, [ex.y[i] for i in idx], idx)
    vec, clf = _fit(ex, list(range(len(ex.X))), C, seed, False)
    meta = dict(meta, C=C, seed=seed, rows=len(ex.X), scored_rows=len(idx),
                positives=int(sum(ex.y)), features=len(vec.get_feature_names_out()))
    model = _export(name, vec, clf, classes=("positive",), multiclass=False, meta=meta, calib=(a, b), threshold=thr)
    return Trained(model, {i: 1.0 / (1.0 + math.exp(-(a * oof[i] + b))) for i in idx}, ex)


#: Prior corrections tried for the multi-class model: 0 keeps the training mix's class prior, 1 removes it
#: (the scores become those of a uniform class prior).
PRIOR_GRID = (0.0, 0.5, 1.0)


def macro_recall(pred: dict[int, str], y: Sequence[Any], classes: Sequence[str]) -> float:
    """Mean over the classes present in ``y`` (at the indices of ``pred``) of the share of that class's rows
    predicted as it (balanced accuracy): what the accuracy would be on a set with equally many rows of each
    class."""
    rec = []
    for c in classes:
        rows = [i for i in pred if y[i] == c]
        if rows:
            rec.append(sum(pred[i] == c for i in rows) / len(rows))
    return sum(rec) / max(len(rec), 1)


def class_prior(ex: Examples, classes: Sequence[str]) -> dict[str, float]:
    """The weighted share of each class among all training rows (smoothed by one row per class)."""
    tot = {c: 1.0 for c in classes}
    for y, w in zip(ex.y, ex.weight, strict=True):
        if y in tot:
            tot[y] += w
    s = sum(tot.values())
    return {c: v / s for c, v in tot.items()}


def top_class(sc: dict[str, float], classes: Sequence[str]) -> str:
    """The best-scoring class; ties go to the class listed first (as at run time)."""
    order = {c: k for k, c in enumerate(classes)}
    return max(sc, key=lambda c: (sc[c], -order.get(c, len(order))))


def _adjusted(sc: dict[str, float], prior: dict[str, float], alpha: float) -> dict[str, float]:
    return {c: v - alpha * math.log(prior.get(c, 1.0)) for c, v in sc.items()}


def fit_multiclass(name: str, ex: Examples, seed: int, meta: dict[str, Any],
                   classes: tuple[str, ...] = TYPES, prior_grid: tuple[float, ...] = PRIOR_GRID) -> Trained:
    """Fit a multinomial model. The corpus's class mix is a property of how it was collected, not of the
    threads a user mines, so the prediction may remove part of the training prior: ``alpha`` (0, 0.5 or 1)
    times ``log prior(c)`` is subtracted from each class score, the ``alpha`` of best out-of-fold
    macro-averaged recall (ties: the smaller ``alpha``). The correction is folded into the exported bias;
    ``meta`` records ``prior_alpha`` and the prior. ``oof`` holds the corrected out-of-fold scores."""
    def loss(oof: dict[int, Any]) -> float:
        tot = 0.0
        for i, sc in oof.items():
            m = max(sc.values())
            lse = m + math.log(sum(math.exp(v - m) for v in sc.values()))
            tot -= sc.get(ex.y[i], -30.0) - lse
        return tot / max(len(oof), 1)

    C, oof = _choose_c(ex, seed, True, loss)
    # temperature by out-of-fold log-loss on a small grid
    best_t, best_l = 1.0, float("inf")
    for t in (0.5, 0.7, 1.0, 1.4, 2.0, 3.0):
        scaled = {i: {c: v / t for c, v in sc.items()} for i, sc in oof.items()}
        lv = loss(scaled)
        if lv < best_l:
            best_t, best_l = t, lv
    # the correction acts on calibrated log-probabilities: p'(c) ∝ p(c) / prior(c) ** alpha
    scaled = {i: {c: v / best_t for c, v in sc.items()} for i, sc in oof.items()}
    prior = class_prior(ex, classes)
    best_a, best_r = 0.0, -1.0
    for a in prior_grid:
        pred = {i: top_class(_adjusted(sc, prior, a), classes) for i, sc in scaled.items()}
        r = macro_recall(pred, ex.y, classes)
        if r > best_r + 1e-12:
            best_a, best_r = a, r
    oof = {i: _adjusted(sc, prior, best_a) for i, sc in scaled.items()}
    vec, clf = _fit(ex, list(range(len(ex.X))), C, seed, True)
    present = tuple(c for c in classes if c in set(clf.classes_))
    meta = dict(meta, C=C, seed=seed, rows=len(ex.X), scored_rows=len(oof), features=len(vec.get_feature_names_out()),
                prior_alpha=best_a, prior={c: round(prior[c], 4) for c in present})
    model = _export(name, vec, clf, classes=present, multiclass=True, meta=meta, temperature=best_t)
    # fold the correction into the bias: the runtime divides the scores by the temperature, so the raw bias
    # carries temperature * alpha * log prior
    shift = tuple(best_t * best_a * math.log(prior[c]) for c in present)
    model = LinearModel(name=model.name, classes=model.classes,
                        bias=tuple(round(b - d, 5) for b, d in zip(model.bias, shift, strict=True)),
                        coef=model.coef, temperature=model.temperature, threshold=model.threshold, meta=model.meta)
    return Trained(model, oof, ex)


# --------------------------------------------------------------------------- thresholds


def recall_threshold(target: float) -> Callable[[list[float], list[int], list[int]], float]:
    def choose(probs: list[float], labels: list[int], _idx: list[int]) -> float:
        pos = sorted((p for p, y in zip(probs, labels, strict=True) if y), reverse=True)
        if not pos:
            return 0.5
        k = max(int(math.ceil(target * len(pos))) - 1, 0)
        # the largest threshold that keeps the top k+1 positives: just below the (k+1)-th positive score
        return max(min(pos[k] - 1e-6, 0.99), 1e-4)
    return choose


def accuracy_threshold(probs: list[float], labels: list[int], _idx: list[int]) -> float:
    best_t, best_acc = 0.5, -1.0
    for t in sorted(set([0.5] + [round(p, 4) for p in probs])):
        acc = sum((p >= t) == bool(y) for p, y in zip(probs, labels, strict=True))
        if acc > best_acc or (acc == best_acc and abs(t - 0.5) < abs(best_t - 0.5)):
            best_t, best_acc = t, acc
    return best_t


def write_models(models: list[LinearModel], out_dir: Path) -> list[Path]:
    paths = []
    for m in models:
        p = out_dir / f"{m.name}.json"
        m.save(p)
        paths.append(p)
    return paths


def real_and_old(real: list[Labeled], old: list[Labeled]) -> list[tuple[Labeled, float, bool]]:
    """(row, weight, scored): real dev rows are scored out of fold; older rows train only."""
    return [(r, 1.0, True) for r in real] + [(r, OLD_WEIGHT, False) for r in old]
