"""``reprodiag eval`` and ``reprodiag grade``: run models on the eval set, grade, write the report.

Outputs in ``out_dir``: ``answers.jsonl`` (appended as answers arrive: a rerun skips (id, model) pairs
already answered; failed items are retried), ``grades.jsonl``, ``results.json``, ``report.html``
(the last three rewritten atomically from all answers), and for ``grade --agreement`` ``agreement.json``.
"""

from __future__ import annotations

import hashlib
import json
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
from reprodiag.atomic_write import replacing, write_text
from reprodiag.errors import UserError
from reprodiag.schema import EvalItem, StageReport, content_hash
from reprodiag.store import Store

ATTEMPTS = 2
SEED = 0


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
    for attempt in range(getattr(runner, "attempts", ATTEMPTS)):
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
    write_text(out_dir / "grades.jsonl", "".join(
        json.dumps(g.model_dump(mode="json", include=set(keep)), ensure_ascii=False) + "\n" for g in grades))
    write_text(out_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False, sort_keys=True))
    answers = {(r.id, r.model): r.answer for r in rows}
    write_text(out_dir / "report.html", render_html(results, items, grades, answers))
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
             store: Store | None, skip_invalid: bool = False, max_new_tokens: int | None = None,
             batch: Path | None = None, collect: Path | None = None) -> StageReport:
    """Answer every item with every model (resumable), grade, write grades/results/report. ``skip_invalid``:
    bad eval-set lines are recorded in ``out_dir/invalid-lines.jsonl`` instead of stopping.
    ``max_new_tokens``: the longest answer of a local ``hf:`` checkpoint, in tokens (None: the runner's
    default).

    By batch (one API model): ``batch`` writes the model's Batch API requests for the items ``out_dir`` has no
    answer of yet, and nothing else; ``collect`` takes its answers from the provider's results file instead of
    asking (a missing or failed answer is an error row, reported apart; collecting another file later fills
    those in), then grades as usual."""
    invalid = InvalidLines() if skip_invalid else None
    if batch is not None and collect is not None:
        raise UserError("give --batch (write the requests) or --collect (read the results), not both")
    if batch is not None:
        return _invalid_report(_write_answer_batch(eval_set, models=models, out_dir=Path(out_dir), path=Path(batch),
                                                   invalid=invalid), invalid, out_dir)
    return _invalid_report(_run_eval(eval_set, models=models, grader=grader, out_dir=out_dir,
                                     concurrency=concurrency, store=store, invalid=invalid,
                                     max_new_tokens=max_new_tokens, collect=collect), invalid, out_dir)


def _answered(answers_path: Path) -> set[tuple[str, str]]:
    """(item id, model) pairs ``answers.jsonl`` holds an answer for (error rows do not count)."""
    done: set[tuple[str, str]] = set()
    for doc in read_resumable_jsonl(answers_path):
        if isinstance(doc.get("id"), str) and isinstance(doc.get("model"), str) and not doc.get("error"):
            done.add((doc["id"], doc["model"]))
    return done


def _one_model(models: list[str], flag: str) -> str:
    specs = list(dict.fromkeys(models))
    if len(specs) != 1:
        raise UserError(f"{flag} takes exactly one --model (one Batch API file per model), got {len(specs)}")
    return specs[0]


def _write_answer_batch(eval_set: Path, *, models: list[str], out_dir: Path, path: Path,
                        invalid: InvalidLines | None) -> StageReport:
    from eval_diagnosis.prompt import answer_custom_id
    from eval_diagnosis.providers import batch_provider, chat_batch_line

    spec = _one_model(models, "--batch")
    fmt, model = batch_provider(spec)
    items = load_eval_set(Path(eval_set), invalid)
    done = _answered(out_dir / "answers.jsonl")
    counts = {"items": len(items), "batch_requests": 0, "already_answered": 0}
    seen: set[str] = set()
    _mkdir(path.parent)
    with replacing(path) as fh:
        for it in items:
            if (it.id, spec) in done:
                counts["already_answered"] += 1
                continue
            cid = answer_custom_id(spec, it)
            if cid in seen:  # two items with the same prompt: one request answers both
                continue
            seen.add(cid)
            system, user = messages(it)
            fh.write(json.dumps(chat_batch_line(fmt, model, cid, system, user), ensure_ascii=False) + "\n")
            counts["batch_requests"] += 1
    return StageReport(stage="eval", counts=counts, outputs={"batch": str(path)},
                       notes=[f"wrote {counts['batch_requests']} answer requests of {spec} ({fmt} Batch format); "
                              f"submit the file, then run eval --model {spec} --collect RESULTS with the same --out"])


