"""Training the concept grader from human-labeled answers (``eval_diagnosis/data/answers_real/dev.jsonl``).

Two calibrated logistic models, cross-validated with folds grouped by the source repository
(:mod:`extract.learned.train`): ``grader_direction`` (does this direction name the root cause? the labeled
direction of a hit — its ``hit_rank`` — is positive, every other direction of the constructed answers is
negative) and ``grader_answer`` (is the answer a hit?), whose features include the *out-of-fold* direction
probabilities so that it learns from scores like those it sees at run time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_diagnosis.answers import parse_directions
from eval_diagnosis.graders.concept_features import ItemTargets, answer_features, direction_features
from eval_diagnosis.graders.lexical import WordOverlapGrader
from extract.learned.linear import LinearModel
from extract.learned.train import Examples, accuracy_threshold, fit_binary
from reprodiag.errors import UserError
from reprodiag.schema import EvalItem

ANSWERS_DIR = Path(__file__).resolve().parent.parent / "data" / "answers_real"


@dataclass(frozen=True)
class LabeledAnswer:
    item: EvalItem
    answer: str
    hit: bool
    hit_rank: int | None
    category: str
    repo: str
    line: int


def load_labeled_answers(path: Path) -> list[LabeledAnswer]:
    """Rows of a labeled answer file (:func:`eval_diagnosis.io.load_labels`, LABELING.md format)."""
    from eval_diagnosis.io import load_labels

    if not path.exists():
        raise UserError(f"labeled answers not found: {path}")
    return [LabeledAnswer(lab.item, lab.answer, lab.hit, lab.hit_rank if lab.hit else None, lab.category,
                          lab.item.source_thread.split("#")[0].lower(), no)
            for no, lab in enumerate(load_labels(path), start=1)]


def _direction_examples(rows: list[LabeledAnswer]) -> tuple[Examples, list[tuple[int, int]], list[list]]:
    """Direction examples, (row, direction) of each example, and each row's parsed directions."""
    ex = Examples()
    where: list[tuple[int, int]] = []
    parsed: list[list] = []
    v1 = WordOverlapGrader()
    for r_i, r in enumerate(rows):
        dirs = parse_directions(r.answer)
        parsed.append(dirs)
        if r.hit and (r.hit_rank is None or r.hit_rank > len(dirs)):
            continue  # the labeled rank does not map onto the parsed directions: no direction labels
        tg = ItemTargets(r.item)
        targets = v1.targets(r.item)
        for d_i, d in enumerate(dirs):
            y = bool(r.hit and r.hit_rank == d_i + 1)
            ex.add(direction_features(d, tg, v1.matches(d, r.item, targets)), y, r.repo, 1.0, True, f"{r_i}")
            where.append((r_i, d_i))
    return ex, where, parsed


def derived_rows(rows: list[LabeledAnswer]) -> list[LabeledAnswer]:
    """Rows that follow from the labels by rule (LABELING.md, "Derived rows"): each item's gold root cause and
    each of its acceptable directions as a one-line answer is a hit at rank 1; a correct answer of another
    item, of another error type, is a miss for this item (an answer to a different problem), and so are
    that item's gold cause and acceptable directions."""
    items: dict[str, LabeledAnswer] = {}
    correct: dict[str, str] = {}
    for r in rows:
        items.setdefault(r.item.id, r)
        if r.category == "paraphrase" and r.hit:
            correct.setdefault(r.item.id, r.answer)
    order = sorted(items)
    out: list[LabeledAnswer] = []
    for i, iid in enumerate(order):
        base = items[iid]
        out.append(LabeledAnswer(base.item, "1. " + base.item.gold_root_cause, True, 1, "derived_gold", base.repo, 0))
        for phrase in base.item.acceptable_directions[:3]:
            out.append(LabeledAnswer(base.item, "1. " + phrase, True, 1, "derived_gold", base.repo, 0))
        other = next((items[order[(i + k) % len(order)]] for k in range(1, len(order))
                      if items[order[(i + k) % len(order)]].item.error_type != base.item.error_type), None)
        if other is None:
            continue
        out.append(LabeledAnswer(base.item, "1. " + other.item.gold_root_cause, False, None, "derived_shifted",
                                 base.repo, 0))
        for phrase in other.item.acceptable_directions[:3]:
            out.append(LabeledAnswer(base.item, "1. " + phrase, False, None, "derived_shifted", base.repo, 0))
        if other.item.id in correct:
            out.append(LabeledAnswer(base.item, correct[other.item.id], False, None, "derived_shifted", base.repo, 0))
    return out


def train_grader(rows: list[LabeledAnswer], *, seed: int = 0) -> tuple[list[LinearModel], list[str], dict[int, float]]:
    """Fit both models on ``rows`` plus their :func:`derived_rows`; returns the models, report lines, and the
    out-of-fold answer probability of each of ``rows`` (derived rows are trained on, not reported)."""
    human = len(rows)
    rows = list(rows) + derived_rows(rows)
    meta = {"trained_on": f"{human} labeled answers + {len(rows) - human} derived, "
                          f"{len({r.item.id for r in rows})} items"}
    dex, where, parsed = _direction_examples(rows)
    dtr = fit_binary("grader_direction", dex, seed, accuracy_threshold, dict(meta))
    oof_dir: dict[int, list[tuple[int, float]]] = {}
    for i, p in dtr.oof.items():
        r_i, d_i = where[i]
        oof_dir.setdefault(r_i, []).append((d_i, p))
    aex = Examples()
    keys: list[int] = []
    for r_i, r in enumerate(rows):
        dirs = parsed[r_i]
        if not dirs or r_i not in oof_dir:
            continue
        probs = [p for _, p in sorted(oof_dir[r_i])]
        aex.add(answer_features(dirs, probs), r.hit, r.repo, 1.0, True, str(r_i))
        keys.append(r_i)
    atr = fit_binary("grader_answer", aex, seed, accuracy_threshold, dict(meta))
    answer_oof = {keys[i]: p for i, p in atr.oof.items() if keys[i] < human}
    agree = sum((p >= atr.model.threshold) == rows[k].hit for k, p in answer_oof.items())
    notes = [f"grader (cv, {len(answer_oof)} dev answers): accuracy {agree / max(len(answer_oof), 1):.3f} at "
             f"threshold {atr.model.threshold:.3f}"]
    return [dtr.model, atr.model], notes, answer_oof


def run_train_grader(*, answers: Path | None = None, out_dir: Path | None = None, seed: int = 0) -> dict[str, Any]:
    from extract.learned.linear import MODELS_DIR
    from extract.learned.train import write_models

    rows = load_labeled_answers(answers or ANSWERS_DIR / "dev.jsonl")
    if not rows:
        raise UserError("no labeled answers to train the grader on")
    models, notes, _ = train_grader(rows, seed=seed)
    paths = write_models(models, out_dir or MODELS_DIR)
    return {"rows": len(rows), "paths": [str(p) for p in paths], "notes": notes}
