"""``reprodiag eval`` and ``reprodiag grade``: run models on the eval set, grade, write the report.

Outputs in ``out_dir``: ``answers.jsonl`` (appended as answers arrive: a rerun skips (id, model) pairs
already answered; failed items are retried), ``grades.jsonl``, ``results.json``, ``report.html``
(the last three rewritten atomically from all answers), and for ``grade --agreement`` ``agreement.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

from eval_diagnosis.graders import Grade, Grader, make_grader
from eval_diagnosis.graders.base import error_grade
from eval_diagnosis.io import (
    AnswerRow,
    InvalidLines,
    load_answers,
    load_eval_set,
    load_labels,
    read_resumable_jsonl,
)
from eval_diagnosis.metrics import agreement_ci, summarize
from eval_diagnosis.prompt import PROMPT_VERSION, messages
from eval_diagnosis.providers import ProviderError
from eval_diagnosis.report import render_html
from eval_diagnosis.runners import Runner, make_runner
from reprodiag import console as out
from reprodiag.errors import UserError
from reprodiag.schema import EvalItem, StageReport, content_hash
from reprodiag.store import Store

ATTEMPTS = 2
SEED = 0


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror}") from None


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create output directory {path}: {exc.strerror}") from None


def _cache_key(kind: str, name: str, *parts: str) -> str:
    h = hashlib.sha256("\x1f".join((kind, name, PROMPT_VERSION, *parts)).encode("utf-8")).hexdigest()
    return f"eval:{kind}:{h}"


def _item_hash(item: EvalItem) -> str:
    return content_hash(item.model_dump(mode="json"))


def _ask(runner: Runner, item: EvalItem, store: Store | None) -> tuple[AnswerRow, bool]:
    """One answer (from the cache when possible); provider failures retried, then an error row."""
    key = None
    if store is not None and runner.cacheable:
        system, user = messages(item)
        key = _cache_key("answer", runner.spec, system, user, _item_hash(item))
        hit = store.cache_get(key)
        if isinstance(hit, dict) and isinstance(hit.get("answer"), str):
            return AnswerRow(id=item.id, model=runner.spec, answer=hit["answer"]), True
    last = ""
    for attempt in range(ATTEMPTS):
        try:
            text = runner.answer(item)
        except ProviderError as exc:
            last = str(exc)
            time.sleep(0.2 * (attempt + 1))
            continue
        if key is not None and store is not None:
            store.cache_put(key, {"answer": text})
        return AnswerRow(id=item.id, model=runner.spec, answer=text or ""), False
    return AnswerRow(id=item.id, model=runner.spec, answer="", error=last or "provider failed"), False


def _grade_all(grader: Grader, items: dict[str, EvalItem], rows: list[AnswerRow], store: Store | None,
               concurrency: int) -> list[Grade]:
    def one(row: AnswerRow) -> Grade:
        if row.error:
            return error_grade(row.id, row.model, row.error, grader.name)
        item = items[row.id]
        key = None
        if store is not None and grader.name != "lexical":
            key = _cache_key("grade", grader.name, _item_hash(item), row.answer)
            hit = store.cache_get(key)
            if isinstance(hit, dict):
                return Grade.model_validate(hit).model_copy(update={"model": row.model})
        g = grader.grade(item, row.answer).model_copy(update={"id": row.id, "model": row.model})
        if key is not None and store is not None and g.error is None:
            store.cache_put(key, g.model_dump(mode="json"))
        return g

    if concurrency > 1 and grader.name != "lexical":
        with ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(one, rows))
    return [one(r) for r in rows]


def _write_outputs(out_dir: Path, items: list[EvalItem], rows: list[AnswerRow], grades: list[Grade],
                   grader: str, card: dict[str, Any] | None = None) -> dict[str, Any]:
    types = {it.id: it.error_type for it in items}
    models = summarize(grades, types, seed=SEED)
    results = {
        "grader": grader,
        "grader_agreement": card or {},
        "uncertain": sum(g.uncertain for g in grades),
        "seed": SEED,
        "n_items": len(items),
        "items_per_type": {t: sum(1 for it in items if it.error_type == t) for t in sorted(set(types.values()))},
        "errors": {m: r["overall"]["errors"] for m, r in models.items()},
        "models": models,
    }
    order = {it.id: i for i, it in enumerate(items)}
    grades = sorted(grades, key=lambda g: (g.model, order.get(g.id, 0)))
    keep = ("id", "model", "hit", "hit_rank", "directions", "false_positives", "justified", "error_type_match",
            "reason", "error", "uncertain", "confidence")
    _write_atomic(out_dir / "grades.jsonl", "".join(
        json.dumps(g.model_dump(mode="json", include=set(keep)), ensure_ascii=False) + "\n" for g in grades))
    _write_atomic(out_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False, sort_keys=True))
    answers = {(r.id, r.model): r.answer for r in rows}
    _write_atomic(out_dir / "report.html", render_html(results, items, grades, answers))
    return results


def _notes(results: dict[str, Any]) -> list[str]:
    notes = []
    for m, r in results["models"].items():
        o = r["overall"]
        ci = (o.get("ci95") or {}).get("hit_any")
        fmt = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        notes.append(f"{m}: hit@1 {fmt(o['hit_at_1'])}, hit@3 {fmt(o['hit_at_3'])}, hit {fmt(o['hit_any'])}"
                     + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "")
                     + f", false-positive rate {fmt(o['false_positive_rate'])}, errors {o['errors']}")
    return notes


def _invalid_report(rep: StageReport, invalid: InvalidLines | None, out_dir: Path) -> StageReport:
    """``rep`` with the skipped input lines counted and written to ``out_dir/invalid-lines.jsonl``."""
    if invalid is None:
        return rep
    path = invalid.write(Path(out_dir) / "invalid-lines.jsonl")
    notes = rep.notes + ([f"{len(invalid.rows)} invalid input line(s) skipped: {path}"] if invalid.rows else [])
    return rep.model_copy(update={"counts": {**rep.counts, "skipped invalid lines": len(invalid.rows)},
                                  "outputs": {**rep.outputs, "invalid lines": str(path)}, "notes": notes})


def run_eval(eval_set: Path, *, models: list[str], grader: str, out_dir: Path, concurrency: int,
             store: Store | None, skip_invalid: bool = False) -> StageReport:
    """Answer every item with every model (resumable), grade, write grades/results/report. ``skip_invalid``:
    bad eval-set lines are recorded in ``out_dir/invalid-lines.jsonl`` instead of stopping."""
    invalid = InvalidLines() if skip_invalid else None
    return _invalid_report(_run_eval(eval_set, models=models, grader=grader, out_dir=out_dir,
                                     concurrency=concurrency, store=store, invalid=invalid), invalid, out_dir)


def _run_eval(eval_set: Path, *, models: list[str], grader: str, out_dir: Path, concurrency: int,
              store: Store | None, invalid: InvalidLines | None) -> StageReport:
    items = load_eval_set(Path(eval_set), invalid)
    specs = list(dict.fromkeys(models))
    if not specs:
        raise UserError("give at least one --model")
    grader_obj = make_grader(grader)
    runners = [make_runner(s, items) for s in specs]
    out_dir = Path(out_dir)
    _mkdir(out_dir)
    answers_path = out_dir / "answers.jsonl"
    done: set[tuple[str, str]] = set()
    for doc in read_resumable_jsonl(answers_path):
        if isinstance(doc.get("id"), str) and isinstance(doc.get("model"), str) and not doc.get("error"):
            done.add((doc["id"], doc["model"]))
    todo = [(r, it) for r in runners for it in items if (it.id, r.spec) not in done]
    lock = threading.Lock()
    counts = {"items": len(items), "models": len(specs), "answered": 0, "cached": 0,
              "reused": len(done & {(it.id, r.spec) for r in runners for it in items}), "errors": 0}

    def work(job: tuple[Runner, EvalItem]) -> None:
        row, cached = _ask(job[0], job[1], store)
        line = json.dumps(row.model_dump(mode="json"), ensure_ascii=False) + "\n"
        with lock:
            with answers_path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
            counts["cached" if cached else "answered"] += 1

    if todo:
        out.info(f"eval: {len(todo)} answers to get ({len(done)} already in {answers_path})")
        with ThreadPoolExecutor(max(1, concurrency)) as pool:
            for _ in out.track(pool.map(work, todo), "answering", total=len(todo)):
                pass
    item_by_id = {it.id: it for it in items}
    latest: dict[tuple[str, str], AnswerRow] = {}
    for doc in read_resumable_jsonl(answers_path):
        try:
            row = AnswerRow.model_validate(doc)
        except ValueError:
            continue
        if row.id in item_by_id and row.model in specs:
            prev = latest.get((row.id, row.model))
            if prev is None or prev.error or not row.error:
                latest[(row.id, row.model)] = row
    rows = sorted(latest.values(), key=lambda r: (r.model, r.id))
    grades = _grade_all(grader_obj, item_by_id, rows, store, concurrency)
    counts["errors"] = sum(g.error is not None for g in grades)
    results = _write_outputs(out_dir, items, rows, grades, grader_obj.name, grader_card(grader_obj))
    dropped = [d for r in runners for d in [_dropped(getattr(r, "chat", None))] if d]
    dropped += [d for d in [_dropped(getattr(grader_obj, "chat", None))] if d]
    return StageReport(stage="eval", counts=counts, notes=_notes(results) + dropped,
                       outputs={"answers": str(answers_path), "grades": str(out_dir / "grades.jsonl"),
                                "results": str(out_dir / "results.json"), "report": str(out_dir / "report.html")})


def _dropped(chat: Any) -> str:
    """The run summary's line for parameters an OpenAI model refused and the client dropped ("" if none)."""
    policy = getattr(chat, "_policy", None)
    return policy.summary() if policy is not None else ""


