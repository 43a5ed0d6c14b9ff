"""Records grown from extractions of real threads, for benchmarks at crawl scale.

:func:`grow_records` turns the bundled seed records (``scoring/data/real_records.jsonl.gz``: rules
extractions of the real-thread corpus, the older labeled sets and the sample, plus variants with planted
secrets, mentions, cross-posts, old framework-bound causes and odd unicode) into any number of distinct
records: each grown record takes the facts of one seed record and the sentences of two to four others, a
new repository (about 40 records per repository) and number, and a creation date spread over 2016–2025.
About 3% are cross-posts (another grown record's text under a new id) and about 2% carry a planted secret.
Deterministic for a seed.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SEED_RECORDS = Path(__file__).with_name("data") / "real_records.jsonl.gz"
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_SECRETS = (" token ghp_{r}{r}Q7r8s9T0u1 ", " key sk-proj-{r}{r}Kc9Wd3Re6Ty ", " mail {r}@example.org ",
            " log at /home/{r}/exp/run.log ", " host 10.{n}.3.4 ")


def seed_records() -> list[dict[str, Any]]:
    with gzip.open(SEED_RECORDS, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def grow_records(n: int, *, seed: int = 0) -> Iterator[dict[str, Any]]:
    """``n`` record documents (see the module docstring)."""
    rng = random.Random(seed)
    seeds = seed_records()
    sentences = [s for d in seeds for s in _SENTENCE.split(d.get("problem_statement") or "") if len(s) > 20]
    causes = [d["root_cause"] for d in seeds if d.get("root_cause")]
    recent: deque[str] = deque(maxlen=500)  # texts a cross-post may copy
    for i in range(n):
        d = copy.deepcopy(seeds[rng.randrange(len(seeds))])
        repo_no = i // 40
        owner, name = d["repo"].split("/", 1)
        d["repo"] = f"{owner}/{name}-{repo_no}"
        d["thread_id"] = f"{d['repo']}#{i + 1}"
        if recent and rng.random() < 0.03:
            d["problem_statement"] = recent[rng.randrange(len(recent))]
        else:
            d["problem_statement"] = " ".join(rng.choice(sentences) for _ in range(rng.randint(2, 4)))
            recent.append(d["problem_statement"])
        if d.get("root_cause"):
            d["root_cause"] = rng.choice(causes)
        if rng.random() < 0.02:
            token = "".join(rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(8))
            d["problem_statement"] += rng.choice(_SECRETS).format(r=token, n=rng.randint(1, 250))
        stats = d.setdefault("stats", {})
        stats["created_at"] = f"{rng.randint(2016, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T12:00:00Z"
        yield d


def write_grown(path: Path, n: int, *, seed: int = 0) -> int:
    """Write :func:`grow_records` as JSONL; returns the bytes written."""
    with path.open("w", encoding="utf-8") as fh:
        for d in grow_records(n, seed=seed):
            fh.write(json.dumps(d, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path.stat().st_size
