"""``reprodiag build``: the published datasets (SFT, DPO, diagnosis eval) from scored records.

Input: kept records (``store.iter_scored(kept_only=True)``), each passed through
:func:`reprodiag.redact.redact_record` before any of its text reaches a dataset, plus replay verdicts
(``store.iter_verdicts()``, matched on ``thread_id``; ``verified`` = a confirmed verdict).

Eval repositories are carved out first: a repository whose records feed the eval set contributes
nothing to SFT/DPO (in any split), so training and eval are repository-disjoint. Records of the
``filtered`` temporal tier never reach SFT/DPO. SFT/DPO splits follow the record's ``split``
(train/validation/test, assigned by scoring per repository; missing → train).

Output (``OUT``): ``sft/``, ``dpo/``, ``eval/`` (``DatasetDict.save_to_disk`` plus
``<split>.parquet``) and ``README.md`` (dataset card). The whole directory is built under a
temporary name and renamed into place, so a killed build leaves the previous ``OUT`` intact.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprodiag import console as out
from reprodiag.errors import UserError
from reprodiag.schema import ERROR_TYPES, EvalItem, Record, StageReport
from reprodiag.store import Store

MARKER = ".reprodiag-build"
SPLITS = ("train", "validation", "test")
MAX_EVAL_SHARE = 0.34
EVAL_QUESTION = ("List the most likely diagnosis directions for this gap, most likely first, one per numbered "
                 "line, each with a short justification. No fix is needed.")
SYSTEM_PROMPT = ("You are an experienced machine-learning researcher. Someone cannot reproduce a number reported "
                 "in a paper. Reason from the symptom through the plausible hypotheses to the most likely root "
                 "cause, say how to verify it, and how to fix it. If the evidence is not conclusive, say so and "
                 "name what to check next.")

#: Plausible but wrong directions per error type (direction, fix), for DPO pairs without a refuted hypothesis.
WRONG_DIRECTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "hyperparameter": (
        ("the learning rate is too high for your batch size", "lower the learning rate by 2-4x and retrain"),
        ("the warmup is too short, so early training diverges", "use a longer linear warmup"),
        ("training ran for too few epochs", "train for the full schedule of the paper"),
    ),
    "data": (
        ("the input normalization constants (mean/std) differ from the paper's", "use the paper's normalization"),
        ("you are evaluating on a different split or dataset release", "switch to the split the paper used"),
        ("the preprocessing (resize/crop) differs from the paper's", "match the paper's preprocessing pipeline"),
    ),
    "evaluation_protocol": (
        ("the metric is computed with a different script or version", "use the paper's evaluation script"),
        ("decoding settings (beam size, length penalty) differ", "use the paper's beam size and length penalty"),
        ("the paper used test-time augmentation", "enable multi-crop / flip test-time augmentation"),
    ),
    "framework_version": (
        ("a newer PyTorch version changed a default behaviour", "pin the framework version used by the paper"),
        ("a library upgrade changed the numerics of a layer", "downgrade the library to the paper's version"),
    ),
    "seed_hardware": (
        ("random seed variance: the paper reports a lucky run", "average over several seeds"),
        ("mixed precision (FP16) numerics lose accuracy", "train in FP32 or use bf16"),
        ("multi-GPU nondeterminism changes the result", "enable deterministic algorithms"),
    ),
}


# --------------------------------------------------------------------------- pure parts


@dataclass(frozen=True)
class EvalCarve:
    """Which records go to eval, which leave training with their repository, and which remain for training."""

    eval_records: list[Record]
    eval_repos: frozenset[str]
    held_out: list[Record]
    train_records: list[Record]
    shortfall: dict[str, int] = field(default_factory=dict)


def eval_eligible(r: Record) -> bool:
    """A record can become an eval item: one of the five types and a known root cause."""
    if r.error_type not in ERROR_TYPES or not (r.root_cause or "").strip():
        return False
    return r.is_resolved or r.resolution_type == "resolved" or any(h.outcome == "confirmed"
                                                                  for h in r.hypothesis_chain)


def carve_eval(records: list[Record], *, per_type_min: int, per_type_max: int, seed: int,
               max_share: float = MAX_EVAL_SHARE) -> EvalCarve:
    """Pick eval repositories (seeded order): those scoring put in the test split, then others, while they
    help a type below ``per_type_min``; then more test-split repositories while a type is below
    ``per_type_max``. Repositories taken for eval
    may hold at most ``max_share`` of all records (so a small corpus keeps training data); the
    ``shortfall`` maps each type to the items it lacks below ``per_type_min``."""
    per_type_max = max(per_type_max, 1)
    by_repo: dict[str, list[Record]] = {}
    for r in records:
        by_repo.setdefault(r.repo, []).append(r)
    elig = {repo: [r for r in rs if eval_eligible(r)] for repo, rs in by_repo.items()}
    rng = random.Random(seed)
    test_repos = sorted(repo for repo, rs in by_repo.items() if sum(r.split == "test" for r in rs) * 2 > len(rs))
    other = sorted(set(by_repo) - set(test_repos))
    rng.shuffle(test_repos)
    rng.shuffle(other)
    budget = max_share * len(records)
    counts: Counter[str] = Counter()
    used = 0
    taken: list[str] = []

    def gain(repo: str, ceiling: int) -> int:
        have = Counter(r.error_type for r in elig[repo])
        return sum(min(n, max(0, ceiling - counts[t])) for t, n in have.items())

    passes = ((test_repos, per_type_min), (other, per_type_min), (test_repos, per_type_max))
    for repos, ceiling in passes:
        for repo in repos:
            if repo in taken or not elig[repo] or gain(repo, ceiling) == 0:
                continue
            cost = len(by_repo[repo])
            if used + cost > budget:
                continue
            taken.append(repo)
            used += cost
            for r in elig[repo]:
                counts[r.error_type] += 1
    eval_recs: list[Record] = []
    held: list[Record] = []
    per_type: Counter[str] = Counter()
    for repo in sorted(taken):
        for r in sorted(by_repo[repo], key=lambda x: x.thread_id):
            if eval_eligible(r) and per_type[r.error_type] < per_type_max:
                eval_recs.append(r)
                per_type[r.error_type] += 1
            else:
                held.append(r)
    taken_set = frozenset(taken)
    train = [r for r in records if r.repo not in taken_set]
    shortfall = {t: per_type_min - per_type[t] for t in ERROR_TYPES if per_type[t] < per_type_min}
    return EvalCarve(eval_recs, taken_set, held, train, shortfall)


def _num(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:g}"


def symptom_text(r: Record) -> str:
    """``"BLEU: obtained 26.1, paper reports 28.4 (gap -2.3)"``, else the problem statement's start."""
    s = r.symptom
    text = " ".join((r.problem_statement or "").split())
    text = text[:300] + ("…" if len(text) > 300 else "")
    if s.metric and s.paper_value is not None and s.obtained_value is not None:
        gap = s.gap if s.gap is not None else s.obtained_value - s.paper_value
        return f"{s.metric}: obtained {_num(s.obtained_value)}, paper reports {_num(s.paper_value)} (gap {gap:+.4g})"
    if s.metric and (s.paper_value is not None or s.obtained_value is not None or s.gap is not None):
        known = [f"paper reports {_num(s.paper_value)}" if s.paper_value is not None else "",
                 f"obtained {_num(s.obtained_value)}" if s.obtained_value is not None else "",
                 f"gap {s.gap:+.4g}" if s.gap is not None else ""]
        head = f"{s.metric}: " + ", ".join(k for k in known if k)
        return head + (f". {text}" if text else "")
    return text