def run_agreement(labels_path: Path, grader: Grader, *, seed: int = SEED,
                  invalid: InvalidLines | None = None) -> dict[str, Any]:
    """Grade each labeled answer and compare with the human hit label: accuracy and Cohen's kappa with 95%
    intervals (answers resampled by item), per answer category, and the uncertain grades counted apart."""
    labels = load_labels(labels_path, invalid)
    predicted, disagreements = [], []
    per_cat: dict[str, list[int]] = {}
    uncertain = uncertain_wrong = 0
    for i, lab in enumerate(labels, start=1):
        g = grader.grade(lab.item, lab.answer)
        predicted.append(g.hit)
        c = per_cat.setdefault(lab.category or "", [0, 0])
        c[0] += 1
        c[1] += g.hit == lab.hit
        uncertain += g.uncertain
        uncertain_wrong += g.uncertain and g.hit != lab.hit
        if g.hit != lab.hit:
            disagreements.append({"line": i, "id": lab.item.id, "human": lab.hit, "grader": g.hit,
                                  "reason": g.reason, "notes": lab.notes})
    stats = agreement_ci(predicted, [lab.hit for lab in labels], [lab.item.id for lab in labels], seed=seed)
    return {"grader": grader.name, "labels": str(labels_path), **stats,
            "uncertain": uncertain, "uncertain_disagreeing": uncertain_wrong,
            "per_category": {k: {"n": v[0], "accuracy": round(v[1] / v[0], 4)} for k, v in sorted(per_cat.items())},
            "disagreements": disagreements}