def _run_eval(eval_set: Path, *, models: list[str], grader: str, out_dir: Path, concurrency: int,
              store: Store | None, invalid: InvalidLines | None, max_new_tokens: int | None = None,
              collect: Path | None = None) -> StageReport:
    items = load_eval_set(Path(eval_set), invalid)
    specs = list(dict.fromkeys(models))
    if not specs:
        raise UserError("give at least one --model")
    grader_obj = make_grader(grader)
    if collect is not None:
        from eval_diagnosis.runners.recorded import RecordedRunner

        runners: list[Runner] = [RecordedRunner(_one_model(models, "--collect"), Path(collect))]
    else:
        runners = [make_runner(s, items, max_new_tokens=max_new_tokens) for s in specs]
    out_dir = Path(out_dir)
    _mkdir(out_dir)
    answers_path = out_dir / "answers.jsonl"
    done = _answered(answers_path)
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
    if collect is not None:
        missing = sum(1 for r in rows if r.error)
        dropped.append(f"answers from {collect}: {len(rows) - missing} of {len(rows)}"
                       + (f"; {missing} without one (a failed line, or results made for another model or prompt "
                          f"version): run eval --batch again with the same --out to ask for those only"
                          if missing else ""))
    return StageReport(stage="eval", counts=counts, notes=_notes(results) + dropped,
                       outputs={"answers": str(answers_path), "grades": str(out_dir / "grades.jsonl"),
                                "results": str(out_dir / "results.json"), "report": str(out_dir / "report.html")})


def _dropped(chat: Any) -> str:
    """The run summary's line for parameters an OpenAI model refused and the client dropped ("" if none)."""
    policy = getattr(chat, "_policy", None)
    return policy.summary() if policy is not None else ""


def run_agreement(labels_path: Path, grader: Grader, *, seed: int = SEED,
                  invalid: InvalidLines | None = None) -> dict[str, Any]:
    """Grade each labeled answer and compare with its hit label: accuracy and Cohen's kappa with 95%
    intervals (answers resampled by item), per answer category, and the uncertain grades counted apart."""
    labels = load_labels(labels_path, invalid)
    predicted, disagreements = [], []
    per_cat: dict[str, list[int]] = {}
    uncertain = uncertain_wrong = errors = 0
    kept = []
    for i, lab in enumerate(labels, start=1):
        g = grader.grade(lab.item, lab.answer)
        if g.error is not None:  # no verdict (a provider failure, a verdict missing from a results file)
            errors += 1
            continue
        kept.append(lab)
        predicted.append(g.hit)
        c = per_cat.setdefault(lab.category or "", [0, 0])
        c[0] += 1
        c[1] += g.hit == lab.hit
        uncertain += g.uncertain
        uncertain_wrong += g.uncertain and g.hit != lab.hit
        if g.hit != lab.hit:
            disagreements.append({"line": i, "id": lab.item.id, "human": lab.hit, "grader": g.hit,
                                  "reason": g.reason, "notes": lab.notes})
    if not kept:
        raise UserError(f"{grader.name} graded none of the {len(labels)} labeled answers ({errors} errors)")
    stats = agreement_ci(predicted, [lab.hit for lab in kept], [lab.item.id for lab in kept], seed=seed)
    return {"grader": grader.name, "labels": str(labels_path), **stats, "errors": errors,
            "uncertain": uncertain, "uncertain_disagreeing": uncertain_wrong,
            "per_category": {k: {"n": v[0], "accuracy": round(v[1] / v[0], 4)} for k, v in sorted(per_cat.items())},
            "disagreements": disagreements}


#: A hedge list naming every error type in generic words: never a hit.
HEDGE_ANSWER = ("1. Hyperparameters such as the learning rate or batch size may differ from the paper's.\n"
                "2. The data or its preprocessing may differ.\n3. The evaluation protocol may differ.\n"
                "4. Library or framework versions may behave differently.\n"
                "5. Random seeds or hardware may explain the gap.")


#: Items of another error type each labeled hit answer is graded against in the ``other_type`` control.
OTHER_TYPE_ITEMS = 4


