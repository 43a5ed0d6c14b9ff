"""Training examples of each learned model from labeled threads, and ``train_all`` (what ``reprodiag
train`` runs). Features come from :mod:`extract.learned.features` over the rules' reading of the thread
(:func:`extract.reading.read_thread`), exactly as at run time."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extract.learned.features import filter_features, resolved_features, value_candidates
from extract.learned.linear import LinearModel
from extract.learned.predict import type_feats
from extract.learned.train import (
    FILTER_RECALL,
    TYPES,
    VALUE_WRONG_COST,
    Examples,
    Trained,
    accuracy_threshold,
    fit_binary,
    fit_multiclass,
    macro_recall,
    real_and_old,
    recall_threshold,
    top_class,
)
from extract.reading import Reading, read_thread
from extract.realcorpus import Labeled
from reprodiag.errors import UserError
from reprodiag.schema import StageReport

_DATA = Path(__file__).resolve().parent.parent / "data"
#: The project's own older labeled sets: extra training rows (weighted down), never scored.
OLDER_SETS = (_DATA / "devset.jsonl", _DATA / "realism.jsonl", _DATA / "realgh.jsonl")


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and abs(float(a) - float(b)) < 1e-6


def filter_examples(rows: list[tuple[Labeled, float, bool]]) -> Examples:
    ex = Examples()
    for r, w, scored in rows:
        ex.add(filter_features(r.thread), bool(r.gold["is_reproduction"]), r.repo, w, scored, r.thread.id)
    return ex


def _positives(rows: list[tuple[Labeled, float, bool]]) -> list[tuple[Labeled, float, bool, Reading]]:
    return [(r, w, s, read_thread(r.thread)) for r, w, s in rows if r.gold.get("is_reproduction")]


def resolved_examples(pos: list[tuple[Labeled, float, bool, Reading]]) -> Examples:
    ex = Examples()
    for r, w, s, rd in pos:
        ex.add(resolved_features(r.thread, rd.posts, rd.exchange), bool(r.gold.get("is_resolved")), r.repo, w, s,
               r.thread.id)
    return ex


def type_examples(pos: list[tuple[Labeled, float, bool, Reading]]) -> Examples:
    ex = Examples()
    for r, w, s, rd in pos:
        t = r.gold.get("error_type") or "other"
        ex.add(type_feats(rd), t if t in TYPES else "other", r.repo, w, s, r.thread.id)
    return ex


@dataclass(frozen=True)
class ValueRows:
    examples: Examples
    gold: dict[str, float | None]  # thread id → gold value of this side
    rules: dict[str, float | None]  # thread id → the rules' value of this side


def value_examples(pos: list[tuple[Labeled, float, bool, Reading]], side: str) -> ValueRows:
    ex = Examples()
    gold: dict[str, float | None] = {}
    rules: dict[str, float | None] = {}
    key = "paper_value" if side == "paper" else "obtained_value"
    for r, w, s, rd in pos:
        sym = rd.symptom
        g = r.gold.get(key)
        gold[r.thread.id] = None if g is None else float(g)
        rv = sym.paper if side == "paper" else sym.obtained
        rules[r.thread.id] = rv.value if rv is not None else None
        for c in value_candidates(r.thread, rd.posts, sym.paper.value if sym.paper else None,
                                  sym.obtained.value if sym.obtained else None):
            ex.add(c.feats, _same(c.value, g), r.repo, w, s, r.thread.id)
    return ValueRows(ex, gold, rules)


#: How far below the best net exactness (a share of the threads) a value threshold may score and still be chosen.
VALUE_TOLERANCE = 0.005


def _value_threshold(vr: ValueRows, values: list[float]) -> Callable[[list[float], list[int], list[int]], float]:
    """The lowest threshold whose out-of-fold net exactness per thread (a wrong value costing
    ``VALUE_WRONG_COST`` correct ones: a null is better than a wrong value) is within ``VALUE_TOLERANCE`` of the
    threads of the best; thresholds below 0.05 are never used. The tolerance keeps the choice from jumping
    along a flat, jagged curve when a few labels change, and prefers giving the value."""

    def choose(probs: list[float], _labels: list[int], idx: list[int]) -> float:
        best: dict[str, tuple[float, float]] = {}
        for p, i in zip(probs, idx, strict=True):
            k = vr.examples.key[i]
            if k not in best or p > best[k][0]:
                best[k] = (p, values[i])
        scores: list[tuple[float, int]] = []
        for t in sorted({round(p, 4) for p, _ in best.values() if p >= 0.05} | {0.5, 0.99}):
            correct = wrong = 0
            for k, (p, v) in best.items():
                g = vr.gold[k]
                if p >= t:
                    correct += _same(v, g)
                    wrong += not _same(v, g)
                else:
                    correct += g is None
            scores.append((t, correct - VALUE_WRONG_COST * wrong))
        top = max(sc for _t, sc in scores)
        return min(t for t, sc in scores if sc >= top - VALUE_TOLERANCE * len(best))

    return choose


def values_of(pos: list[tuple[Labeled, float, bool, Reading]]) -> list[float]:
    out: list[float] = []
    for r, _w, _s, rd in pos:
        sym = rd.symptom
        out.extend(c.value for c in value_candidates(r.thread, rd.posts, sym.paper.value if sym.paper else None,
                                                     sym.obtained.value if sym.obtained else None))
    return out


@dataclass(frozen=True)
class TypeCV:
    """Out-of-fold accuracy and macro-averaged recall (balanced accuracy) of the learned error type and of
    the rules on the scored rows."""

    learned_accuracy: float
    rules_accuracy: float
    learned_macro_recall: float
    rules_macro_recall: float
    n: int


def _cv_type(tr: Trained, pos: list[tuple[Labeled, float, bool, Reading]]) -> TypeCV:
    ex = tr.examples
    idx = sorted(tr.oof)
    by_key = {r.thread.id: rd for r, _w, _s, rd in pos}
    learned = {i: top_class(tr.oof[i], TYPES) for i in idx}
    rules = {i: by_key[ex.key[i]].type_decision.error_type for i in idx}
    n = max(len(idx), 1)
    return TypeCV(sum(learned[i] == ex.y[i] for i in idx) / n, sum(rules[i] == ex.y[i] for i in idx) / n,
                  macro_recall(learned, ex.y, TYPES), macro_recall(rules, ex.y, TYPES), len(idx))


def train_all(real: list[Labeled], old: list[Labeled], *, seed: int = 0) -> tuple[list[LinearModel], list[str]]:
    """Fit every model from the real ``dev`` rows (scored out of fold) and the older sets (training only).
    Returns the models and report lines (cross-validated figures on the real rows)."""
    rows = real_and_old(real, old)
    notes: list[str] = []
    meta = {"trained_on": f"{len(real)} real dev threads + {len(old)} older labeled threads"}
    flt = fit_binary("filter", filter_examples(rows), seed, recall_threshold(FILTER_RECALL), dict(meta))
    idx = sorted(flt.oof)
    y = [flt.examples.y[i] for i in idx]
    pred = [flt.oof[i] >= flt.model.threshold for i in idx]
    tp = sum(p and g for p, g in zip(pred, y, strict=True))
    fp = sum(p and not g for p, g in zip(pred, y, strict=True))
    npos, nneg = sum(y), len(y) - sum(y)
    notes.append(f"filter (cv, {len(y)} real dev threads): recall {tp / max(npos, 1):.3f}, false-positive rate "
                 f"{fp / max(nneg, 1):.3f} at threshold {flt.model.threshold:.3f}, C={flt.model.meta['C']}")
    pos = _positives(rows)
    res = fit_binary("resolved", resolved_examples(pos), seed, accuracy_threshold, dict(meta))
    ridx = sorted(res.oof)
    racc = sum((res.oof[i] >= res.model.threshold) == bool(res.examples.y[i]) for i in ridx) / max(len(ridx), 1)
    notes.append(f"resolved (cv, {len(ridx)} real dev reproductions): accuracy {racc:.3f} at threshold "
                 f"{res.model.threshold:.3f}")
    models = [flt.model, res.model]
    vals = values_of(pos)
    for side in ("paper", "obtained"):
        vr = value_examples(pos, side)
        tr = fit_binary(f"values_{side}", vr.examples, seed, _value_threshold(vr, vals), dict(meta))
        best: dict[str, tuple[float, float]] = {}
        for i, p in tr.oof.items():
            k = vr.examples.key[i]
            if k not in best or p > best[k][0]:
                best[k] = (p, vals[i])
        keys = sorted({vr.examples.key[i] for i in tr.oof} | {r.thread.id for r, _w, s, _ in pos if s})
        correct = wrong = given = 0
        for k in keys:
            p, v = best.get(k, (0.0, None))
            out = v if p >= tr.model.threshold else None
            g = vr.gold[k]
            correct += (out is None and g is None) or _same(out, g)
            given += out is not None
            wrong += out is not None and not _same(out, g)
        notes.append(f"{side} value (cv, {len(keys)} real dev reproductions): exact {correct / max(len(keys), 1):.3f}, "
                     f"wrong/given {wrong / max(given, 1):.3f} at threshold {tr.model.threshold:.3f}")
        models.append(tr.model)
    typ = fit_multiclass("error_type", type_examples(pos), seed, dict(meta))
    cv = _cv_type(typ, pos)
    # the learned model replaces the rules when it is better on the balanced measure the prior correction aims at
    use = cv.learned_macro_recall > cv.rules_macro_recall
    m = typ.model
    typ_model = LinearModel(name=m.name, classes=m.classes, bias=m.bias, coef=m.coef, temperature=m.temperature,
                            threshold=m.threshold,
                            meta=dict(m.meta, use=use, cv_accuracy=round(cv.learned_accuracy, 4),
                                      rules_accuracy=round(cv.rules_accuracy, 4),
                                      cv_macro_recall=round(cv.learned_macro_recall, 4),
                                      rules_macro_recall=round(cv.rules_macro_recall, 4)))
    notes.append(f"error type (cv, {cv.n} real dev reproductions): accuracy learned {cv.learned_accuracy:.3f} vs "
                 f"rules {cv.rules_accuracy:.3f}, macro-averaged recall {cv.learned_macro_recall:.3f} vs "
                 f"{cv.rules_macro_recall:.3f} (prior correction {m.meta.get('prior_alpha')}) -> "
                 f"{'learned' if use else 'rules'} used")
    models.append(typ_model)
    return models, notes


def group_counts(rows: list[Labeled]) -> dict[str, int]:
    c: dict[str, int] = defaultdict(int)
    for r in rows:
        c["reproduction" if r.gold["is_reproduction"] else "negative"] += 1
    return dict(c)


def run_train(*, corpus: Path | None = None, out_dir: Path | None = None, seed: int = 0, older: bool = True,
              part: str = "all", answers: Path | None = None) -> StageReport:
    """``reprodiag train``: with ``part`` ``extract`` or ``all``, fit the extractor's models from
    ``corpus/dev.jsonl`` (default: the shipped real-thread corpus) plus, with ``older``, the project's older
    labeled sets (training only); with ``grader`` or ``all``, fit the concept grader from ``answers``
    (default: ``eval_diagnosis/data/answers_real/dev.jsonl``). Weights go to ``out_dir`` (default:
    ``extract/data/models``)."""
    from extract.learned.linear import MODELS_DIR
    from extract.learned.train import write_models
    from extract.realcorpus import REAL_DIR, load_file

    if part not in ("extract", "grader", "all"):
        raise UserError(f"unknown part {part!r}: expected extract, grader or all")
    counts: dict[str, int] = {"seed": seed}
    notes: list[str] = []
    models: list[LinearModel] = []
    if part in ("extract", "all"):
        base = corpus or REAL_DIR
        real = load_file(base / "dev.jsonl")
        if not real:
            raise UserError(f"{base / 'dev.jsonl'} holds no labeled threads")
        old: list[Labeled] = []
        if older:
            for p in OLDER_SETS:
                if p.exists():
                    old.extend(load_file(p))
        got, more = train_all(real, old, seed=seed)
        models += got
        notes += more
        counts.update({"real_dev_threads": len(real), "older_threads": len(old)})
    if part in ("grader", "all"):
        from eval_diagnosis.graders.training import ANSWERS_DIR, load_labeled_answers, train_grader

        rows = load_labeled_answers(answers or ANSWERS_DIR / "dev.jsonl")
        if not rows:
            raise UserError("no labeled answers to train the grader on")
        got, more, _ = train_grader(rows, seed=seed)
        models += got
        notes += more
        counts["labeled_answers"] = len(rows)
    paths = write_models(models, out_dir or MODELS_DIR)
    if part in ("grader", "all") and (out_dir is None or Path(out_dir).resolve() == MODELS_DIR.resolve()):
        from eval_diagnosis.pipeline import _offline_card, write_card

        _offline_card.cache_clear()
        card = write_card()
        notes.append(f"grader on the frozen test labels: accuracy {card['accuracy']:.3f}, kappa {card['kappa']:.3f} "
                     f"(n={card['n']})")
    counts["models"] = len(models)
    counts.update({f"{m.name}_features": len(m.coef) for m in models})
    return StageReport(stage="train", counts=counts, outputs={p.stem: str(p) for p in paths}, notes=notes)
