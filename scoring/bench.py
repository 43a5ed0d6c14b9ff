"""``reprodiag bench score``: time and peak memory of the vectorized scoring path on N synthetic records.

The synthetic table (:func:`synthetic_frame`) mixes reproduction threads of all
error types, 2016–2025, with planted secrets (~2%), e-mail addresses (~3%),
home paths (~5%), @mentions (~20%), bare participant logins (~5%), IP
addresses and 4-part versions (~5%), version strings (~60%) and cross-posted
duplicates (~3%). It is generated in blocks of :data:`BLOCK` rows so that
generation does not set the memory peak. The run applies score + temporal
tags, version detection, near-duplicate removal among kept rows (on the raw
text, as ``reprodiag score`` does) and redaction of every row.

Peak memory is the process's maximum RSS (``resource.getrusage``), so it
includes the interpreter and libraries; it is read after each phase.
``digest`` fingerprints the result (counts, duplicate links, redacted text):
two runs with the same N and seed print the same digest.
"""

from __future__ import annotations

import hashlib
import resource
import sys
import time

import numpy as np
import polars as pl

from reprodiag.schema import StageReport
from scoring.config import ScoreConfig
from scoring.vectorized import (
    FRAME_SCHEMA,
    dedup_frame,
    record_versions_frame,
    redact_frame,
    score_frame,
)

BLOCK = 100_000
_TYPES = np.array(["hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware", "other"])
_METRICS = np.array(["top-1 accuracy", "BLEU", "mAP", "F1", "FID", "ROUGE-L", "mIoU", "return"])
_DATASETS = np.array(["ImageNet", "WMT14 en-de", "COCO val2017", "SQuAD v1.1", "CIFAR-10", "ADE20K", "Atari"])
_ENVS = np.array(["torch==1.8.1+cu111, Python 3.8", "PyTorch 1.12 CUDA 11.6", "TF 1.x with cuDNN 7.6",
                  "tensorflow-gpu==1.15.0", "jax 0.3.4 jaxlib 0.3.2", "transformers==4.21.0 numpy==1.21.2",
                  "python 3.10, torch 2.0.1, CUDA 11.8", "mmcv-full==1.3.8 timm==0.5.4", "", "fairseq 0.10.2",
                  "cuDNN 8.9.2.26, TensorRT 8.6.1.6"])
_EXTRAS = np.array([
    "", "", "", "", "", "", "", "", "", "", "", "", "", "", "",
    " Log at /home/jdoe/exp/run.log.", " Reach me at jane.doe@example.org.",
    " My config sets token=Zx8Kq2LmP9vR4tW7nB3cD6 for the hub.", " cc @someone-else",
    " Using key sk-proj-abcdefghijklmnopqrstuvwxyz123456 for eval.",
    " Cloned from git@github.com:org/repo.git.", " The data server at 10.12.3.4 was down.",
])
_CAUSES = np.array([
    "The paper used a larger learning rate with 8 GPUs; the config assumes 4.",
    "Dataset version differs: the paper evaluated on the 2012 split.",
    "BLEU was computed on tokenized output; sacreBLEU on detokenized text is lower.",
    "Default initialisation changed after upgrading torch to 1.12.",
    "AMP fp16 on V100 loses precision; fp32 reproduces the number.",
    "An evaluation script bug dropped the last batch.",
])