def environment_text(r: Record) -> str:
    if r.environment:
        return r.environment
    return ", ".join(f"{k} {v}" for k, v in sorted(r.temporal_tag.framework_versions.items()))


def paper_text(r: Record, paper_titles: dict[str, str]) -> str:
    return r.paper or paper_titles.get(r.repo) or r.repo


def user_message(r: Record, paper_titles: dict[str, str]) -> str:
    lines = [f"I am trying to reproduce a result of {paper_text(r, paper_titles)} (code: {r.repo})."]
    env = environment_text(r)
    if env:
        lines.append(f"Environment: {env}")
    lines.append(f"Symptom: {symptom_text(r) or 'the number does not match the paper'}")
    if r.tried:
        lines.append(f"What I tried: {r.tried}")
    ps = " ".join((r.problem_statement or "").split())
    if ps:
        lines += ["", ps[:1500] + ("…" if len(ps) > 1500 else "")]
    lines += ["", "What is the most likely cause of the gap, and how do I fix it?"]
    return "\n".join(lines)


#: One-line gloss of each error type, opening every diagnosis.
TYPE_GLOSS: dict[str, str] = {
    "hyperparameter": "a training hyperparameter (learning rate, warmup, schedule, batch-size scaling, epochs)",
    "data": "the data (dataset version or split, preprocessing, normalization, tokenization of inputs)",
    "evaluation_protocol": "the evaluation protocol (metric implementation or version, decoding, test-time "
                           "settings, post-processing)",
    "framework_version": "a framework or library version (a changed default or behaviour)",
    "seed_hardware": "seeds or hardware (run-to-run variance, multi-GPU nondeterminism, precision, GPU type)",
    "other": "a cause outside the five usual categories",
}


