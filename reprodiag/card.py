"""The dataset card (``README.md`` of a build): provenance, funnel, what was left out and why, what was
replaced in the text, and the audit summary of this very build."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from reprodiag.mixes import TARGET_RESOLVED_SHARE, MixFacts
from reprodiag.schema import ERROR_TYPES

if TYPE_CHECKING:
    from reprodiag.review.agreement import FieldAgreement, ReviewFacts


def project_url() -> str | None:
    """The project's repository URL from the installed package metadata (``Project-URL``), or None."""
    from importlib import metadata

    try:
        md = metadata.metadata("reprodiag")
    except metadata.PackageNotFoundError:
        return None
    for entry in md.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("repository", "source", "homepage", "code") and url.strip().startswith("http"):
            return url.strip()
    home = md.get("Home-page")
    return home if home and home.startswith("http") else None


@dataclass(frozen=True)
class CardFacts:
    """Everything the card states about one build (counts are of this build's output)."""

    funnel: dict[str, int]
    sizes: dict[str, dict[str, int]]
    tiers: Counter[str]
    resolution: Counter[str]
    eval_types: Counter[str]
    shortfall: dict[str, int]
    per_type_min: int
    per_type_max: int
    seed: int
    eval_repos: int
    verified: int
    left_out: dict[str, int] = field(default_factory=dict)
    rejected_sources: Counter[str] = field(default_factory=Counter)
    eval_after: datetime | None = None
    audit_lines: list[str] = field(default_factory=list)
    #: Records of this build (training and eval) by extractor backend.
    extractors: Counter[str] = field(default_factory=Counter)
    #: dataset (sft, dpo, eval) → reader ("llm", "offline") → rows
    readers: dict[str, Counter[str]] = field(default_factory=dict)
    #: reader → extractor models behind its records ("openai:gpt-5-mini") → records
    reader_models: dict[str, Counter[str]] = field(default_factory=dict)
    #: reader → what it was measured to do (one line; :mod:`extract.measured`)
    reader_figures: dict[str, str] = field(default_factory=dict)
    #: ``build --eval-from``: "llm" (eval items from LLM-read records only) or "offline"
    eval_from: str = "llm"
    #: people's reviews (``reprodiag review``); None when the workspace holds none
    review: ReviewFacts | None = None
    #: SFT mix name (``sft_resolved``, ``sft_full``) → its rows and resolution mix (:mod:`reprodiag.mixes`)
    mixes: dict[str, MixFacts] = field(default_factory=dict)


def dataset_card(f: CardFacts) -> str:
    cfg = []
    for name, splits in f.sizes.items():
        cfg.append(f"- config_name: {name}\n  data_files:")
        cfg += [f"  - split: {s}\n    path: {name}/{s}.parquet" for s in splits]
    funnel_rows = "\n".join(f"| {k} | {v} |" for k, v in f.funnel.items())
    tier_rows = "\n".join(f"| {t} | {f.tiers.get(t, 0)} |" for t in ("current", "historical", "filtered"))
    res_rows = "\n".join(f"| {t} | {n} |" for t, n in sorted(f.resolution.items()))
    type_rows = "\n".join(f"| {t} | {f.eval_types.get(t, 0)} |" for t in ERROR_TYPES)
    split_rows = "\n".join(f"| {n} | " + ", ".join(f"{s}: {c}" for s, c in sp.items()) + " |"
                           for n, sp in f.sizes.items())
    left_rows = "\n".join(f"| {k} | {v} |" for k, v in sorted(f.left_out.items())) or "| (none) | 0 |"
    rej_rows = ", ".join(f"{k}: {v}" for k, v in sorted(f.rejected_sources.items())) or "none"
    short = ""
    if f.shortfall:
        short = ("\n**Small corpus:** the eval set holds fewer than the requested "
                 f"{f.per_type_min} items for: "
                 + ", ".join(f"{t} (missing {n})" for t, n in sorted(f.shortfall.items()))
                 + ". It takes what exists; confidence intervals are wide.\n")
    url = project_url()
    tool = f"[reprodiag]({url})" if url else "reprodiag (no public repository URL in the package metadata)"
    if f.eval_after is not None:
        split_note = (f"**Time split (contamination control):** threads created after "
                      f"{f.eval_after.isoformat()} are in `eval` only; older threads are in `sft`/`dpo` only. "
                      "Refresh the benchmark by building again with a later cut-off.")
    else:
        split_note = "No time cut-off was set (`reprodiag build --eval-after DATE` sets one)."
    audit = "\n".join(f"- {ln}" for ln in f.audit_lines) or "- (audit not run)"
    extractor_rows = ", ".join(f"{k}: {v}" for k, v in sorted(f.extractors.items())) or "none"
    checked_note = '; what people checked, under "Checked by people"' if f.review else ""
    readers_section = "\n".join(x for x in (_readers_section(f), review_section(f.review)) if x)
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
cause → fix) by {tool}. {_count_word(len(f.sizes))} configurations, each loadable by name
(`load_dataset("PATH_OR_REPO", "sft_full")`) or per folder (`load_from_disk("PATH/sft_full")`):