#: A hedge list naming every error type in generic words: never a hit.
HEDGE_ANSWER = ("1. Hyperparameters such as the learning rate or batch size may differ from the paper's.\n"
                "2. The data or its preprocessing may differ.\n3. The evaluation protocol may differ.\n"
                "4. Library or framework versions may behave differently.\n"
                "5. Random seeds or hardware may explain the gap.")


def run_controls(items: list[EvalItem], grader: Grader, *, seed: int = SEED) -> dict[str, Any]:
    """Negative and positive controls, each a hit rate with its 95% interval: ``shifted`` (item i graded
    against the gold cause of item i+1 of another error type, an answer to a different problem: should
    be ~0), ``gold`` (the gold root cause itself as the answer: should be ~1), ``hedge`` (a list naming
    every type generically: should be 0)."""
    from reprodiag.intervals import bootstrap

    n = len(items)
    if n < 2:
        raise UserError("controls need at least 2 eval items")
    out: dict[str, Any] = {"grader": grader.name, "items": n}
    shifted = []
    for i, it in enumerate(items):
        other = next((items[(i + k) % n] for k in range(1, n) if items[(i + k) % n].error_type != it.error_type),
                     items[(i + 1) % n])
        shifted.append(grader.grade(it, "1. " + other.gold_root_cause).hit)
    gold = [grader.grade(it, "1. " + it.gold_root_cause).hit for it in items]
    hedge = [grader.grade(it, HEDGE_ANSWER).hit for it in items]
    for name, hits in (("shifted", shifted), ("gold", gold), ("hedge", hedge)):
        est = bootstrap(hits, lambda h: sum(h) / len(h) if h else None, seed=seed)
        out[name] = {"hit_rate": round(est.value or 0.0, 4),
                     "ci95": [round(est.lo, 4), round(est.hi, 4)] if est.lo is not None else None}
    return out