def _same(a: str, b: str) -> bool:
    """Whether two texts say the same thing (one contains the other, whitespace- and case-insensitive)."""
    x, y = " ".join(a.lower().split()), " ".join(b.lower().split())
    return bool(x) and bool(y) and (x in y or y in x)


def diagnosis_text(r: Record) -> str | None:
    """The thread's expert reasoning as one assistant turn (None when there is nothing to teach).

    Order: the category, the hypotheses (ruled out, confirmed, still open), the cause (stated as
    unconfirmed when the thread did not confirm it), the fix, and how to verify it against the paper."""
    hyps = [h for h in r.hypothesis_chain if h.text.strip()]
    root = (r.root_cause or "").strip()
    if not root and not hyps:
        return None
    resolved = r.resolution_type == "resolved" or r.is_resolved
    parts: list[str] = [f"This looks like a problem with {TYPE_GLOSS.get(r.error_type, TYPE_GLOSS['other'])}."]
    fix = (r.resolution or "").strip()
    shown = [h for h in hyps if not (root and _same(h.text, root)) and not (fix and _same(h.text, fix))]
    for outcome, title in (("refuted", "Ruled out"), ("confirmed", "Checked and confirmed"),
                           ("untested", "Worth checking")):
        group = [h.text.strip() for h in shown if h.outcome == outcome]
        if group:
            parts += ["", f"{title}:"] + [f"- {t}" for t in group]
    if root:
        label = "Root cause" if resolved else "Most likely cause (not confirmed in the thread)"
        parts += ["", f"{label}: {root}"]
        if r.resolution:
            parts.append(f"Fix: {r.resolution.strip()}")
    else:
        open_h = [h.text.strip() for h in hyps if h.outcome != "refuted"]
        parts += ["", "The evidence does not explain the gap yet."]
        if open_h:
            parts.append("Most promising open directions: " + "; ".join(open_h[:3]))
    parts += ["", _verify_line(r)]
    return "\n".join(parts).strip()


def is_verified(r: Record, confirmed_threads: set[str]) -> bool:
    return r.thread_id in confirmed_threads or (r.replay is not None and r.replay.verdict == "confirmed")


def sft_row(r: Record, *, confirmed_threads: set[str], paper_titles: dict[str, str]) -> dict[str, Any] | None:
    """One TRL conversational example (None when the record teaches no diagnosis)."""
    diag = diagnosis_text(r)
    if diag is None:
        return None
    return {
        "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                     {"role": "user", "content": user_message(r, paper_titles)},
                     {"role": "assistant", "content": diag}],
        "weight": float(r.temporal_tag.weight),
        "verified": is_verified(r, confirmed_threads),
        "error_type": r.error_type,
        "thread_id": r.thread_id,
        "repo": r.repo,
        "created_year": r.temporal_tag.created_year,
        "resolution_type": r.resolution_type,
        "tier": r.temporal_tag.tier,
    }


def _pick(options: tuple[tuple[str, str], ...] | list[Any], key: str) -> Any:
    h = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return options[h % len(options)]


