"""Every stage in order, each one resuming where it stopped (``reprodiag run`` and the demo).

Each stage is idempotent over the workspace, so re-running this after a crash
(SIGKILL included) finishes the work and ends with the same workspace as an
uninterrupted run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from reprodiag import console as out
from reprodiag.config import Secret
from reprodiag.schema import StageReport
from reprodiag.store import Store


@dataclass(frozen=True)
class PipelineOptions:
    """Options of a full run. ``out_dir`` receives ``datasets/`` and ``eval/``."""

    out_dir: Path
    api_url: str | None = None
    token_file: Path | None = None
    tokens: list[Secret] | None = None
    include_prs: bool = True
    concurrency: int = 8
    backend: str = "rules"
    model: str | None = None
    base_url: str | None = None
    threshold: int = 4
    seed: int = 0
    replay: bool = True
    replay_bundled: bool = False
    sandbox_backend: str = "auto"
    replay_concurrency: int = 2
    per_type_min: int = 20
    per_type_max: int = 40
    eval_models: list[str] = field(default_factory=lambda: ["baseline:prior"])
    grader: str = "lexical"
    #: ``local`` or ``ray`` for filter, extract, score and replay (:mod:`reprodiag.ray_engine`).
    engine: str = "local"
    ray_address: str | None = None
    #: ``build --eval-from``: "llm" or "offline" (:data:`reprodiag.build.EVAL_FROM`)
    eval_from: str = "llm"


def run_stages(store: Store, opts: PipelineOptions) -> Iterator[StageReport]:
    """Run mine → filter → extract → score → replay → build → eval, yielding each stage's report. On
    ``engine="ray"`` one Ray session (a cluster started for the run, or ``ray_address``) serves every stage."""
    if opts.engine == "ray":
        from reprodiag.ray_engine import ray_session

        with ray_session(opts.ray_address):
            yield from _stages(store, opts)
    else:
        yield from _stages(store, opts)


def _stages(store: Store, opts: PipelineOptions) -> Iterator[StageReport]:
    from eval_diagnosis.pipeline import run_eval
    from extract.pipeline import run_extract, run_filter
    from miner.sync import run_mine
    from reprodiag.build import run_build
    from sandbox.pipeline import run_replay
    from scoring.pipeline import run_score

    datasets_dir = opts.out_dir / "datasets"
    eval_dir = opts.out_dir / "eval"

    def stage(name: str) -> None:
        out.info(f"[bold cyan]▶ {name}[/bold cyan]")

    stage("mine")
    yield run_mine(store, repos=None, api="graphql", api_url=opts.api_url, token_file=opts.token_file,
                   include_prs=opts.include_prs, include_discussions=True, concurrency=opts.concurrency,
                   tokens=opts.tokens)
    stage("filter")
    ray = dict(engine=opts.engine, ray_address=opts.ray_address)
    yield run_filter(store, input=None, output=None, **ray)
    stage("extract")
    yield run_extract(store, input=None, output=None, backend=opts.backend, model=opts.model,
                      base_url=opts.base_url, no_filter=False, concurrency=opts.concurrency, batch=None,
                      collect=None, **ray)
    stage("score")
    yield run_score(store, input=None, output=None, threshold=opts.threshold, rejects=None, seed=opts.seed, **ray)
    if opts.replay and not opts.replay_bundled and not store.cases(status="ready"):
        yield StageReport(stage="replay", notes=["no reviewed cases in the workspace: draft them with "
                                                 "`reprodiag replay --draft`, review, then mark them ready"])
    elif opts.replay:
        stage("replay")
        yield run_replay(store, cases=[], backend=opts.sandbox_backend, unsafe_local=False, output=None,
                         bundled=opts.replay_bundled, draft=False, concurrency=opts.replay_concurrency, **ray)
    stage("build")
    built = run_build(store, datasets_dir, per_type_min=opts.per_type_min, per_type_max=opts.per_type_max,
                      seed=opts.seed, push_to_hub=None, eval_from=opts.eval_from)
    yield built
    if not built.counts.get("eval items"):
        yield StageReport(stage="eval", notes=["no eval items were built" + (
            ": they come from LLM-read records only (extract with an LLM backend, or build with --eval-from "
            "offline)" if opts.eval_from == "llm" else "")])
        return
    stage("eval")
    yield run_eval(datasets_dir, models=opts.eval_models, grader=opts.grader, out_dir=eval_dir,
                   concurrency=opts.concurrency, store=store)


def run_all(store: Store, *, api_url: str | None, token_file: Path | None, backend: str, model: str | None,
            base_url: str | None, sandbox_backend: str, out_dir: Path,
            eval_models: list[str], engine: str = "local", ray_address: str | None = None,
            eval_from: str = "llm") -> Iterator[StageReport]:
    """``reprodiag run``: every stage over the indexed repositories (``engine``: see :class:`PipelineOptions`)."""
    from reprodiag.ray_engine import check_engine

    check_engine(engine, ray_address)
    if not store.repos():
        from reprodiag.errors import UserError

        raise UserError("the workspace has no indexed repositories; run `reprodiag index` first")
    opts = PipelineOptions(out_dir=out_dir, api_url=api_url, token_file=token_file, backend=backend, model=model,
                           base_url=base_url, sandbox_backend=sandbox_backend, eval_models=eval_models,
                           engine=engine, ray_address=ray_address, eval_from=eval_from)
    yield from run_stages(store, opts)