- `sft`: TRL conversational format (`messages`: system, user, assistant). The user turn holds only what
  the asker knew before the diagnosis: the title and their opening post (quoted replies, e-mail quotes,
  template comments, images and later "EDIT: solved" notes removed; cut at a paragraph or sentence end),
  and values and "what I tried" only from the asker's posts before the first reply. The assistant turn
  is the thread's reasoning in complete sentences. Extra columns: `weight` (temporal tier weight; use it
  as a per-sample loss weight), `verified` (a sandbox replay confirmed the fix), `error_type`,
  `thread_id`, `repo`, `created_year`.
{_mix_bullets(f)}- `dpo`: `prompt` / `chosen` / `rejected` (conversational; the prompt asks for the cause). Both answers
  are rendered the same way from real thread content: `refuted_hypothesis` = the thread's refuted
  hypothesis presented as the cause with the true cause ruled out; `other_thread` = the confirmed
  diagnosis of another thread of a different error type (same metric preferred, similar length), its
  verify line rewritten for this symptom; one donor serves at most two pairs. This build: {rej_rows}.
- `eval`: diagnosis benchmark items (`reprodiag eval --eval-set eval/`), stratified over the five
  root-cause types ({f.per_type_min}–{f.per_type_max} requested per type, seed {f.seed}), from
  {f.eval_repos} repositories that appear in no SFT/DPO split (repository-disjoint). Every gold root cause
  is a declarative sentence.

{split_note}

{_mixes_section(f, n_dpo=sum(f.sizes.get("dpo", {}).values()))}## Provenance and filtering funnel (this build)

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
Replay-verified training records: {f.verified}.

Left out, with the reason:

| reason | records |
| --- | --- |
{left_rows}

{readers_section}
## Audit of this build (`audit.json`)

{audit}

## Names and personal data

Replaced in every text column: GitHub logins of the thread's participants in author fields, as
`@mentions` and as bare words, by role placeholders `asker_0`, `maintainer_0`, `contributor_0`, `bot_0`
(numbered per thread in order of appearance; people only @mentioned become `user_0`); names in greetings
and sign-offs ("Hi Li Wei", "Thanks,\\nAnna") by the addressed or writing role's placeholder; e-mail
addresses, tokens and keys, IP addresses and user names in home paths by `[REDACTED_<KIND>]`. Display
names are not mined, so a display name written elsewhere in prose is not recognised; report anything that
slipped through.

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

- Diagnoses are extracted automatically (records by extractor: {extractor_rows}) and grounded in quotes,
  but not all are checked by a human; `verified` marks the ones confirmed by a sandbox replay. How well
  each reader reads is under "Who read the threads"{checked_note}.
- Acceptable directions in `eval` are derived from the root cause and its error type (concept phrases
  plus key terms); the lexical grader is an approximation of human judgement.
- The corpus is skewed toward popular, English-language repositories; error-type shares follow what
  people report, not what happens.

## Terms of use

