"""``reprodiag bench pipeline --threads N``: the whole offline pipeline at crawl scale, stage by stage.

The corpus (:func:`pipeline_corpus`) is generated from the real-thread corpus (``extract/data/real``):
about 10% of the threads are real paper-reproduction threads of all five types, 15% real hard
negatives (bug reports with "steps to reproduce", install and CUDA help, OOM, weights and usage
questions, near-misses: the threads the corpus collected to fool a filter), 75% plain negatives written
from templates (install failures with pip logs,
OOM tracebacks, feature and weights requests, usage questions). Each generated thread takes a template's
structure (title, body, comment order, roles, code blocks, tables, quoted replies, languages) under a
new repository (about 150 threads each), number, dates and comment ids, an environment line of its own,
and many a training log or a results table of fresh numbers, so no two threads are the same text.

The fake GitHub serves it in its own process (GitHub's schema and cost formula); each stage then runs as
the command a user types (``reprodiag -w WS index | mine | filter | extract | score | build``), in its
own child process, measured by :mod:`reprodiag.measure` (wall, CPU, peak RSS of that process), with
the rows it handled and the workspace size after it.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reprodiag.measure import Measured, reprodiag_argv, run_measured
from reprodiag.schema import Comment, StageReport, Thread

TOKEN = "bench-pipeline-token-not-a-secret"
THREADS_PER_REPO = 150
RELEVANT_SHARE = 0.10
HARD_NEGATIVE_SHARE = 0.15

_PLAIN = (
    ("Installation fails: could not build wheels for {pkg}",
     "Running `pip install -r requirements.txt` on Ubuntu {ubuntu} with CUDA {cuda} fails:\n\n```\n"
     "Building wheel for {pkg} (setup.py) ... error\n  error: command 'gcc' failed with exit status 1\n"
     "  {pkg}/src/ops.cpp:{line}: fatal error: cuda_runtime.h: No such file or directory\n```\n\n"
     "Which CUDA version do you recommend?",
     ("Please install the CUDA toolkit {cuda} headers, or use the prebuilt wheel.", "Thanks, that worked.")),
    ("CUDA out of memory with batch size {bs}",
     "Training on a {gpu} ({mem} GB) crashes right away:\n\n```\nTraceback (most recent call last):\n"
     "  File \"train.py\", line {line}, in <module>\n    loss.backward()\n"
     "RuntimeError: CUDA out of memory. Tried to allocate {alloc} MiB (GPU 0; {mem} GiB total capacity)\n```",
     ("Reduce the batch size or enable gradient checkpointing with `--grad-ckpt`.",)),
    ("Will you release the {size} checkpoint?",
     "Thanks for the great work! Do you plan to release the pretrained weights of the {size} model?",
     ("We plan to release them next month.", "+1, also interested")),
    ("How to run inference on my own images?",
     "I have a folder of {n} images. Which script should I use, and what format does `--input` expect?",
     ("Use `python demo.py --input path/to/folder`; see the README section on inference.",)),
    ("Add support for {framework}",
     "It would be great to have a {framework} version of the model. Any plans?",
     ("Not planned for now, but PRs are welcome.",)),
    ("License of the dataset split files",
     "Can the split files in `data/` be used commercially? The repository has no LICENSE file.",
     ("They follow the license of the original dataset.",)),
)
_WORDS = dict(pkg=("mmcv-full", "apex", "pointnet2_ops", "deform_conv", "flash-attn"),
              ubuntu=("18.04", "20.04", "22.04"), cuda=("10.2", "11.3", "11.8", "12.1"),
              gpu=("RTX 3090", "V100", "A100", "RTX 2080 Ti"), mem=("11", "16", "24", "40"),
              size=("large", "base", "1.3B", "ViT-H"), framework=("JAX", "TensorFlow 2", "ONNX", "MindSpore"))


def real_templates() -> tuple[list[Thread], list[Thread]]:
    from extract.realcorpus import load_real

    rows = load_real("dev") + load_real("test")
    pos = [r.thread for r in rows if r.gold.get("is_reproduction")]
    neg = [r.thread for r in rows if not r.gold.get("is_reproduction")]
    return pos, neg


def _log_block(rng: random.Random) -> str:
    if rng.random() < 0.6:
        start = rng.uniform(2.0, 6.0)
        lines = [f"epoch {e:3d} | loss {start * (0.93 ** e) + rng.uniform(0, 0.05):.4f} | lr {0.1 * 0.97 ** e:.5f}"
                 f" | {rng.choice(('acc', 'mAP', 'BLEU', 'F1'))} {rng.uniform(10, 90):.2f}"
                 for e in range(rng.randint(8, 40))]
        return "\n\nTraining log:\n\n```\n" + "\n".join(lines) + "\n```"
    cols = rng.sample(["Top-1", "Top-5", "mAP", "AP50", "mIoU", "BLEU", "F1", "EM"], 3)
    rows = [f"| {name} | " + " | ".join(f"{rng.uniform(20, 95):.1f}" for _ in cols) + " |"
            for name in ("paper", "released ckpt", "mine (seed 0)", "mine (seed 1)")[: rng.randint(2, 4)]]
    return "\n\n| run | " + " | ".join(cols) + " |\n|" + "---|" * (len(cols) + 1) + "\n" + "\n".join(rows)


def _env_line(rng: random.Random) -> str:
    return (f"\n\nEnvironment: PyTorch {rng.randint(1, 2)}.{rng.randint(0, 13)}.{rng.randint(0, 2)}, "
            f"CUDA {rng.choice(_WORDS['cuda'])}, {rng.randint(1, 8)}x {rng.choice(_WORDS['gpu'])}, "
            f"Python 3.{rng.randint(7, 12)}, run {rng.randint(0, 10**9)}")


def _plain(rng: random.Random, i: int) -> dict[str, Any]:
    title, body, replies = rng.choice(_PLAIN)
    fill = {k: rng.choice(v) for k, v in _WORDS.items()}
    fill.update(bs=rng.choice((16, 32, 64, 128, 256)), line=rng.randint(10, 900), alloc=rng.randint(20, 4000),
                n=rng.randint(5, 50_000))
    comments = [{"author": f"maint{i % 53}" if k == 0 else f"user{rng.randint(0, 10**6)}",
                 "author_association": "OWNER" if k == 0 else "NONE", "body": text.format(**fill)}
                for k, text in enumerate(replies)]
    return {"title": title.format(**fill), "body": body.format(**fill), "comments": comments}


def _comment_copy(c: Comment, suffix: str, shift: timedelta) -> Comment:
    return c.model_copy(update={"id": f"{c.id}-{suffix}", "created_at": c.created_at + shift,
                                "replies": [_comment_copy(r, suffix, shift) for r in c.replies]})


def pipeline_corpus(n: int, seed: int = 0) -> tuple[list[Thread], dict[str, dict[str, Any]]]:
    """``n`` threads and the repositories' metadata (see the module docstring); deterministic for a seed."""
    rng = random.Random(seed)
    pos, neg = real_templates()
    out: list[Thread] = []
    numbers: dict[str, int] = {}
    for i in range(n):
        r = i // THREADS_PER_REPO
        repo = f"bench{r % 89}/paper-{r}"
        numbers[repo] = numbers.get(repo, 0) + 1
        num = numbers[repo]
        u = rng.random()
        if u < RELEVANT_SHARE + HARD_NEGATIVE_SHARE:
            tpl = rng.choice(pos) if u < RELEVANT_SHARE else rng.choice(neg)
            shift = timedelta(days=rng.randint(-700, 700))
            body = tpl.body + _env_line(rng) + (_log_block(rng) if rng.random() < 0.5 else "")
            t = tpl.model_copy(update={
                "repo": repo, "number": num, "url": f"https://github.com/{repo}/issues/{num}", "body": body,
                "created_at": tpl.created_at + shift, "updated_at": (tpl.updated_at or tpl.created_at) + shift,
                "closed_at": tpl.closed_at + shift if tpl.closed_at else None,
                "comments": [_comment_copy(c, str(i), shift) for c in tpl.comments],
                **({"kind": "issue"} if tpl.kind == "pull_request" else {})})
        else:
            p = _plain(rng, i)
            created = datetime(rng.randint(2019, 2025), rng.randint(1, 12), rng.randint(1, 28), 12, tzinfo=UTC)
            t = Thread(repo=repo, number=num, kind="issue", url=f"https://github.com/{repo}/issues/{num}",
                       title=p["title"], body=p["body"] + _env_line(rng) + (_log_block(rng) if rng.random() < 0.3
                                                                            else ""),
                       author=f"user{rng.randint(0, 10**6)}", author_association="NONE",
                       state=rng.choice(("open", "closed")), created_at=created, updated_at=created,
                       comments=[Comment(id=f"bench-{i}-{k}", created_at=created + timedelta(hours=k + 1), **c)
                                 for k, c in enumerate(p["comments"])])
        out.append(t)
    meta = {repo: {"stars": 200 + len(repo) * 37, "archived": False,
                   "has_issues": True, "has_discussions": True} for repo in numbers}
    return out, meta