def _verify_line(r: Record) -> str:
    s = r.symptom
    if s.metric and s.paper_value is not None:
        return (f"How to verify: change one thing at a time and rerun; {s.metric} should move to within the usual "
                f"run-to-run spread of the paper's {_num(s.paper_value)}"
                + (f" (now {_num(s.obtained_value)})." if s.obtained_value is not None else "."))
    return "How to verify: change one thing at a time against the paper's exact setup and rerun."


def rejected_text(r: Record, seed: int) -> str:
    """A wrong diagnosis in the same shape as the chosen one (so a preference model learns content, not format):
    a hypothesis the thread refuted, else a plausible direction of another error type."""
    refuted = [h.text.strip() for h in r.hypothesis_chain if h.outcome == "refuted" and h.text.strip()]
    if refuted:
        gloss = TYPE_GLOSS.get(r.error_type, TYPE_GLOSS["other"])
        cause, fix = refuted[0], "correct this setting and rerun; that should close the gap."
    else:
        others = [t for t in ERROR_TYPES if t != r.error_type]
        t = _pick(others, f"{seed}:{r.thread_id}:type")
        direction, fix_text = _pick(WRONG_DIRECTIONS[t], f"{seed}:{r.thread_id}:dir")
        gloss, cause, fix = TYPE_GLOSS[t], direction[:1].upper() + direction[1:] + ".", fix_text + "."
    return "\n".join([f"This looks like a problem with {gloss}.", "", f"Root cause: {cause}", f"Fix: {fix}", "",
                      _verify_line(r)])


def dpo_row(r: Record, *, confirmed_threads: set[str], paper_titles: dict[str, str], seed: int
            ) -> dict[str, Any] | None:
    """A preference pair, or None: unresolved threads qualify only when a hypothesis was refuted."""
    refuted = any(h.outcome == "refuted" for h in r.hypothesis_chain)
    has_confirmed = bool((r.root_cause or "").strip()) or any(h.outcome == "confirmed" for h in r.hypothesis_chain)
    resolved = r.is_resolved or r.resolution_type == "resolved"
    if not (resolved and has_confirmed) and not refuted:
        return None
    chosen = diagnosis_text(r)
    if chosen is None:
        return None
    rejected = rejected_text(r, seed)
    if " ".join(rejected.split()) == " ".join(chosen.split()):
        return None
    return {
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT},
                   {"role": "user", "content": user_message(r, paper_titles)}],
        "chosen": [{"role": "assistant", "content": chosen}],
        "rejected": [{"role": "assistant", "content": rejected}],
        "weight": float(r.temporal_tag.weight),
        "verified": is_verified(r, confirmed_threads),
        "error_type": r.error_type,
        "thread_id": r.thread_id,
        "repo": r.repo,
        "created_year": r.temporal_tag.created_year,
        "rejected_source": "refuted_hypothesis" if refuted else "other_error_type",
    }


def eval_item(r: Record, *, paper_titles: dict[str, str]) -> EvalItem:
    from eval_diagnosis.directions import acceptable_directions
    from eval_diagnosis.graders.concept_features import gold_concepts

    confirmed = [h.text.strip() for h in r.hypothesis_chain if h.outcome == "confirmed" and h.text.strip()]
    root = (r.root_cause or "").strip()
    accept = acceptable_directions(root, r.error_type, extra=confirmed)
    return EvalItem(
        id="rd-" + hashlib.sha256(r.thread_id.encode("utf-8")).hexdigest()[:12],
        error_type=r.error_type,
        environment=environment_text(r),
        paper=paper_text(r, paper_titles),
        symptom=symptom_text(r),
        tried=r.tried or "",
        question=EVAL_QUESTION,
        gold_root_cause=root,
        acceptable_directions=accept,
        gold_concepts=gold_concepts(root, accept, r.error_type),
        source_thread=r.thread_id,
        created_year=r.temporal_tag.created_year,
    )


# --------------------------------------------------------------------------- datasets