The text comes from public GitHub Issues and Discussions and remains subject to the
[GitHub Terms of Service](https://docs.github.com/en/site-policy/github-terms/github-terms-of-service)
and the rights of its authors; use it for research, and respect removal requests. Paper–code links come
from the Papers with Code archive (CC BY-SA 4.0). No license is granted beyond those terms.
"""


def _count_word(n: int) -> str:
    words = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    return words.get(n, str(n))


def _mix_bullets(f: CardFacts) -> str:
    """The card's bullets for the SFT mixes of this build ("" when it has none)."""
    if not f.mixes:
        return ""
    share = 1 - TARGET_RESOLVED_SHARE
    out = []
    if "sft_resolved" in f.mixes:
        out.append("- `sft_resolved`: the `sft` rows of resolved threads only (same columns).\n")
    if "sft_full" in f.mixes:
        out.append("- `sft_full`: the `sft` rows of resolved and unresolved-valuable threads (same columns), at\n"
                   f"  most {share:.0%} unresolved-valuable: the target mix.\n")
    return "".join(out)


def _mix_cell(res: Counter[str]) -> str:
    n = sum(res.values())
    return ", ".join(f"{t} {k} ({k / n:.0%})" for t, k in sorted(res.items())) if n else "no rows"


def _mixes_section(f: CardFacts, *, n_dpo: int) -> str:
    """"Training mixes": each configuration mapped to the proposal's experiment group, with this build's rows
    and resolution mix, and the proposal's expected hit rates (said to be expectations)."""
    if not f.mixes:
        return ""

    def rows(name: str) -> str:
        sp = f.sizes.get(name, {})
        return ", ".join(f"{s}: {c}" for s, c in sp.items()) or "none"

    res = f.mixes.get("sft_resolved")
    full = f.mixes.get("sft_full")
    lines = ["## Training mixes and the proposal's experiment", "",
             "| experiment group | train on | rows (this build) | mix | hit rate the proposal expects |",
             "| --- | --- | --- | --- | --- |",
             "| baseline | nothing (the base model as it is) | – | – | ~40% |"]
    if res is not None:
        lines.append(f"| + resolved threads | `sft_resolved` | {rows('sft_resolved')} | {_mix_cell(res.resolution)} "
                     "| 55–60% |")
    if full is not None:
        lines.append(f"| + resolved and unresolved-valuable threads | `sft_full` | {rows('sft_full')} | "
                     f"{_mix_cell(full.resolution)} | 60–65% |")
    lines.append(f"| + DPO | `sft_full`, then `dpo` | {rows('dpo') if n_dpo else 'none'} | preference pairs | – |")
    capped = (f" {full.capped} unresolved-valuable row(s) were left out to hold it (a seeded choice)."
              if full is not None and full.capped else "")
    lines += ["", "Every group is measured on `eval` (`reprodiag eval --eval-set PATH/eval --model hf:CHECKPOINT`). "
              "The hit rates are the proposal's expectations, not measurements of this build. `sft_full` holds at "
              f"most {1 - TARGET_RESOLVED_SHARE:.0%} unresolved-valuable rows (the target mix: "
              f"{TARGET_RESOLVED_SHARE:.0%} resolved).{capped} `weight` (the temporal tier weight) is a per-sample "
              "loss weight a trainer may apply." + (f" `sft` also holds {f.resolution['unresolved']} row(s) of "
                                                    "unresolved threads without a valuable diagnosis, in neither mix."
                                                    if f.resolution.get("unresolved") else ""), "", ""]
    return "\n".join(lines)


def _readers_section(f: CardFacts) -> str:
    """Which reader (LLM or offline) produced each dataset's rows, the models behind them, and what each
    reader was measured to do; eval items of the offline reader are flagged."""
    names = sorted({r for c in f.readers.values() for r in c} | set(f.reader_models))
    if not names:
        return ""
    rows = "\n".join(f"| {ds} | " + (", ".join(f"{r}: {n}" for r, n in sorted(c.items()) if n) or "none") + " |"
                     for ds, c in f.readers.items())
    models = "; ".join(f"{r}: " + ", ".join(f"{m} ({n})" for m, n in sorted(f.reader_models.get(r, Counter()).items()))
                       for r in names if f.reader_models.get(r))
    figs = "\n".join(f"- {f.reader_figures[r]}" for r in names if r in f.reader_figures)
    out = ["## Who read the threads", "",
           "Each record was read by an LLM reader (the project's prompt, strict schema and quote check, fed by a "
           "model) or by the offline reader (rules and small learned models, no LLM). Rows per reader:", "",
           "| config | rows by reader |", "| --- | --- |", rows, "", f"Models behind the records: {models or 'none'}."]
    if figs:
        out += ["", "What each reader was measured to do on the frozen test part of the project's labeled "
                "real-thread corpus (200 threads it was not tuned on; `reprodiag bench extract`):", "", figs]
    n_off = f.readers.get("eval", Counter()).get("offline", 0)
    if f.eval_from == "llm":
        out += ["", "Eval items come from LLM-read records only (`build --eval-from offline` would admit the "
                "offline reader's)."]
    elif n_off:
        out += ["", f"**{n_off} eval item(s) come from the offline reader** (`build --eval-from offline`). Its "
                "eval_sound above is the share of such items whose gold is a cause the thread established, of "
                "the recorded type: check these items by hand before grading models with them."]
    return "\n".join(out) + "\n"


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _agreement_table(rows: list[FieldAgreement]) -> list[str]:
    out = ["| field | pairs | agreement | Cohen's kappa |", "| --- | --- | --- | --- |"]
    for r in rows:
        kap = r.kappa.fmt() if r.kappa is not None else "– (not categorical)"
        out.append(f"| {r.field} | {r.pairs} | {r.agreement.fmt()} | {kap} |")
    return out


def review_section(r: ReviewFacts | None) -> str:
    """"Checked by people": the reviewed share of the eval set per type, the workspace's decisions, and
    reader-vs-reviewer and reviewer-vs-reviewer agreement per field (empty when nothing was reviewed)."""
    if r is None:
        return ""
    n, k = r.total_eval, r.reviewed_eval
    if n and k == n:
        head = f"**Every eval item ({n}) was checked by a person**"
    else:
        head = f"**{k} of {n} eval items were checked by a person**"
    out = ["## Checked by people", "",
           head + " (accepted or edited in `reprodiag review serve`, or in Label Studio through `reprodiag review "
           "export` / `import`)." + (" This eval split holds reviewed items only (`build --reviewed-only`)."
                                     if r.reviewed_only else ""), "",
           "| error type | eval items | checked | share |", "| --- | --- | --- | --- |"]
    for t, total in r.eval_items.items():
        done = r.eval_reviewed.get(t, 0)
        out.append(f"| {t} | {total} | {done} | {done / total:.0%} |" if total else f"| {t} | 0 | 0 | – |")
    out += ["", f"Decisions in the workspace: {_n(r.items_reviewed, 'item')} reviewed by "
            f"{r.reviewers} {'person' if r.reviewers == 1 else 'people'} ({_n(sum(r.decisions.values()), 'decision')}: "
            + ", ".join(f"{r.decisions.get(d, 0)} {name}" for d, name in (("accept", "accepted"), ("edit", "edited"),
                                                                         ("reject", "rejected")))
            + "). A rejected eval item leaves the eval set; a reviewer's edited fields replace the reader's."
            + (f" {r.stale} decision(s) were made on a record that has been read again since and are not applied."
               if r.stale else "")]
    if r.reader_vs_reviewer:
        out += ["", "Reader vs reviewer, per field (one pair per reviewer and item they accepted or edited; 95% "
                "bootstrap intervals over items):", "", *_agreement_table(r.reader_vs_reviewer)]
    if r.reviewer_pairs:
        out += ["", f"Reviewer vs reviewer ({_n(r.reviewer_pairs, 'item')} decided by two or more people; every "
                "two of them, the fields on the items both kept):", "", *_agreement_table(r.reviewer_vs_reviewer)]
    else:
        out += ["", "Reviewer vs reviewer: no item was decided by two people yet."]
    return "\n".join(out) + "\n"