def synthetic_frame(n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` synthetic records as a flat table (:data:`scoring.vectorized.FRAME_SCHEMA`), built in blocks."""
    blocks = [_block(start, min(BLOCK, n - start), n, seed) for start in range(0, n, BLOCK)]
    return pl.concat(blocks, rechunk=False) if blocks else pl.DataFrame(schema=FRAME_SCHEMA)


def _block(start: int, size: int, n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng([seed, start])
    idx = np.arange(start, start + size)
    repo_id = rng.integers(0, max(1, n // 40), size)
    local = np.arange(size)
    src = np.where(rng.random(size) < 0.03, rng.integers(0, size, size), local)  # cross-posts copy a row's text
    etype = rng.integers(0, len(_TYPES), size)
    metric = rng.integers(0, len(_METRICS), size)
    paper = np.round(rng.uniform(20, 90, size), 1)
    got = np.round(paper - rng.uniform(0.3, 5.0, size), 1)
    missing = rng.random(size) < 0.15
    df = pl.DataFrame({
        "i": idx, "src": src, "repo_id": repo_id, "etype": _TYPES[etype], "metric": _METRICS[metric],
        "dataset": _DATASETS[rng.integers(0, len(_DATASETS), size)],
        "env": _ENVS[rng.integers(0, len(_ENVS), size)], "extra": _EXTRAS[rng.integers(0, len(_EXTRAS), size)],
        "cause": _CAUSES[etype], "paper_value": np.where(missing, np.nan, paper),
        "obtained_value": np.where(missing, np.nan, got), "year": rng.integers(2016, 2026, size),
        "day": rng.integers(0, 365, size), "comments": rng.poisson(4, size), "reactions": rng.poisson(2, size),
        "resolved": rng.random(size) < 0.6, "code": rng.random(size) < 0.55, "mention": rng.random(size) < 0.2,
        "bare": rng.random(size) < 0.05,
    }).with_columns(pl.col("paper_value", "obtained_value").fill_nan(None))
    text = pl.format(
        "{}I trained with the released config on {} and got {} {}, but the paper reports {}. "
        "Environment: {}. Run id {}.{}{}",
        pl.when(pl.col("mention")).then(pl.format("@user{} ", pl.col("repo_id"))).otherwise(pl.lit("")),
        "dataset", "metric", pl.col("obtained_value").fill_null(0.0), pl.col("paper_value").fill_null(0.0),
        "env", pl.col("src") * 7919 % 1_000_003, "extra",
        pl.when(pl.col("bare")).then(pl.format(" Thanks maint{}, that fixed it.", pl.col("repo_id") % 997))
        .otherwise(pl.lit("")))
    df = df.with_columns(problem_statement=text)
    df = df.with_columns(problem_statement=pl.col("problem_statement").gather(pl.col("src")))
    created = pl.date(pl.col("year"), 1, 1) + pl.duration(days=pl.col("day"))
    return df.select(
        thread_id=pl.format("org{}/repo{}#{}", pl.col("repo_id") % 997, "repo_id", "i"),
        repo=pl.format("org{}/repo{}", pl.col("repo_id") % 997, "repo_id"),
        is_reproduction=pl.col("i") % 17 != 0,
        error_type="etype", problem_statement="problem_statement", environment="env",
        tried=pl.lit("default hyperparameters, standard preprocessing"),
        root_cause=pl.when(pl.col("resolved")).then("cause").otherwise(pl.lit(None, dtype=pl.String)),
        resolution=pl.when(pl.col("resolved")).then(pl.lit("Applied the fix from the maintainer.")),
        hypotheses=pl.concat_list([pl.lit("warmup too short"), pl.format("seed variance on {}", "dataset")]),
        is_resolved="resolved",
        resolution_type=pl.when(pl.col("resolved")).then(pl.lit("resolved"))
        .when(pl.col("i") % 3 == 0).then(pl.lit("unresolved_valuable")).otherwise(pl.lit("unresolved")),
        diagnostic_depth=pl.col("i") % 5, has_code_snippet="code", paper_value="paper_value",
        obtained_value="obtained_value", state=pl.when(pl.col("resolved")).then(pl.lit("closed")).otherwise(
            pl.lit("open")),
        comments=pl.col("comments").cast(pl.Int64), reactions=pl.col("reactions").cast(pl.Int64),
        referenced=pl.col("i") % 11 == 0, bot_only=pl.col("i") % 97 == 0, has_answer=pl.lit(False),
        labels=pl.when(pl.col("i") % 31 == 0).then(pl.lit("enhancement")).otherwise(pl.lit("question")),
        created_year=pl.col("year").cast(pl.Int64),
        participants=pl.concat_list([
            pl.struct(login=pl.format("user{}", "repo_id"), role=pl.lit("asker")),
            pl.struct(login=pl.format("maint{}", pl.col("repo_id") % 997), role=pl.lit("maintainer")),
        ]),
        metric="metric",
        created_at=created.dt.strftime("%Y-%m-%dT00:00:00+00:00"),
    ).cast(FRAME_SCHEMA)  # type: ignore[arg-type]


def _peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 1024 / 1024


def _digest(scored: pl.DataFrame, redacted: pl.DataFrame, duplicate_of: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(duplicate_of.tobytes())
    for col in ("score", "tier", "drop_reason"):
        h.update(scored[col].cast(pl.String).fill_null("-").str.join("\n").item().encode())
    for col in ("problem_statement", "environment"):
        h.update(redacted[col].fill_null("-").str.join("\n").item().encode())
    return h.hexdigest()[:16]


def run_bench(n: int = 1_000_000, seed: int = 0) -> StageReport:
    """Generate ``n`` records, run the vectorized scoring path, report seconds and peak RSS per phase."""
    config = ScoreConfig(seed=seed)
    times: dict[str, float] = {}
    peaks: dict[str, float] = {}

    def done(phase: str, t: float) -> None:
        times[phase] = time.perf_counter() - t
        peaks[phase] = _peak_rss_mb()

    t = time.perf_counter()
    df = synthetic_frame(n, seed)
    done("generate", t)

    t0 = time.perf_counter()
    scored = score_frame(df, config).collect()
    del df
    done("score_and_tier", t0)

    t = time.perf_counter()
    versions = record_versions_frame(scored)
    done("versions", t)

    t = time.perf_counter()
    dedup = dedup_frame(scored, config)
    done("dedup", t)

    t = time.perf_counter()
    redacted, counts = redact_frame(scored)
    done("redact", t)
    work = time.perf_counter() - t0
    rss = _peak_rss_mb()

    kept = int(scored["keep"].sum())
    removed = int((dedup.duplicate_of >= 0).sum())
    report = StageReport(stage="bench score")
    report.counts.update({
        "records": n,
        "kept_before_dedup": kept,
        "near_duplicates": removed,
        "duplicate_clusters": dedup.clusters,
        "version_mentions": versions.height,
        "redacted": sum(counts.values()),
        "tier_filtered": int((scored["tier"] == "filtered").sum()),
    })
    report.counts.update({f"redacted_{k.lower()}": v for k, v in sorted(counts.items())})
    for phase, secs in times.items():
        report.counts[f"ms_{phase}"] = round(secs * 1000)
        report.counts[f"peak_rss_mb_after_{phase}"] = round(peaks[phase])
    report.counts["ms_total_without_generate"] = round(work * 1000)
    report.counts["peak_rss_mb"] = round(rss)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    report.counts["cpu_s_process"] = round(ru.ru_utime + ru.ru_stime)
    report.notes.append(f"{n:,} records: {work:.1f} s (+{times['generate']:.1f} s generating), "
                        f"{n / max(work, 1e-9):,.0f} records/s, peak RSS {rss:,.0f} MB "
                        f"(targets for 1,000,000: <= 60 s, <= 4096 MB)")
    report.notes.append("phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
    report.notes.append(f"digest {_digest(scored, redacted, dedup.duplicate_of)} (same N and seed: same digest)")
    return report