#: The shipped frozen test labels every offline grade result is accompanied by.
TEST_LABELS = Path(__file__).resolve().parent / "data" / "answers_real" / "test.jsonl"


def grader_card(grader: Grader) -> dict[str, Any]:
    """How far to trust a hit rate: the grader's agreement with the shipped frozen test labels (offline
    graders: measured now, deterministic; LLM judges: not measured here, with the command to measure)."""
    if "llm" in grader.name:
        return {"grader": grader.name, "measured": False,
                "how": f"reprodiag grade --agreement {TEST_LABELS.name} --grader {grader.name}"}
    return _offline_card(grader.name)


#: The shipped grader's measured card, written by ``reprodiag train --part grader`` with the digests of the
#: models it measured; used only while those digests match the shipped models.
CARD_PATH = Path(__file__).resolve().parent.parent / "extract" / "data" / "models" / "grader_card.json"


def _digests() -> str:
    from extract.learned.linear import shipped
    from extract.learned.predict import GRADER_MODEL_NAMES

    return ",".join(shipped(n).digest for n in GRADER_MODEL_NAMES)


def measure_card(name: str = "lexical") -> dict[str, Any]:
    res = run_agreement(TEST_LABELS, make_grader(name))
    return {"grader": name, "measured": True, "labels": f"eval_diagnosis/data/answers_real/{TEST_LABELS.name}",
            "n": res["n"], "accuracy": res["accuracy"], "kappa": res["kappa"], "ci95": res["ci95"],
            "models": _digests() if name == "lexical" else ""}


def write_card(path: Path = CARD_PATH) -> dict[str, Any]:
    card = measure_card("lexical")
    _write_atomic(path, json.dumps(card, indent=1, sort_keys=True) + "\n")
    return card


@lru_cache(maxsize=4)
def _offline_card(name: str) -> dict[str, Any]:
    if name == "lexical":
        try:
            card = json.loads(CARD_PATH.read_text(encoding="utf-8"))
            if isinstance(card, dict) and card.get("models") == _digests():
                return card
        except (OSError, ValueError):
            pass
    return measure_card(name)


def run_grade(eval_set: Path | None, *, answers: Path | None, grader: str, out_dir: Path,
              agreement: Path | None, controls: bool = False, skip_invalid: bool = False) -> StageReport:
    """Grade given answers (no model is called), measure the grader against human labels, and/or run the
    negative and positive controls (on ``eval_set``'s items, else on the shipped test labels' items).
    ``skip_invalid``: bad input lines go to ``out_dir/invalid-lines.jsonl`` instead of stopping."""
    invalid = InvalidLines() if skip_invalid else None
    return _invalid_report(_run_grade(eval_set, answers=answers, grader=grader, out_dir=out_dir,
                                      agreement=agreement, controls=controls, invalid=invalid), invalid, out_dir)