def _features(name: str) -> Any:
    from datasets import Features, Value

    msg = [{"role": Value("string"), "content": Value("string")}]
    common = {"weight": Value("float64"), "verified": Value("bool"), "error_type": Value("string"),
              "thread_id": Value("string"), "repo": Value("string"), "created_year": Value("int64")}
    if name == "sft":
        return Features({"messages": msg, **common, "resolution_type": Value("string"), "tier": Value("string")})
    if name == "dpo":
        return Features({"prompt": msg, "chosen": msg, "rejected": msg, **common,
                         "rejected_source": Value("string")})
    return Features({"id": Value("string"), "error_type": Value("string"), "environment": Value("string"),
                     "paper": Value("string"), "symptom": Value("string"), "tried": Value("string"),
                     "question": Value("string"), "gold_root_cause": Value("string"),
                     "acceptable_directions": [Value("string")], "gold_concepts": [Value("string")],
                     "source_thread": Value("string"), "created_year": Value("int64")})


def _save(name: str, splits: dict[str, list[dict[str, Any]]], root: Path) -> dict[str, int]:
    from datasets import Dataset, DatasetDict, disable_progress_bars

    disable_progress_bars()
    feats = _features(name)
    dd = DatasetDict({s: Dataset.from_list(rows, features=feats) if rows else
                      Dataset.from_dict({k: [] for k in feats}, features=feats) for s, rows in splits.items()})
    target = root / name
    dd.save_to_disk(str(target), num_shards={s: 1 for s in dd})
    for s, ds in dd.items():
        ds.to_parquet(str(target / f"{s}.parquet"))
    return {s: len(rows) for s, rows in splits.items()}