def run_controls(items: list[EvalItem], grader: Grader, *, seed: int = SEED,
                 hit_answers: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """Negative and positive controls, each a hit rate with its 95% interval: ``shifted`` (item i graded
    against the gold cause of item i+1 of another error type, an answer to a different problem: should
    be ~0), ``gold`` (the gold root cause itself as the answer: should be ~1), ``hedge`` (a list naming
    every type generically: should be 0), and with ``hit_answers`` (item id → answers labeled hits)
    ``other_type``: each item's first hit answer graded against ``OTHER_TYPE_ITEMS`` items of other error types
    (answers written for another problem, in the hand of real answers: should be ~0)."""
    from reprodiag.intervals import bootstrap

    n = len(items)
    if n < 2:
        raise UserError("controls need at least 2 eval items")
    out: dict[str, Any] = {"grader": grader.name, "items": n}
    controls: list[tuple[str, list[bool]]] = []
    if hit_answers:
        other: list[bool] = []
        for it in items:
            answers = hit_answers.get(it.id) or []
            if not answers:
                continue
            pool = [o for o in items if o.error_type != it.error_type]
            for o in pool[::max(1, len(pool) // OTHER_TYPE_ITEMS)][:OTHER_TYPE_ITEMS]:
                other.append(grader.grade(o, answers[0]).hit)
        if other:
            controls.append(("other_type", other))
            out["other_type_pairs"] = len(other)
    shifted = []
    for i, it in enumerate(items):
        other = next((items[(i + k) % n] for k in range(1, n) if items[(i + k) % n].error_type != it.error_type),
                     items[(i + 1) % n])
        shifted.append(grader.grade(it, "1. " + other.gold_root_cause).hit)
    gold = [grader.grade(it, "1. " + it.gold_root_cause).hit for it in items]
    hedge = [grader.grade(it, HEDGE_ANSWER).hit for it in items]
    for name, hits in (("shifted", shifted), ("gold", gold), ("hedge", hedge), *controls):
        est = bootstrap(hits, lambda h: sum(h) / len(h) if h else None, seed=seed)
        out[name] = {"hit_rate": round(est.value or 0.0, 4),
                     "ci95": [round(est.lo, 4), round(est.hi, 4)] if est.lo is not None else None}
    return out


def hit_answers_of(labels: Path) -> dict[str, list[str]]:
    """Item id → the answers a labeled answer set calls hits."""
    out: dict[str, list[str]] = {}
    for lab in load_labels(labels):
        if lab.hit:
            out.setdefault(lab.item.id, []).append(lab.answer)
    return out


#: The shipped frozen test labels every offline grade result is accompanied by.
TEST_LABELS = Path(__file__).resolve().parent / "data" / "answers_real" / "test.jsonl"


def grader_card(grader: Grader) -> dict[str, Any]:
    """How far to trust a hit rate: the grader's agreement with the shipped frozen test labels (offline
    graders: measured now, deterministic; LLM judges: not measured here, with the command to measure)."""
    if "llm" in grader.name:
        card: dict[str, Any] = {"grader": grader.name, "measured": False,
                                "how": f"reprodiag grade --agreement {TEST_LABELS.name} --grader {grader.name}"}
        prompt = recorded_judge_figures()
        if prompt:
            card["judge_prompt"] = prompt
        return card
    return _offline_card(grader.name)


@lru_cache(maxsize=1)
def recorded_judge_figures() -> dict[str, Any]:
    """The judge prompt's agreement with the frozen test labels, from the shipped recorded verdicts (another
    model than the one a run uses, so this measures the prompt, not that model); {} when absent or stale."""
    from eval_diagnosis.graders.recorded import (
        VERDICTS_DIR,
        RecordedJudge,
        read_verdict_manifest,
        recorded_part,
        verdicts_staleness,
    )

    try:
        m = read_verdict_manifest(VERDICTS_DIR)
        part = recorded_part(VERDICTS_DIR, TEST_LABELS)
        if m is None or verdicts_staleness(m) or not part.exists():
            return {}
        res = run_agreement(TEST_LABELS, RecordedJudge(part, name="llm (recorded)"))
    except UserError:
        return {}
    return {"prompt_version": m.judge_prompt_version, "recorded_by": m.model, "n": res["n"],
            "accuracy": res["accuracy"], "kappa": res["kappa"], "ci95": res["ci95"],
            "labeled_by": labels_provenance()}


#: The shipped grader's measured card, written by ``reprodiag train --part grader`` with the digests of the
#: models it measured; used only while those digests match the shipped models.
CARD_PATH = Path(__file__).resolve().parent.parent / "extract" / "data" / "models" / "grader_card.json"


def _digests() -> str:
    """The shipped grader models' digests and the decision constants applied on top of them (a change of
    either makes a stored card stale)."""
    from eval_diagnosis.graders.concept import HEDGE_TYPES, HIT_THRESHOLD
    from extract.learned.linear import shipped
    from extract.learned.predict import GRADER_MODEL_NAMES

    return ",".join(shipped(n).digest for n in GRADER_MODEL_NAMES) + f",hit>={HIT_THRESHOLD},hedge>={HEDGE_TYPES}"


def labels_provenance(labels: Path = TEST_LABELS) -> str:
    """Who or what made a labeled answer set's labels, as its folder's ``manifest.json`` records it."""
    try:
        doc = json.loads((labels.parent / "manifest.json").read_text(encoding="utf-8"))
        return str(doc.get("labeled_by") or "not recorded")
    except (OSError, ValueError):
        return "not recorded"


def measure_card(name: str = "lexical") -> dict[str, Any]:
    """The grader's agreement with the shipped frozen test labels and its controls (offline graders)."""
    grader = make_grader(name)
    res = run_agreement(TEST_LABELS, grader)
    seen: dict[str, EvalItem] = {}
    for lab in load_labels(TEST_LABELS):
        seen.setdefault(lab.item.id, lab.item)
    ctrl = run_controls(list(seen.values()), grader, hit_answers=hit_answers_of(TEST_LABELS))
    return {"grader": name, "measured": True, "labels": f"eval_diagnosis/data/answers_real/{TEST_LABELS.name}",
            "labeled_by": labels_provenance(), "n": res["n"], "accuracy": res["accuracy"], "kappa": res["kappa"],
            "ci95": res["ci95"], "controls": {k: ctrl[k] for k in ("other_type", "shifted", "gold", "hedge")
                                               if k in ctrl},
            "estimate": name == "lexical", "models": _digests() if name == "lexical" else ""}


def write_card(path: Path = CARD_PATH) -> dict[str, Any]:
    card = measure_card("lexical")
    write_text(path, json.dumps(card, indent=1, sort_keys=True) + "\n")
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
              agreement: Path | None, controls: bool = False, skip_invalid: bool = False,
              batch: Path | None = None, collect: Path | None = None, verdicts: Path | None = None,
              allow_stale: bool = False) -> StageReport:
    """Grade given answers (no model is called), measure the grader against labeled answers, and/or run the
    negative and positive controls (on ``eval_set``'s items, else on the shipped test labels' items).
    ``skip_invalid``: bad input lines go to ``out_dir/invalid-lines.jsonl`` instead of stopping."""
    invalid = InvalidLines() if skip_invalid else None
    if batch is not None or collect is not None or verdicts is not None:
        return _invalid_report(_run_judged(eval_set, answers=answers, grader=grader, out_dir=out_dir,
                                          agreement=agreement, batch=batch, collect=collect, verdicts=verdicts,
                                          allow_stale=allow_stale, invalid=invalid), invalid, out_dir)
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
            for lab in load_labels(Path(agreement) if agreement is not None else TEST_LABELS):
                seen.setdefault(lab.item.id, lab.item)
            citems = list(seen.values())
        labels_for = Path(agreement) if agreement is not None else (TEST_LABELS if eval_set is None else None)
        res = run_controls(citems, grader_obj, hit_answers=hit_answers_of(labels_for) if labels_for else None)
        _mkdir(out_dir)
        write_text(Path(out_dir) / "controls.json", json.dumps(res, indent=2, ensure_ascii=False))
        outputs["controls"] = str(Path(out_dir) / "controls.json")
        counts["control_items"] = res["items"]

        def pct(k: str) -> str:
            ci = res[k]["ci95"]
            return f"{100 * res[k]['hit_rate']:.1f}%" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")
        notes.append(f"controls ({res['items']} items, {grader_obj.name}): shifted answers {pct('shifted')} hits "
                     f"(want ~0), gold cause as answer {pct('gold')} (want ~100%), hedge list {pct('hedge')} (want 0)"
                     + (f", hit answers of another item of another type {pct('other_type')} "
                        f"({res['other_type_pairs']} pairs; want ~0)" if "other_type" in res else ""))
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
        write_text(out_dir / "agreement.json", json.dumps(res, indent=2, ensure_ascii=False))
        counts.update({"labels": res["n"], "agreeing": res["n"] - len(res["disagreements"])})
        outputs["agreement"] = str(out_dir / "agreement.json")
        ci = res["ci95"]
        if not controls and "llm" not in grader_obj.name:  # the offline grader's controls cost nothing
            items_seen: dict[str, EvalItem] = {}
            for lab in load_labels(Path(agreement)):
                items_seen.setdefault(lab.item.id, lab.item)
            if len(items_seen) >= 2:
                ctrl = run_controls(list(items_seen.values()), grader_obj, hit_answers=hit_answers_of(Path(agreement)))
                res["controls"] = ctrl
                write_text(out_dir / "agreement.json", json.dumps(res, indent=2, ensure_ascii=False))
                if "other_type" in ctrl:
                    o = ctrl["other_type"]
                    notes.append(f"control: hit answers graded against {ctrl['other_type_pairs']} items of another "
                                 f"type, {100 * o['hit_rate']:.1f}% hits"
                                 + (f" [{100 * o['ci95'][0]:.1f}, {100 * o['ci95'][1]:.1f}]" if o["ci95"] else "")
                                 + f"; gold as answer {100 * ctrl['gold']['hit_rate']:.1f}%, hedge "
                                 f"{100 * ctrl['hedge']['hit_rate']:.1f}%")
        notes.append(f"{grader_obj.name} vs the labels ({labels_provenance(Path(agreement))}): accuracy "
                     f"{res['accuracy']:.3f} "
                     f"[{ci['accuracy'][0]:.3f}, {ci['accuracy'][1]:.3f}], Cohen's kappa {res['kappa']:.3f} "
                     f"[{ci['kappa'][0]:.3f}, {ci['kappa'][1]:.3f}] (n={res['n']}; {res['uncertain']} uncertain, "
                     f"{res['uncertain_disagreeing']} of them disagreeing)")
    return StageReport(stage="grade", counts=counts, outputs=outputs, notes=notes)


# ---------------------------------------------------------------------------- the judge by batch, recorded verdicts
#``grade --batch`` / ``--collect`` / ``--verdicts``: the LLM judge through Batch API files, and recorded
#verdicts measured against the labels beside the offline grader and the cascade.
#
#* ``--batch FILE`` writes the judge requests of the answers to grade (``--eval-set`` + ``--answers``, or the
#  labeled answers of ``--agreement``); with ``--collect`` of earlier results beside it, the answers already
#  judged are left out (a rerun asks nothing twice). Nothing is graded.
#* ``--collect RESULTS`` grades from the provider's results file: the grades and report of the answers, or the
#  agreement with the labels. A failed line or an answer without a verdict is an error, counted apart.
#* ``--verdicts DIR`` (a recorded verdict set, :mod:`eval_diagnosis.graders.recorded`) with ``--agreement
#  LABELS``: the judge, the cascade (the offline grader; its uncertain grades decided by the judge) and the
#  offline grader side by side, each with accuracy and Cohen's kappa and their 95% intervals. Verdicts made for
#  another judge prompt are named stale and not scored (``--allow-stale`` shows them, labeled).


def _pairs(eval_set: Path | None, answers: Path | None, agreement: Path | None,
           invalid: InvalidLines | None) -> list[tuple[EvalItem, str]]:
    if agreement is not None:
        return [(lab.item, lab.answer) for lab in load_labels(Path(agreement), invalid)]
    if eval_set is None or answers is None:
        raise UserError("--batch/--collect need --eval-set and --answers, or --agreement LABELS.jsonl")
    by_id = {it.id: it for it in load_eval_set(Path(eval_set), invalid)}
    return [(by_id[r.id], r.answer) for r in load_answers(Path(answers), invalid) if r.id in by_id]


def _agreement_line(res: dict[str, Any], label: str) -> str:
    ci = res["ci95"]
    return (f"{label}: accuracy {res['accuracy']:.3f} [{ci['accuracy'][0]:.3f}, {ci['accuracy'][1]:.3f}], Cohen's "
            f"kappa {res['kappa']:.3f} [{ci['kappa'][0]:.3f}, {ci['kappa'][1]:.3f}] (n={res['n']}"
            + (f", {res['errors']} without a verdict" if res.get("errors") else "") + ")")


def _run_judged(eval_set: Path | None, *, answers: Path | None, grader: str, out_dir: Path,
               agreement: Path | None, batch: Path | None, collect: Path | None, verdicts: Path | None,
               allow_stale: bool, invalid: InvalidLines | None) -> StageReport:
    from eval_diagnosis.graders.recorded import (
        RecordedJudge,
        judge_spec,
        read_verdict_manifest,
        recorded_part,
        verdicts_staleness,
        write_judge_batch,
    )
    out_dir = Path(out_dir)
    if batch is not None:
        pairs = _pairs(eval_set, answers, agreement, invalid)
        done = RecordedJudge(Path(collect)).known() if collect is not None and Path(collect).exists() else set()
        counts = write_judge_batch(pairs, grader, Path(batch), done)
        return StageReport(stage="grade", counts=counts, outputs={"batch": str(batch)},
                           notes=[f"wrote {counts['batch_requests']} judge requests ({judge_spec(grader)[0]} Batch "
                                  "format); submit the file, then run grade --collect RESULTS"])
    if collect is not None:
        judge_spec(grader)
        judge = RecordedJudge(Path(collect), name=grader)
        if agreement is not None:
            res = run_agreement(Path(agreement), judge, invalid=invalid)
            _mkdir(out_dir)
            write_text(out_dir / "agreement.json", json.dumps(res, indent=2, ensure_ascii=False))
            return StageReport(stage="grade", counts={"labels": res["n"], "errors": res["errors"]},
                               outputs={"agreement": str(out_dir / "agreement.json")},
                               notes=[_agreement_line(res, f"{grader} (collected) vs the labels")])
        if eval_set is None or answers is None:
            raise UserError("--collect needs --eval-set and --answers, or --agreement LABELS.jsonl")
        items = load_eval_set(Path(eval_set), invalid)
        rows = sorted((r for r in load_answers(Path(answers), invalid) if r.id in {it.id for it in items}),
                      key=lambda r: (r.model, r.id))
        _mkdir(out_dir)
        grades = _grade_all(judge, {it.id: it for it in items}, rows, None, 1)
        results = _write_outputs(out_dir, items, rows, grades, judge.name, grader_card(judge))
        return StageReport(stage="grade", counts={"answers": len(rows), "hits": sum(g.hit for g in grades),
                                                  "errors": sum(g.error is not None for g in grades)},
                           outputs={"grades": str(out_dir / "grades.jsonl"), "results": str(out_dir / "results.json")},
                           notes=_notes(results))
    assert verdicts is not None
    if agreement is None:
        raise UserError("--verdicts needs --agreement LABELS.jsonl (the labeled answers the verdicts were made for)")
    folder = Path(verdicts)
    manifest = read_verdict_manifest(folder)
    stale = _stale(manifest, verdicts_staleness, allow_stale, folder)
    part = recorded_part(folder, Path(agreement))
    who = manifest.model if manifest else "unknown model"
    judge = RecordedJudge(part, name=f"llm (recorded: {who})" + (" STALE" if stale else ""))
    graders: list[tuple[str, Grader]] = [("offline grader (lexical)", _offline()),
                                         ("judge (recorded verdicts)", judge),
                                         ("cascade (lexical, uncertain to the judge)", _cascade(judge))]
    out: dict[str, Any] = {"verdicts": str(folder), "manifest": manifest.to_json() if manifest else None,
                           "stale": stale, "graders": {}}
    notes = [f"recorded verdicts of {who}" + (f", STALE: {stale}" if stale else "")
             + (f" ({manifest.judge_prompt_version}, {manifest.date}; {manifest.method})" if manifest else
                " (no manifest: provenance unknown)")]
    counts: dict[str, int] = {}
    for label, g in graders:
        res = run_agreement(Path(agreement), g, invalid=invalid)
        out["graders"][label] = {k: v for k, v in res.items() if k != "disagreements"}
        notes.append(_agreement_line(res, label))
        sent = getattr(g, "sent_to_judge", None)
        if sent is not None:
            notes[-1] += f"; {sent} of {res['n'] + res['errors']} answers sent to the judge"
            counts["sent_to_judge"] = sent
    counts["labels"] = out["graders"]["offline grader (lexical)"]["n"]
    _mkdir(out_dir)
    write_text(out_dir / "agreement.json", json.dumps(out, indent=2, ensure_ascii=False))
    return StageReport(stage="grade", counts=counts, outputs={"agreement": str(out_dir / "agreement.json")},
                       notes=notes)


def _stale(manifest: Any, staleness: Any, allow: bool, folder: Path) -> str | None:
    stale = staleness(manifest)
    if stale and not allow:
        raise UserError(f"the verdicts in {folder} are stale ({stale}): not scored; record them again for the "
                        "current judge prompt (or pass --allow-stale to see the old figures, labeled stale)")
    return stale


def _offline() -> Grader:
    return make_grader("lexical")


def _cascade(judge: Grader) -> Grader:
    from eval_diagnosis.graders.cascade import CascadeGrader

    return CascadeGrader(_offline(), judge)