def _dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _counts(m: Measured) -> dict[str, Any]:
    for line in reversed(m.output.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line).get("counts", {})
            except ValueError:
                continue
    return {}


def run_bench(threads: int = 200_000, seed: int = 0, keep: Path | None = None) -> StageReport:
    """Generate ``threads`` threads, serve them, run every offline stage as its command and measure it."""
    from miner.fake_process import FakeGitHubProcess

    report = StageReport(stage="bench pipeline")
    corpus, meta = pipeline_corpus(threads, seed)
    with tempfile.TemporaryDirectory(prefix="reprodiag-bench-pipeline-") as tmp:
        d = keep if keep is not None else Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        ws, out = d / "ws", d / "datasets"
        tok = d / "token"
        tok.touch(mode=0o600)
        tok.write_text(TOKEN + "\n", encoding="utf-8")
        (d / "repos.txt").write_text("".join(r + "\n" for r in meta), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRODIAG_", "GITHUB_TOKEN"))}
        with FakeGitHubProcess(corpus, meta, tokens=[TOKEN], workers=2) as srv:
            results = {
                "index": _stage(ws, ("index", "--repos-file", str(d / "repos.txt"), "--min-stars", "200",
                                     "--api-url", srv.url, "--token-file", str(tok)), env),
                "mine": _stage(ws, ("mine", "--api-url", srv.url, "--token-file", str(tok), "--include-prs"), env),
            }
        for name, args in (("filter", ("filter",)), ("extract", ("extract",)), ("score", ("score",)),
                           ("build", ("build", "-o", str(out)))):
            results[name] = _stage(ws, args, env)
        size = _dir_mb(ws)
    lines = []
    for name, (m, counts, ws_mb) in results.items():
        if m.rc != 0:
            raise RuntimeError(f"{name} failed: {m.output[-600:]}")
        key, unit = _ROWS[name]
        rows = int(sum(counts.get(k, 0) or 0 for k in key))
        report.counts.update({f"{name}_wall_s": round(m.wall_s, 1), f"{name}_cpu_s": round(m.cpu_s, 1),
                              f"{name}_peak_rss_mb": round(m.peak_rss_mb), f"{name}_rows": rows,
                              f"{name}_workspace_mb": round(ws_mb, 1)})
        lines.append(f"{name:8s} {m.wall_s:8.1f} s wall {m.cpu_s:8.1f} s CPU {m.peak_rss_mb:7,.0f} MB peak "
                     f"{rows:9,d} {unit} {rows / max(m.wall_s, 1e-9):9,.0f} {unit}/s  workspace {ws_mb:8,.1f} MB")
    report.counts.update({"threads": threads, "workspace_mb": round(size, 1)})
    report.notes.append(f"{threads:,} generated threads (about {RELEVANT_SHARE:.0%} reproductions); per stage:")
    report.notes.extend(lines)
    return report


#: The rows each stage handled: the counts of its report that add up to them, and their unit.
_ROWS: dict[str, tuple[tuple[str, ...], str]] = {
    "index": (("repos",), "repos"), "mine": (("threads_total",), "threads"), "filter": (("threads",), "threads"),
    "extract": (("records",), "threads"), "score": (("records",), "records"),
    "build": (("sft rows", "dpo pairs", "eval items"), "rows"),
}


def _stage(ws: Path, args: Sequence[str], env: dict[str, str]) -> tuple[Measured, dict[str, Any], float]:
    m = run_measured(reprodiag_argv("-q", "-w", str(ws), *args), env=env)
    return m, _counts(m), _dir_mb(ws) if ws.exists() else 0.0