def _run_grade(eval_set: Path | None, *, answers: Path | None, grader: str, out_dir: Path,
               agreement: Path | None, controls: bool, invalid: InvalidLines | None) -> StageReport:
    if agreement is None and not controls and (eval_set is None or answers is None):
        raise UserError("grade needs --eval-set and --answers, --agreement LABELS.jsonl, or --controls")
    if answers is not None and eval_set is None:
        raise UserError("--answers needs --eval-set")
    grader_obj = make_grader(grader)
    out_dir = Path(out_dir)
    counts: dict[str, int] = {}
    outputs: dict[str, str] = {}
    notes: list[str] = []
    if controls:
        if eval_set is not None:
            citems = load_eval_set(Path(eval_set), invalid)
        else:
            seen: dict[str, EvalItem] = {}
            for lab in load_labels(TEST_LABELS):
                seen.setdefault(lab.item.id, lab.item)
            citems = list(seen.values())
        res = run_controls(citems, grader_obj)
        _mkdir(out_dir)
        _write_atomic(Path(out_dir) / "controls.json", json.dumps(res, indent=2, ensure_ascii=False))
        outputs["controls"] = str(Path(out_dir) / "controls.json")
        counts["control_items"] = res["items"]

        def pct(k: str) -> str:
            ci = res[k]["ci95"]
            return f"{100 * res[k]['hit_rate']:.1f}%" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")
        notes.append(f"controls ({res['items']} items, {grader_obj.name}): shifted answers {pct('shifted')} hits "
                     f"(want ~0), gold cause as answer {pct('gold')} (want ~100%), hedge list {pct('hedge')} (want 0)")
    if eval_set is not None and answers is not None:
        items = load_eval_set(Path(eval_set), invalid)
        rows = load_answers(Path(answers), invalid)
        by_id = {it.id: it for it in items}
        unknown = [r for r in rows if r.id not in by_id]
        if rows and len(unknown) == len(rows):
            raise UserError(f"{answers}: no answer id matches an item of {eval_set} (first: {unknown[0].id!r})")
        rows = sorted((r for r in rows if r.id in by_id), key=lambda r: (r.model, r.id))
        _mkdir(out_dir)
        grades = _grade_all(grader_obj, by_id, rows, None, 1)
        results = _write_outputs(out_dir, items, rows, grades, grader_obj.name, grader_card(grader_obj))
        counts.update({"items": len(items), "answers": len(rows), "unknown ids": len(unknown),
                       "hits": sum(g.hit for g in grades), "errors": sum(g.error is not None for g in grades)})
        outputs.update({"grades": str(out_dir / "grades.jsonl"), "results": str(out_dir / "results.json"),
                        "report": str(out_dir / "report.html")})
        notes += _notes(results)
    if agreement is not None:
        res = run_agreement(Path(agreement), grader_obj, invalid=invalid)
        _mkdir(out_dir)
        _write_atomic(out_dir / "agreement.json", json.dumps(res, indent=2, ensure_ascii=False))
        counts.update({"labels": res["n"], "agreeing": res["n"] - len(res["disagreements"])})
        outputs["agreement"] = str(out_dir / "agreement.json")
        ci = res["ci95"]
        notes.append(f"{grader_obj.name} vs human labels: accuracy {res['accuracy']:.3f} "
                     f"[{ci['accuracy'][0]:.3f}, {ci['accuracy'][1]:.3f}], Cohen's kappa {res['kappa']:.3f} "
                     f"[{ci['kappa'][0]:.3f}, {ci['kappa'][1]:.3f}] (n={res['n']}; {res['uncertain']} uncertain, "
                     f"{res['uncertain_disagreeing']} of them disagreeing)")
    return StageReport(stage="grade", counts=counts, outputs=outputs, notes=notes)