def _by_split(rows: list[tuple[str | None, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    out_: dict[str, list[dict[str, Any]]] = {"train": []}
    for split, row in rows:
        s = split if split in SPLITS else "train"
        out_.setdefault(s, []).append(row)
    return {s: out_[s] for s in SPLITS if s in out_}


# --------------------------------------------------------------------------- card


def _card(*, funnel: dict[str, int], sizes: dict[str, dict[str, int]], tiers: Counter[str],
          resolution: Counter[str], eval_types: Counter[str], shortfall: dict[str, int], per_type_min: int,
          per_type_max: int, seed: int, eval_repos: int, verified: int) -> str:
    cfg = []
    for name, splits in sizes.items():
        cfg.append(f"- config_name: {name}\n  data_files:")
        cfg += [f"  - split: {s}\n    path: {name}/{s}.parquet" for s in splits]
    funnel_rows = "\n".join(f"| {k} | {v} |" for k, v in funnel.items())
    tier_rows = "\n".join(f"| {t} | {tiers.get(t, 0)} |" for t in ("current", "historical", "filtered"))
    res_rows = "\n".join(f"| {t} | {n} |" for t, n in sorted(resolution.items()))
    type_rows = "\n".join(f"| {t} | {eval_types.get(t, 0)} |" for t in ERROR_TYPES)
    split_rows = "\n".join(f"| {n} | " + ", ".join(f"{s}: {c}" for s, c in sp.items()) + " |" for n, sp in sizes.items())
    short = ""
    if shortfall:
        short = ("\n**Small corpus:** the eval set holds fewer than the requested "
                 f"{per_type_min} items for: " + ", ".join(f"{t} (missing {n})" for t, n in sorted(shortfall.items()))
                 + ". It takes what exists; confidence intervals are wide.\n")
    return f"""---
license: other
license_name: github-content-mixed
task_categories:
- text-generation
- question-answering
language:
- en
tags:
- reproducibility
- machine-learning
- diagnosis
- github-issues
pretty_name: reprodiag paper-reproduction diagnoses
size_categories:
- n<1K
configs:
{chr(10).join(cfg)}
---

# reprodiag: why a paper's number did not reproduce

Threads from the GitHub Issues and Discussions of machine-learning paper repositories in which someone
could not reproduce a reported number, turned into structured diagnoses (symptom → hypotheses → root
cause → fix) by [reprodiag](https://github.com/). Three configurations:

- `sft`: TRL conversational format (`messages`: system, user, assistant). The assistant turn is the
  thread's expert reasoning. Extra columns: `weight` (temporal tier weight; use it as a per-sample loss
  weight), `verified` (a sandbox replay confirmed the fix), `error_type`, `thread_id`, `repo`, `created_year`.
- `dpo`: `prompt` / `chosen` / `rejected` (conversational). `chosen` is the confirmed diagnosis;
  `rejected` is a hypothesis the thread refuted (`rejected_source = refuted_hypothesis`) or a plausible
  direction of another error type (`other_error_type`). Unresolved threads appear only when a hypothesis
  was refuted.
- `eval`: diagnosis benchmark items (`reprodiag eval --eval-set eval/`), stratified over the five
  root-cause types ({per_type_min}–{per_type_max} requested per type, seed {seed}), from {eval_repos}
  repositories that appear in no SFT/DPO split (repository-disjoint).

## Provenance and filtering funnel (this build)

| stage | count |
| --- | --- |
{funnel_rows}

Sizes per split:

| config | rows |
| --- | --- |
{split_rows}

Eval items per error type:

| error type | items |
| --- | --- |
{type_rows}
{short}
Replay-verified training records: {verified}.

## Temporal tiers (kept records)

Framework-specific advice ages: **current** (2022+, or not framework-bound) is included at weight 1,
**historical** (2020–2021, framework-bound) is included down-weighted, **filtered** (before 2020 and
framework-bound) is excluded from SFT/DPO.

| tier | records |
| --- | --- |
{tier_rows}

## Resolved / unresolved mix (SFT)

| resolution type | rows |
| --- | --- |
{res_rows}

## Known limitations

- Diagnoses are extracted automatically (rules or an LLM) and grounded in quotes, but not all are
  checked by a human; `verified` marks the ones confirmed by a sandbox replay.
- Acceptable directions in `eval` are derived from the root cause and its error type (concept phrases
  plus key terms); the lexical grader is an approximation of human judgement.
- The corpus is skewed toward popular, English-language repositories; error-type shares follow what
  people report, not what happens.
- Secrets and personal data were redacted (user names replaced by role placeholders); report anything
  that slipped through.

## Terms of use

The text comes from public GitHub Issues and Discussions and remains subject to the
[GitHub Terms of Service](https://docs.github.com/en/site-policy/github-terms/github-terms-of-service)
and the rights of its authors; use it for research, and respect removal requests. Paper–code links come
from the Papers with Code archive (CC BY-SA 4.0). No license is granted beyond those terms.
"""


# --------------------------------------------------------------------------- edges


def _prepare_out(out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"output {out_dir} exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / MARKER).exists():
        raise UserError(f"output {out_dir} is not empty and is not a previous reprodiag build; "
                        "choose another --out (nothing was changed)")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {out_dir.parent}: {exc.strerror}") from None
    for stale in list(out_dir.parent.glob(f".{out_dir.name}.building-*")) + list(
            out_dir.parent.glob(f".{out_dir.name}.old-*")):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = out_dir.parent / f".{out_dir.name}.building-{os.getpid()}"
    tmp.mkdir()
    return tmp


def _swap_in(tmp: Path, out_dir: Path) -> None:
    if out_dir.exists():
        old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
        out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out_dir)


def _push(out_dir: Path, repo_id: str, token: str) -> None:
    from datasets import load_from_disk

    try:
        for name in ("sft", "dpo", "eval"):
            load_from_disk(str(out_dir / name)).push_to_hub(repo_id, config_name=name, token=token)
        from huggingface_hub import HfApi

        HfApi(token=token).upload_file(path_or_fileobj=str(out_dir / "README.md"), path_in_repo="README.md",
                                       repo_id=repo_id, repo_type="dataset")
    except Exception as exc:  # noqa: BLE001 - any hub failure is reported in one line, token scrubbed
        msg = " ".join(str(exc).split())[:200].replace(token, "***")
        raise UserError(f"push to the hub ({repo_id}) failed: {type(exc).__name__}: {msg}") from None


def run_build(store: Store, out_dir: Path, *, per_type_min: int, per_type_max: int, seed: int,
              push_to_hub: str | None) -> StageReport:
    """Build sft/dpo/eval into ``out_dir`` (replaced atomically) and optionally push them to the hub."""
    from reprodiag.redact import redact_record, redact_text

    if per_type_min > per_type_max:
        raise UserError(f"--per-type-min ({per_type_min}) is larger than --per-type-max ({per_type_max})")
    token = None
    if push_to_hub is not None:
        if push_to_hub.count("/") != 1 or not all(push_to_hub.split("/")):
            raise UserError(f"--push-to-hub must look like ORG/NAME, got {push_to_hub!r}")
        token = os.environ.get("HF_TOKEN", "").strip()
        if not token:
            raise UserError("--push-to-hub needs HF_TOKEN in the environment (a Hugging Face write token)")
    out_dir = Path(out_dir)

    kept = [redact_record(r)[0] for r in store.iter_scored(kept_only=True)]
    confirmed_threads = {v.thread_id for v in store.iter_verdicts() if v.thread_id and v.verdict == "confirmed"}
    paper_titles: dict[str, str] = {}
    for repo in sorted({r.repo for r in kept}):
        titles = [p["paper_title"] for p in store.papers_for(repo) if p.get("paper_title")]
        if titles:
            paper_titles[repo] = redact_text(titles[0])
    usable = [r for r in kept if r.duplicate_of is None]
    carve = carve_eval(usable, per_type_min=per_type_min, per_type_max=per_type_max, seed=seed)
    train_recs = [r for r in carve.train_records if r.temporal_tag.tier != "filtered"]

    sft_rows: list[tuple[str | None, dict[str, Any]]] = []
    dpo_rows: list[tuple[str | None, dict[str, Any]]] = []
    for r in train_recs:
        row = sft_row(r, confirmed_threads=confirmed_threads, paper_titles=paper_titles)
        if row is not None:
            sft_rows.append((r.split, row))
        pair = dpo_row(r, confirmed_threads=confirmed_threads, paper_titles=paper_titles, seed=seed)
        if pair is not None:
            dpo_rows.append((r.split, pair))
    items = [eval_item(r, paper_titles=paper_titles).model_dump(mode="json") for r in carve.eval_records]

    funnel = {
        "threads mined": store.count("threads"),
        "relevant (filter)": store.count("decisions", "is_reproduction=1"),
        "records (extract)": store.count("records"),
        "kept (score)": store.count("scored", "keep=1"),
        "sft rows": len(sft_rows),
        "dpo pairs": len(dpo_rows),
        "eval items": len(items),
    }
    tmp = _prepare_out(out_dir)
    try:
        sizes = {
            "sft": _save("sft", _by_split(sft_rows), tmp),
            "dpo": _save("dpo", _by_split(dpo_rows), tmp),
            "eval": _save("eval", {"test": items}, tmp),
        }
        card = _card(funnel=funnel, sizes=sizes, tiers=Counter(r.temporal_tag.tier for r in kept),
                     resolution=Counter(row["resolution_type"] for _s, row in sft_rows),
                     eval_types=Counter(i["error_type"] for i in items), shortfall=carve.shortfall,
                     per_type_min=per_type_min, per_type_max=per_type_max, seed=seed,
                     eval_repos=len(carve.eval_repos), verified=sum(row["verified"] for _s, row in sft_rows))
        (tmp / "README.md").write_text(card, encoding="utf-8")
        (tmp / MARKER).write_text("reprodiag build output; safe to replace with `reprodiag build`\n",
                                  encoding="utf-8")
        _swap_in(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    notes = []
    if carve.shortfall:
        notes.append("small corpus: eval has fewer than --per-type-min items for "
                     + ", ".join(f"{t} ({per_type_min - n} of {per_type_min})" for t, n in
                                 sorted(carve.shortfall.items())) + "; took what exists (see README.md)")
    if token is not None and push_to_hub is not None:
        _push(out_dir, push_to_hub, token)
        notes.append(f"pushed to https://huggingface.co/datasets/{push_to_hub}")
    out.info(f"build: {len(sft_rows)} sft, {len(dpo_rows)} dpo, {len(items)} eval → {out_dir}")
    counts = {**funnel, "eval repositories": len(carve.eval_repos),
              "held out with eval repos": len(carve.held_out),
              "filtered tier (excluded)": sum(r.temporal_tag.tier == "filtered" for r in carve.train_records),
              **{f"eval {t}": sum(i["error_type"] == t for i in items) for t in ERROR_TYPES}}
    return StageReport(stage="build", counts=counts, notes=notes,
                       outputs={"sft": str(out_dir / "sft"), "dpo": str(out_dir / "dpo"),
                                "eval": str(out_dir / "eval"), "card": str(out_dir / "README.md")})
