"""The ``reprodiag`` command line: one Typer app, one short command per stage.

Each command parses its flags and calls one library function; stage packages
are imported lazily so ``reprodiag --help`` stays fast. User errors
(:class:`UserError`, malformed documents, unusable workspace, bad flags) print
one line and exit with code 2.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import Abort as _Abort
from typer import Exit as _Exit

try:  # typer >= 0.22 vendors its own click
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc

from reprodiag import console as out
from reprodiag.config import workspace_path
from reprodiag.errors import UserError

app = typer.Typer(
    name="reprodiag",
    help="Mine paper-reproduction threads from GitHub, diagnose them, replay fixes, build datasets and run "
    "the diagnosis benchmark.\n\nExample: reprodiag demo",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
bench_app = typer.Typer(help="Measure throughput and cost of a stage. Example: reprodiag bench score",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")
review_app = typer.Typer(help="People check eval items (and a sample of SFT rows) in a local page or in Label "
                         "Studio; build uses their decisions. Example: reprodiag review serve --reviewer ana",
                         no_args_is_help=True)
app.add_typer(review_app, name="review")

_state: dict[str, Any] = {"workspace": None}


class Effort(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


def _set_effort(effort: Effort | None) -> None:
    """``--reasoning-effort``: for OpenAI reasoning models (o-series, gpt-5), read by every OpenAI client of
    the run (extractor, eval runner, judge) through ``REPRODIAG_REASONING_EFFORT``."""
    if effort is not None:
        import os

        os.environ["REPRODIAG_REASONING_EFFORT"] = effort.value


class ApiKind(StrEnum):
    graphql = "graphql"
    rest = "rest"


class Backend(StrEnum):
    rules = "rules"
    openai = "openai"
    anthropic = "anthropic"
    openai_compatible = "openai-compatible"
    vllm = "vllm"


class EvalFrom(StrEnum):
    llm = "llm"
    offline = "offline"


class DemoReader(StrEnum):
    recorded = "recorded"
    rules = "rules"


class SandboxBackend(StrEnum):
    auto = "auto"
    bwrap = "bwrap"
    docker = "docker"
    podman = "podman"
    local = "local"


class ExportTable(StrEnum):
    threads = "threads"
    records = "records"
    verdicts = "verdicts"
    trajectories = "trajectories"
    scored = "scored"
    decisions = "decisions"
    repos = "repos"
    repo_status = "repo_status"
    rejects = "rejects"
    cases = "cases"
    runs = "runs"
    reviews = "reviews"


class Format(StrEnum):
    jsonl = "jsonl"
    parquet = "parquet"


def _store(create: bool = True):  # noqa: ANN202 - lazy import keeps --help fast
    from reprodiag.store import Store

    return Store(workspace_path(_state["workspace"]), create=create)


def _report(report: Any) -> None:
    """Print a StageReport as a small table (stdout stays machine-readable JSON with --quiet)."""
    from rich.table import Table

    if out.verbosity() == 0:
        print(json.dumps(report.model_dump(mode="json"), ensure_ascii=False))
        return
    table = Table(title=f"reprodiag {report.stage}", show_header=True)
    table.add_column("what")
    table.add_column("value", justify="right")
    for k, v in report.counts.items():
        table.add_row(k, str(v))
    for k, v in report.outputs.items():
        table.add_row(k, v)
    out.console.print(table)
    for note in report.notes:
        out.console.print(note, markup=False, highlight=False)


@app.callback()
def _main(
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", "-w", help="Workspace directory (env REPRODIAG_WORKSPACE).",
                     envvar="REPRODIAG_WORKSPACE"),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="More output.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only results and errors.")] = False,
) -> None:
    """Global options."""
    _state["workspace"] = workspace
    out.set_verbosity(0 if quiet else 2 if verbose else 1)


# ---------------------------------------------------------------------------- miner


@app.command()
def index(
    dump: Annotated[Path | None, typer.Option(help="PWC links dump (.json, .json.gz or .parquet).")] = None,
    repos_file: Annotated[Path | None, typer.Option(help="Plain list: one owner/name or GitHub URL per line.")] = None,
    repo: Annotated[list[str] | None, typer.Option("--repo", help="Add one repository (repeatable).")] = None,
    official_only: Annotated[bool, typer.Option(help="Keep only official code links.")] = False,
    min_stars: Annotated[int | None, typer.Option(min=0, help="Fetch stars via GraphQL and keep >= N.")] = None,
    api_url: Annotated[str | None, typer.Option(help="GitHub API base URL (Enterprise or fake server).")] = None,
    token_file: Annotated[Path | None, typer.Option(help="File with one GitHub token per line.")] = None,
) -> None:
    """Build the repository index from a PWC dump or a list.

    Example: reprodiag index --dump links-between-papers-and-code.json.gz --official-only --min-stars 200
    """
    from miner.index import run_index

    _report(run_index(_store(), dump=dump, repos_file=repos_file, repos=repo or [], official_only=official_only,
                      min_stars=min_stars, api_url=api_url, token_file=token_file))


@app.command()
def mine(
    repos: Annotated[list[str] | None, typer.Option("--repos", help="Mine these owner/name (repeatable).")] = None,
    api: Annotated[ApiKind, typer.Option(help="graphql (cheap, default) or rest (PyGithub).")] = ApiKind.graphql,
    api_url: Annotated[str | None, typer.Option(help="GitHub API base URL (Enterprise or fake server).")] = None,
    token_file: Annotated[Path | None, typer.Option(help="File with one GitHub token per line.")] = None,
    include_prs: Annotated[bool, typer.Option(help="Also mine pull requests.")] = False,
    discussions: Annotated[bool, typer.Option(help="Mine discussions too.")] = True,
    concurrency: Annotated[int, typer.Option(min=1, max=100, help="Concurrent requests per token.")] = 8,
    estimate: Annotated[bool, typer.Option(help="Print expected cost and time, spend nothing.")] = False,
    status: Annotated[bool, typer.Option(help="Print the per-repository status table.")] = False,
    shard: Annotated[str | None, typer.Option(
        help="Mine only part I of N of the repositories (stable hash of owner/name), e.g. 2/4; "
             "fold the parts together with `reprodiag merge`.")] = None,
) -> None:
    """Fetch issues, discussions and all their comments into the workspace (resumable, incremental).

    Example: GITHUB_TOKEN=... reprodiag mine --repos facebookresearch/detr
    Four machines: reprodiag -w part2 mine --shard 2/4   (then: reprodiag -w all merge part1 part2 part3 part4)
    """
    from miner import sync
    from miner.sharding import Shard

    part = Shard.parse(shard) if shard is not None else None
    store = _store()
    if status:
        _report(sync.mine_status(store))
    elif estimate:
        _report(sync.estimate(store, repos=repos or None, include_prs=include_prs, api=api.value,
                              tokens_n=None, token_file=token_file, api_url=api_url, shard=part))
    else:
        _report(sync.run_mine(store, repos=repos or None, api=api.value, api_url=api_url, token_file=token_file,
                              include_prs=include_prs, include_discussions=discussions, concurrency=concurrency,
                              shard=part))


# ---------------------------------------------------------------------------- extract


ENGINE_HELP = ("local (default, the reference) or ray: the stage's batch function on a Ray cluster "
               "(pip install 'reprodiag[ray]'); the workspace is written by this process only.")
RAY_ADDRESS_HELP = "A running Ray cluster (auto, ray://host:10001); default: a local one for this run."
SKIP_INVALID_HELP = ("With --input: write malformed lines to <input>.rejects.jsonl (line number and reason) and "
                     "go on; without it the first bad line stops with one error.")


@app.command("filter")
def filter_(
    input: Annotated[Path | None, typer.Option("--input", "-i", help="threads.jsonl (else the workspace).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="decisions.jsonl to write.")] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help=SKIP_INVALID_HELP)] = False,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
) -> None:
    """Decide which threads are paper-reproduction threads (not software bug reports).

    Example: reprodiag filter --input threads.jsonl --output decisions.jsonl --skip-invalid
    On Ray: reprodiag filter --engine ray [--ray-address auto]
    """
    from extract.pipeline import run_filter

    _report(run_filter(None if input else _store(), input=input, output=output, skip_invalid=skip_invalid,
                       engine=engine, ray_address=ray_address))


@app.command()
def extract(
    input: Annotated[Path | None, typer.Option("--input", "-i", help="threads.jsonl (else the workspace).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="records.jsonl to write.")] = None,
    backend: Annotated[Backend, typer.Option(help="Extractor backend.")] = Backend.rules,
    model: Annotated[str | None, typer.Option(help="Model name for LLM backends.")] = None,
    base_url: Annotated[str | None, typer.Option(help="Server URL for openai-compatible (vLLM, Ollama).")] = None,
    no_filter: Annotated[bool, typer.Option("--no-filter", help="Extract every thread.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, max=256)] = 8,
    batch: Annotated[Path | None, typer.Option(help="Write a Batch API request file instead of calling.")] = None,
    collect: Annotated[Path | None, typer.Option(help="Join Batch API results back by custom_id.")] = None,
    reasoning_effort: Annotated[Effort | None, typer.Option(help="OpenAI reasoning models (o-series, gpt-5): "
                                                            "low (default), medium or high.")] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help=SKIP_INVALID_HELP)] = False,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
    rpm: Annotated[float | None, typer.Option(min=0.001, help="LLM requests per minute for the whole run "
                                              "(on Ray: shared by every worker).")] = None,
    tpm: Annotated[float | None, typer.Option(min=1, help="LLM tokens per minute (input + expected output) "
                                              "for the whole run.")] = None,
    engines: Annotated[int | None, typer.Option(min=1, max=1024, help="--backend vllm: engine replicas "
                                                "(data parallel).")] = None,
    tensor_parallel: Annotated[int | None, typer.Option(min=1, max=64, help="--backend vllm: GPUs per "
                                                        "engine.")] = None,
) -> None:
    """Turn relevant threads into grounded diagnosis records.

    Example: reprodiag extract --backend openai --model gpt-5-mini --rpm 500
    On Ray: reprodiag extract --engine ray --backend openai --rpm 500 --tpm 2000000
    Local GPUs (Ray Data LLM): reprodiag extract --engine ray --backend vllm --model Qwen/Qwen3-8B --engines 8
    """
    from extract.pipeline import run_extract

    _set_effort(reasoning_effort)
    vllm = None
    if engines is not None or tensor_parallel is not None:
        if backend is not Backend.vllm:
            raise UserError("--engines and --tensor-parallel need --backend vllm")
        from extract.vllm_backend import VLLMSettings

        vllm = VLLMSettings(model=model or "", engines=engines or 1, tensor_parallel=tensor_parallel or 1)
    store = _store()
    _report(run_extract(store, input=input, output=output, backend=backend.value, model=model, base_url=base_url,
                        no_filter=no_filter, concurrency=concurrency, batch=batch, collect=collect,
                        skip_invalid=skip_invalid, engine=engine, ray_address=ray_address, rpm=rpm, tpm=tpm,
                        vllm=vllm))


class TrainPart(StrEnum):
    extract = "extract"
    grader = "grader"
    all = "all"


@app.command()
def train(
    corpus: Annotated[Path | None, typer.Option(help="Folder with dev.jsonl (default: the shipped real-thread corpus).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the weights files (default: the shipped ones).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the cross-validation folds (same seed, same weights).")] = 0,
    no_older: Annotated[bool, typer.Option("--no-older", help="Train on the real-thread corpus alone.")] = False,
    part: Annotated[TrainPart, typer.Option(help="extract (filter, resolved, values, error type), grader, or all.")]
    = TrainPart.all,
    answers: Annotated[Path | None, typer.Option(help="Labeled answers for the grader (default: the shipped dev part).")]
    = None,
) -> None:
    """Fit the learned filter, is_resolved, value and error-type models and the concept grader
    (needs reprodiag[train]; same data and seed give byte-identical weights files).

    Example: reprodiag train --part extract --out /tmp/models --seed 0
    """
    from extract.learned.examples import run_train

    _report(run_train(corpus=corpus, out_dir=out, seed=seed, older=not no_older,
                      part=part.value, answers=answers))


# ---------------------------------------------------------------------------- scoring


@app.command()
def score(
    input: Annotated[Path | None, typer.Option("--input", "-i", help="records.jsonl (else the workspace).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="scored.jsonl to write.")] = None,
    threshold: Annotated[int, typer.Option(min=0, max=8, help="Keep records with quality >= this.")] = 4,
    min_relevance: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Drop records whose filter probability of being a paper-result reproduction is "
                               "below this (default 0.7; 0 keeps every record the filter passed).")] = None,
    rejects: Annotated[Path | None, typer.Option(help="Write per-record reject reasons here (JSONL).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the repository-level split.")] = 0,
    split_date: Annotated[str | None, typer.Option(
        "--split-date", metavar="YYYY-MM-DD",
        help="Time-based split instead of by repository: threads created before this date (UTC) go to train, "
             "the rest to test (measures contamination).")] = None,
    holdout_repo: Annotated[list[str] | None, typer.Option(
        "--holdout-repo", metavar="OWNER/NAME",
        help="Put this repository's records in test (repeatable).")] = None,
    batch_size: Annotated[int, typer.Option(min=1, max=1_000_000, help="Records per batch: bounds memory; a "
                                            "killed run resumes from its finished batches.")] = 2_000,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
) -> None:
    """Score, tag, redact, dedupe and split records.

    Without --input: reads the workspace records and replaces its scored table. With --input FILE: scores
    the file only (to --output); the workspace is neither read nor written, even if one exists.

    Example: reprodiag score --threshold 4 --holdout-repo facebookresearch/fairseq
    """
    from scoring.config import MIN_RELEVANCE
    from scoring.pipeline import run_score

    _report(run_score(None if input else _store(), input=input, output=output, threshold=threshold,
                      min_relevance=MIN_RELEVANCE if min_relevance is None else min_relevance,
                      rejects=rejects, seed=seed, split_date=split_date, holdout_repos=holdout_repo or (),
                      batch_size=batch_size, engine=engine, ray_address=ray_address))


# ---------------------------------------------------------------------------- sandbox


@app.command()
def replay(
    case: Annotated[list[Path] | None, typer.Option("--case", help="ReplaySpec TOML file (repeatable).")] = None,
    backend: Annotated[SandboxBackend, typer.Option(help="Isolation backend (auto picks bwrap on Linux).")]
    = SandboxBackend.auto,
    unsafe_local: Annotated[bool, typer.Option("--unsafe-local", help="Allow the local backend: NO isolation.")]
    = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="verdict JSON (one case) or JSONL.")] = None,
    bundled: Annotated[bool, typer.Option(help="Replay the bundled cases.")] = False,
    draft: Annotated[bool, typer.Option(help="Draft ReplaySpecs from workspace records for review.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, max=64)] = 1,
    force: Annotated[bool, typer.Option(help="Replay cases that already have a stored verdict.")] = False,
    approve: Annotated[list[str] | None, typer.Option("--approve", help="Mark a reviewed draft ready "
                                                      "(repeatable).")] = None,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
) -> None:
    """Replay cases in a sandbox and confirm (or refute) the fix.

    Example: reprodiag replay --case cases/f1-average/case.toml --output verdict.json

    Drafts: reprodiag replay --draft, review <workspace>/cases/*/case.toml, reprodiag replay --approve ID,
    then reprodiag replay.

    On Ray (one task per case, GPUs from [limits] gpus): reprodiag replay --engine ray --ray-address auto
    """
    from sandbox.pipeline import run_replay

    if approve:
        from sandbox.draft import approve_cases

        _report(approve_cases(_store(), approve))
        return
    store = None if (case and output) else _store()
    _report(run_replay(store, cases=case or [], backend=backend.value, unsafe_local=unsafe_local, output=output,
                       bundled=bundled, draft=draft, concurrency=concurrency, force=force, engine=engine,
                       ray_address=ray_address))


# ---------------------------------------------------------------------------- build & eval


@app.command()
def build(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Output directory for sft/dpo/eval.")]
    = Path("reprodiag-datasets"),
    per_type_min: Annotated[int, typer.Option(min=0, help="Eval items per error type, at least.")] = 20,
    per_type_max: Annotated[int, typer.Option(min=1, help="Eval items per error type, at most.")] = 40,
    seed: Annotated[int, typer.Option()] = 0,
    push_to_hub: Annotated[str | None, typer.Option(help="Push to the Hugging Face hub as ORG/NAME.")] = None,
    eval_after: Annotated[str | None, typer.Option(
        "--eval-after", help="Threads created after this date (YYYY-MM-DD, UTC) go to eval only, older ones to "
        "training only.")] = None,
    eval_from: Annotated[EvalFrom, typer.Option(
        "--eval-from", help="Eval items from LLM-read records only (llm), or from the offline reader's records "
        "too (offline; flagged on the card with its measured eval_sound).")] = EvalFrom.llm,
    reviewed_only: Annotated[bool, typer.Option(
        "--reviewed-only", help="Eval items only from items a person accepted or edited (`reprodiag review`).")]
    = False,
) -> None:
    """Build the SFT, DPO and eval datasets (save_to_disk + Parquet + dataset card + audit.json). People's
    reviews apply: edited fields replace the reader's, rejected items leave the eval set.

    Example: reprodiag build -o datasets/ --eval-after 2025-06-30
    """
    from reprodiag.build import parse_cutoff, run_build

    cutoff = parse_cutoff(eval_after) if eval_after is not None else None
    _report(run_build(_store(), out_dir, per_type_min=per_type_min, per_type_max=per_type_max, seed=seed,
                      push_to_hub=push_to_hub, eval_after=cutoff, eval_from=eval_from.value,
                      reviewed_only=reviewed_only))


class ReviewFormat(StrEnum):
    label_studio = "label-studio"
    jsonl = "jsonl"


INCLUDE_OFFLINE_HELP = "Also the offline reader's eval candidates (for `build --eval-from offline`)."
SAMPLE_SFT_HELP = "Also review a seeded random sample of N SFT rows."


@review_app.command("serve")
def review_serve(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free port).")] = 8765,
    reviewer: Annotated[str | None, typer.Option(help="Your name in the reviews table (default: your login "
                                                 "name).")] = None,
    sample_sft: Annotated[int, typer.Option("--sample-sft", min=0, help=SAMPLE_SFT_HELP)] = 0,
    include_offline: Annotated[bool, typer.Option("--include-offline", help=INCLUDE_OFFLINE_HELP)] = False,
    seed: Annotated[int, typer.Option(help="Seed of the SFT sample.")] = 0,
) -> None:
    """Review eval items in a local page (127.0.0.1 only; open the address it prints, which carries an
    access token): accept, edit or reject each, with the keyboard (a, e, r, j/k, /). Every decision is saved
    in the workspace at once. Stop with Ctrl+C.

    Example: reprodiag review serve --reviewer ana --sample-sft 50
    """
    from reprodiag.review.exchange import default_reviewer
    from reprodiag.review.server import serve

    counts = serve(_store(create=False), port=port, reviewer=reviewer or default_reviewer(),
                   include_offline=include_offline, sample_sft=sample_sft, seed=seed)
    out.info(f"review: stopped; {counts['decisions']} decisions saved this time")


@review_app.command("export")
def review_export(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.")],
    format: Annotated[ReviewFormat, typer.Option("--format", "-f", help="label-studio (tasks with the record "
                                                 "as a pre-annotation) or jsonl.")] = ReviewFormat.label_studio,
    sample_sft: Annotated[int, typer.Option("--sample-sft", min=0, help=SAMPLE_SFT_HELP)] = 0,
    include_offline: Annotated[bool, typer.Option("--include-offline", help=INCLUDE_OFFLINE_HELP)] = False,
    seed: Annotated[int, typer.Option(help="Seed of the SFT sample.")] = 0,
) -> None:
    """Write the review items for Label Studio (import the file into a project with the labeling config the
    command names) or as JSONL.

    Example: reprodiag review export --format label-studio -o tasks.json
    """
    from reprodiag.review.exchange import run_export

    _report(run_export(_store(create=False), format.value, output, include_offline=include_offline,
                       sample_sft=sample_sft, seed=seed))


@review_app.command("import")
def review_import(
    file: Annotated[Path, typer.Argument(help="Label Studio JSON export, or the JSONL of `review export` with "
                                         "decisions filled in.")],
    reviewer: Annotated[str | None, typer.Option(help="Reviewer name for the file's decisions (Label Studio "
                                                 "default: label-studio, plus :ANNOTATOR when there are "
                                                 "several).")] = None,
) -> None:
    """Store the decisions of a reviewed file in the workspace (all or nothing; a malformed or foreign file
    stores nothing).

    Example: reprodiag review import project-1-at-2026-12-06.json --reviewer team-a
    """
    from reprodiag.review.exchange import run_import

    _report(run_import(_store(create=False), file, reviewer=reviewer))


@app.command()
def audit(
    datasets: Annotated[Path, typer.Argument(help="A `reprodiag build` output folder (sft/, dpo/, eval/).")],
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a check fails.")] = False,
) -> None:
    """Audit built datasets as a trainer would: duplicates, leakage, PII, DPO shortcuts, eval gold causes.
    When the workspace (-w) holds the records, participants' logins are checked too.

    Example: reprodiag audit datasets/ --strict
    """
    from reprodiag.audit import participants_of, run_audit
    from reprodiag.store import StoreError

    people = None
    try:
        with _store(create=False) as st:
            people = participants_of(st) or None
    except StoreError:
        people = None
    rep, code = run_audit(datasets, strict=strict, participants=people)
    if out.verbosity() == 0:
        print(json.dumps({"checks": rep["checks"], "failed": rep["failed"]}, ensure_ascii=False, default=str))
    else:
        for k, v in rep["checks"].items():
            out.console.print(f"{k}: {v}", markup=False, highlight=False)
        out.console.print("failed: " + (", ".join(rep["failed"]) or "none"), markup=False, highlight=False)
    if code:
        raise _Exit(code)


@app.command("eval")
def eval_(
    eval_set: Annotated[Path, typer.Option(help="Eval set: JSONL file, Parquet, or a build output dir.")],
    model: Annotated[list[str], typer.Option("--model", help="openai:M, anthropic:M, openai-compatible:M@URL, "
                                             "hf:PATH (a local checkpoint; needs reprodiag[train]), "
                                             "baseline:prior, baseline:rules (repeatable).")],
    grader: Annotated[str, typer.Option(help="auto (the cascade lexical+llm with the judge of a provider whose key "
                                        "is set, else the offline grader), lexical, lexical+llm:SPEC or llm:SPEC.")]
    = "auto",
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory for grades, results and report.")]
    = Path("reprodiag-eval"),
    concurrency: Annotated[int, typer.Option(min=1, max=256)] = 8,
    reasoning_effort: Annotated[Effort | None, typer.Option(help="OpenAI reasoning models (o-series, gpt-5): "
                                                            "low (default), medium or high.")] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Record malformed eval-set lines in "
                                               "OUT/invalid-lines.jsonl and go on.")] = False,
    max_new_tokens: Annotated[int | None, typer.Option(min=1, help="hf: models: the longest answer, in tokens "
                                                       "(default 512).")] = None,
    batch: Annotated[Path | None, typer.Option(help="Write one API model's Batch API requests here (the items OUT "
                                               "has no answer of yet) instead of asking; nothing is graded.")]
    = None,
    collect: Annotated[Path | None, typer.Option(help="Take the model's answers from its Batch API results file "
                                                 "(OpenAI or Anthropic format), then grade.")] = None,
) -> None:
    """Run models on the diagnosis benchmark and grade their answers.

    Example: reprodiag eval --eval-set datasets/eval --model baseline:prior --model openai:gpt-4o-mini -o results/
    (a checkpoint you trained: --model hf:checkpoints/sft_full). By batch, at half the price:
    --model openai:gpt-4o-mini --batch answers-req.jsonl, submit it, then --collect RESULTS.jsonl.
    """
    from eval_diagnosis.pipeline import run_eval

    _set_effort(reasoning_effort)
    _report(run_eval(eval_set, models=model, grader=grader, out_dir=out_dir, concurrency=concurrency,
                     store=_store(), skip_invalid=skip_invalid, max_new_tokens=max_new_tokens, batch=batch,
                     collect=collect))


@app.command()
def grade(
    eval_set: Annotated[Path | None, typer.Option(help="Eval set: JSONL file, Parquet, or a build output dir.")]
    = None,
    answers: Annotated[Path | None, typer.Option(help="answers.jsonl: {id, model, answer} per line.")] = None,
    grader: Annotated[str, typer.Option(help="lexical, lexical-v1, llm:SPEC, llm-free:SPEC or lexical+llm:SPEC.")]
    = "lexical",
    out_dir: Annotated[Path, typer.Option("--out", "-o")] = Path("reprodiag-grades"),
    agreement: Annotated[Path | None, typer.Option(help="Labeled answers JSONL: report the grader's agreement with them.")] = None,
    controls: Annotated[bool, typer.Option("--controls", help="Shifted-answer, gold-answer and hedge controls.")]
    = False,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Record malformed input lines in "
                                               "OUT/invalid-lines.jsonl and go on.")] = False,
    batch: Annotated[Path | None, typer.Option(help="Write the judge's Batch API requests here (with --grader "
                                               "llm:openai:MODEL or llm:anthropic:MODEL) instead of grading.")] = None,
    collect: Annotated[Path | None, typer.Option(help="Grade from a Batch API results file of the judge (with "
                                                 "--batch: leave out the answers it already judged).")] = None,
    verdicts: Annotated[Path | None, typer.Option(help="A recorded verdict set (e.g. eval_diagnosis/data/verdicts): "
                                                  "with --agreement, the judge, the cascade and the offline grader "
                                                  "side by side.")] = None,
    allow_stale: Annotated[bool, typer.Option(help="With --verdicts: score verdicts made for another judge prompt "
                                              "(labeled stale).")] = False,
) -> None:
    """Grade given answers without calling any model, measure a grader against labeled answers, or run controls.

    Example: reprodiag grade --agreement eval_diagnosis/data/answers_real/test.jsonl --controls -o grades/
    Judge by batch: reprodiag grade --agreement LABELS --grader llm:openai:gpt-5-mini --batch judge.jsonl
    Recorded verdicts: reprodiag grade --agreement eval_diagnosis/data/answers_real/test.jsonl
    --verdicts eval_diagnosis/data/verdicts
    """
    from eval_diagnosis.pipeline import run_grade

    _report(run_grade(eval_set, answers=answers, grader=grader, out_dir=out_dir, agreement=agreement,
                      controls=controls, skip_invalid=skip_invalid, batch=batch, collect=collect,
                      verdicts=verdicts, allow_stale=allow_stale))


# ---------------------------------------------------------------------------- orchestration


@app.command()
def run(
    api_url: Annotated[str | None, typer.Option(help="GitHub API base URL.")] = None,
    token_file: Annotated[Path | None, typer.Option(help="File with one GitHub token per line.")] = None,
    backend: Annotated[Backend, typer.Option(help="Extractor backend.")] = Backend.rules,
    model: Annotated[str | None, typer.Option(help="Model for LLM extraction.")] = None,
    base_url: Annotated[str | None, typer.Option(help="openai-compatible server URL.")] = None,
    sandbox_backend: Annotated[SandboxBackend, typer.Option(help="Sandbox backend.")] = SandboxBackend.auto,
    out_dir: Annotated[Path, typer.Option("--out", "-o")] = Path("reprodiag-datasets"),
    eval_model: Annotated[list[str] | None, typer.Option(help="Models to evaluate (default baseline:prior).")]
    = None,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
    eval_from: Annotated[EvalFrom, typer.Option(
        "--eval-from", help="Eval items from LLM-read records only (llm) or the offline reader's too.")]
    = EvalFrom.llm,
) -> None:
    """Run every stage in order over the indexed repositories (each stage resumes where it stopped).

    Example: reprodiag run -o datasets/   (on Ray: reprodiag run --engine ray --ray-address auto)
    """
    from reprodiag.pipeline import run_all

    for report in run_all(_store(), api_url=api_url, token_file=token_file, backend=backend.value, model=model,
                          base_url=base_url, sandbox_backend=sandbox_backend.value, out_dir=out_dir,
                          eval_models=eval_model or ["baseline:prior"], engine=engine, ray_address=ray_address,
                          eval_from=eval_from.value):
        _report(report)


@app.command()
def demo(
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="Where datasets and eval go "
                                                 "(default: inside the workspace).")] = None,
    no_replay: Annotated[bool, typer.Option("--no-replay", help="Skip sandbox replays.")] = False,
    backend: Annotated[DemoReader, typer.Option(
        help="recorded: the LLM reader, fed by a capable model's recorded answers for the sample (through the "
        "OpenAI backend and a loopback server); rules: the offline reader.")] = DemoReader.recorded,
) -> None:
    """Run the whole flow offline on the bundled sample, against a loopback fake GitHub.

    Example: reprodiag -w /tmp/demo demo   (the offline reader: reprodiag -w /tmp/demo-rules demo --backend rules)
    """
    from reprodiag.demo import run_demo

    _report(run_demo(workspace_path(_state["workspace"]), out_dir=out_dir, replay=not no_replay,
                     reader=backend.value))


@app.command()
def merge(
    sources: Annotated[list[Path], typer.Argument(help="Workspaces to fold into the -w workspace.")],
) -> None:
    """Fold workspaces (e.g. the parts of `mine --shard I/N`) into this one, without duplicates: the newest
    content of a thread wins, checkpoints and caches are merged; one transaction. Run `score` afterwards.

    Example: reprodiag -w crawl merge part1 part2 part3 part4
    """
    from reprodiag.merge import merge_workspaces

    _report(merge_workspaces(_store(), sources))


@app.command()
def export(
    table: Annotated[ExportTable, typer.Argument(help="What to export.")],
    format: Annotated[Format, typer.Option("--format", "-f")] = Format.jsonl,
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.")] = Path("export.jsonl"),
    raw: Annotated[bool, typer.Option(help="Skip redaction (stays local; never publish raw exports).")] = False,
) -> None:
    """Export a workspace table to JSONL or Parquet (redacted unless --raw).

    Example: reprodiag export records --format parquet -o records.parquet
    """
    from reprodiag.exporting import export_table

    _report(export_table(_store(create=False), table.value, output, fmt=format.value, redact=not raw))


@bench_app.command("mine")
def bench_mine(
    threads: Annotated[int, typer.Option(min=10, help="Synthetic threads in total.")] = 3000,
    latency_ms: Annotated[float, typer.Option(min=0)] = 100.0,
    repeats: Annotated[int, typer.Option(min=1, help="Runs per GraphQL configuration (median wall time).")] = 3,
) -> None:
    """GraphQL vs REST budget and wall time against the fake GitHub. Example: reprodiag bench mine"""
    from miner.bench import run_bench

    _report(run_bench(threads=threads, latency_ms=latency_ms, repeats=repeats))


@bench_app.command("resume")
def bench_resume(
    threads: Annotated[int, typer.Option(min=100, help="Synthetic threads in total (20 repositories).")] = 2400,
    latency_ms: Annotated[float, typer.Option(min=0, help="Delay of every answer of the fake GitHub.")] = 100.0,
    p502: Annotated[float, typer.Option(min=0, max=0.5, help="Share of requests answered 502.")] = 0.05,
    psecondary: Annotated[float, typer.Option(min=0, max=0.5, help="Share answered with a secondary limit.")]
    = 0.02,
    repeats: Annotated[int, typer.Option(min=1, max=20)] = 3,
) -> None:
    """Points of a mine killed at its first committed page and run again, against a fresh mine's (fake GitHub
    under faults). Example: reprodiag bench resume --repeats 3"""
    from miner.bench_resume import run_resume_bench

    _report(run_resume_bench(threads=threads, latency_ms=latency_ms, p_502=p502, p_secondary=psecondary,
                             repeats=repeats))


class RealSet(StrEnum):
    dev = "dev"
    test = "test"
    both = "both"
    sample = "sample"


@bench_app.command("extract")
def bench_extract(
    dev_set: Annotated[Path | None, typer.Option(help="Older labeled set (default: the bundled one).")] = None,
    backend: Annotated[Backend, typer.Option(help="Extractor to measure on the real-thread corpus.")] = Backend.rules,
    model: Annotated[str | None, typer.Option(help="Model name for LLM backends.")] = None,
    base_url: Annotated[str | None, typer.Option(help="Server URL for openai-compatible (vLLM, Ollama).")] = None,
    set_: Annotated[RealSet, typer.Option("--set", help="Real-thread corpus part(s) to measure.")] = RealSet.both,
    seed: Annotated[int, typer.Option(help="Seed of the folds and the bootstrap.")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, max=256)] = 8,
    engine: Annotated[str | None, typer.Option(
        help="ray: instead of accuracy, time extraction through a loopback OpenAI-protocol server with "
             "--latency-ms, local vs a local Ray cluster.")] = None,
    threads: Annotated[int, typer.Option(min=1, max=100_000, help="With --engine ray: threads to extract.")] = 400,
    latency_ms: Annotated[float, typer.Option(min=0, max=10_000, help="With --engine ray: server latency.")] = 300.0,
    answers: Annotated[Path | None, typer.Option(
        help="Score recorded Batch API results (a results file, or a recorded-set folder with manifest.json) "
             "instead of calling a provider.")] = None,
    allow_stale: Annotated[bool, typer.Option(help="With --answers: score answers made for another prompt "
                                                   "or schema, labeled stale.")] = False,
) -> None:
    """Filter precision / recall / false-positive rate, error type, is_resolved and value accuracy on the
    real-thread corpus (dev cross-validated, frozen test) and the older sets, each with a 95% interval.

    Example: reprodiag bench extract --backend openai --model gpt-5-mini --set test
    Recorded answers: reprodiag bench extract --answers extract/data/recorded --set test
    Throughput on Ray: reprodiag bench extract --engine ray --threads 400 --latency-ms 300
    """
    from extract.bench import run_bench, run_llm_bench

    if engine is not None:
        if engine != "ray":
            raise UserError(f"bench extract --engine takes ray, got {engine!r}")
        from extract.bench_engine import run_engine_bench

        _report(run_engine_bench(n=threads, latency_ms=latency_ms, concurrency=concurrency))
        return
    sets = ("dev", "test") if set_ is RealSet.both else (set_.value,)
    if answers is not None:
        from extract.bench import run_recorded_bench

        _report(run_recorded_bench(answers, sets=sets, seed=seed, allow_stale=allow_stale))
        return
    if set_ is RealSet.sample:
        raise UserError("--set sample is for --answers (the offline rows cover the sample already)")
    if backend is Backend.rules:
        _report(run_bench(dev_set=dev_set, real_sets=sets, seed=seed))
    else:
        _report(run_llm_bench(backend=backend.value, model=model, base_url=base_url, sets=sets, store=_store(),
                              concurrency=concurrency, seed=seed))


@bench_app.command("labels")
def bench_labels(
    second: Annotated[Path | None, typer.Option(help="A second annotation JSONL (default: the shipped one).")]
    = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
) -> None:
    """How reliable the real-thread corpus's labels are: agreement and Cohen's kappa between its gold and a
    second annotation made blind to it by the same rules, per field, with 95% intervals.

    Example: reprodiag bench labels
    """
    from extract.label_agreement import run_label_bench

    _report(run_label_bench(second=second, seed=seed))


@bench_app.command("cascade")
def bench_cascade(
    threads: Annotated[int, typer.Option(min=100, help="Threads of the bench pipeline corpus to measure on.")]
    = 20_000,
    seed: Annotated[int, typer.Option()] = 0,
    no_cv: Annotated[bool, typer.Option("--no-cv", help="Skip refitting the filter out of fold on dev.")] = False,
    answers: Annotated[Path | None, typer.Option(help="Recorded set whose answers give the output tokens "
                                                 "(default: the shipped extract/data/recorded).")] = None,
) -> None:
    """The offline filter as a cost gate in front of an LLM reader: the gate recomputed out of fold on dev, the
    reproductions it passes and the calls it saves on test and on a crawl-like corpus, and the cost of reading
    1,000 mined threads per model (with and without prompt caching and the Batch discount).

    Example: reprodiag bench cascade --threads 20000
    """
    from extract.bench_cascade import run_bench_cascade

    _report(run_bench_cascade(threads=threads, seed=seed, cv=not no_cv, answers=answers))


@bench_app.command("score")
def bench_score(
    records: Annotated[int, typer.Option("--records", "-n", min=100, help="Grown records to score.")] = 200_000,
    seed: Annotated[int, typer.Option(help="Seed of the grown records.")] = 0,
    workspace: Annotated[bool, typer.Option("--workspace-mode/--no-workspace-mode",
                                            help="Also time score on a workspace.")] = True,
) -> None:
    """Time the score command (file and workspace) on N records grown from real extractions, beside a
    plain JSONL round-trip of the same file: wall, CPU, peak RSS, ratio.

    Example: reprodiag bench score --records 200000
    """
    from scoring.bench import run_bench

    _report(run_bench(n=records, seed=seed, workspace=workspace))


@bench_app.command("pipeline")
def bench_pipeline(
    threads: Annotated[int, typer.Option(min=100, help="Threads to generate and serve.")] = 200_000,
    seed: Annotated[int, typer.Option(help="Seed of the generated corpus.")] = 0,
    keep: Annotated[Path | None, typer.Option(help="Keep the workspace and datasets in this directory.")] = None,
) -> None:
    """Mine → filter → extract (rules) → score → build on N generated threads served by the fake GitHub:
    wall, CPU, peak RSS and rows/s per stage, and the workspace size.

    Example: reprodiag bench pipeline --threads 50000
    """
    from reprodiag.bench_pipeline import run_bench

    _report(run_bench(threads=threads, seed=seed, keep=keep))


@bench_app.command("datasets")
def bench_datasets(
    corpus: Annotated[str, typer.Option(help="real (extract/data/real), sample, or a JSONL file of threads.")]
    = "real",
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="Keep the built datasets here.")] = None,
    seed: Annotated[int, typer.Option()] = 0,
    reader: Annotated[str, typer.Option(help="rules (the offline reader) or recorded (the LLM reader on recorded "
                                        "answers, through extract --collect).")] = "rules",
    answers: Annotated[Path | None, typer.Option(help="With --reader recorded: a recorded set (default: the "
                                                 "shipped extract/data/recorded).")] = None,
) -> None:
    """Filter → extract → score → build over a thread corpus in a fresh workspace; prints the funnel,
    the build's audit figures and the seconds per stage.

    Example: reprodiag bench datasets --corpus real --reader recorded
    """
    from reprodiag.bench_datasets import run_bench_datasets

    _report(run_bench_datasets(corpus=corpus, seed=seed, out_dir=out_dir, reader=reader, answers=answers))


@bench_app.command("sandbox")
def bench_sandbox(
    repeats: Annotated[int, typer.Option(min=1, max=200)] = 10,
) -> None:
    """Start-up overhead of each sandbox backend against a plain subprocess. Example: reprodiag bench sandbox"""
    from sandbox.bench import run_bench

    _report(run_bench(repeats=repeats))


# ---------------------------------------------------------------------------- entry point


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


def main(argv: list[str] | None = None) -> int:
    """Console entry point: returns the exit code (0 ok, 1 internal error, 2 user error)."""
    from pydantic import ValidationError

    from reprodiag.schema import SchemaError
    from reprodiag.store import StoreError

    try:
        rv = app(args=argv, standalone_mode=False, prog_name="reprodiag")
        if isinstance(rv, int) and not isinstance(rv, bool) and rv:
            return rv  # click returns an Exit's code instead of raising it when not standalone
    except click_exc.NoArgsIsHelpError:
        app(args=["--help"], standalone_mode=False, prog_name="reprodiag")
        return 0
    except _Exit as exc:
        return int(exc.exit_code or 0)
    except _Abort:
        out.console.print("aborted")
        return 130
    except click_exc.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        where = f" ({ctx.command_path})" if ctx is not None else ""
        out.error(f"error{where}: {_one_line(exc.format_message())}")
        return 2
    except (UserError, SchemaError, StoreError, ValidationError) as exc:
        out.error(f"error: {_one_line(str(exc))}")
        return 2
    except KeyboardInterrupt:
        out.console.print("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - last resort: one line, traceback only with -v
        if out.verbosity() >= 2:
            out.console.print_exception()
        out.error(f"internal error: {type(exc).__name__}: {_one_line(str(exc))[:300]} "
                  "(re-run with --verbose for a traceback)")
        return 1
    return 0


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
