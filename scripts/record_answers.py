"""Make a recorded-answers set (see extract/recorded.py) for the labeled parts and the bundled sample.

    python scripts/record_answers.py requests WORK            # WORK/<part>.threads.jsonl, <part>.batch.jsonl
    python scripts/record_answers.py chunks WORK --size 40    # WORK/chunks/<part>-NN.txt for the answering model
    python scripts/record_answers.py join WORK --model M --date D --method TEXT [--out extract/data/recorded]

``requests`` runs the project's own ``reprodiag extract --batch`` (no filter: every thread gets a request).
The answering model reads one chunk and appends ``{"custom_id": ..., "answer": {...}}`` lines to
WORK/answers/<chunk name>.jsonl. ``join`` turns those into Batch API result files and writes the manifest.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extract.answer import ANSWER_SCHEMA, SCHEMA_HASH  # noqa: E402
from extract.prompts import PROMPT_VERSION  # noqa: E402
from extract.realcorpus import REAL_DIR, load_file  # noqa: E402
from extract.recorded import (  # noqa: E402
    MANIFEST,
    RECORDED_DIR,
    Manifest,
    chunk_text,
    dev_subset,
    results_lines,
    results_path,
)

PARTS = ("test", "dev", "sample")


def _threads(part: str) -> list[dict]:
    if part == "sample":
        from reprodiag.sample import load_sample_threads

        return [t.model_dump(mode="json") for t in load_sample_threads()]
    rows = load_file(REAL_DIR / f"{part}.jsonl")
    if part == "dev":
        rows = dev_subset(rows)
    return [r.thread.model_dump(mode="json") for r in rows]


def requests(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    for part in PARTS:
        src = work / f"{part}.threads.jsonl"
        src.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in _threads(part)), encoding="utf-8")
        batch = work / f"{part}.batch.jsonl"
        env = {"OPENAI_API_KEY": "unused-for-writing-a-batch", "PATH": "/usr/bin:/bin"}
        subprocess.run([sys.executable, "-m", "reprodiag.cli", "-q", "extract", "--backend", "openai", "--input",
                        str(src), "--no-filter", "--batch", str(batch)], check=True, cwd=ROOT, env=env)
        print(part, sum(1 for _ in batch.open(encoding="utf-8")), "requests")


def chunks(work: Path, size: int) -> None:
    out = work / "chunks"
    out.mkdir(exist_ok=True)
    for part in PARTS:
        lines = [json.loads(x) for x in (work / f"{part}.batch.jsonl").read_text(encoding="utf-8").splitlines()]
        n = max(1, round(len(lines) / size))
        step = -(-len(lines) // n)
        for i in range(n):
            sub = lines[i * step:(i + 1) * step]
            (out / f"{part}-{i:02d}.txt").write_text(chunk_text(sub, ANSWER_SCHEMA), encoding="utf-8")
            print(f"{part}-{i:02d}", len(sub))


def join(work: Path, model: str, date: str, method: str, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    answers: dict[str, object] = {}
    for f in sorted((work / "answers").glob("*.jsonl")):
        for no, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                answers[str(doc["custom_id"])] = doc["answer"]
            except (ValueError, KeyError, TypeError):
                print(f"{f}:{no}: not an answer line (left out: its request becomes an error line)")
    counts = {}
    created = int(time.time())
    for part in PARTS:
        reqs = [json.loads(x) for x in (work / f"{part}.batch.jsonl").read_text(encoding="utf-8").splitlines()]
        lines = results_lines([r for r in reqs if r.get("custom_id") in answers], answers, model=model,
                              created=created)
        results_path(dest, part).write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines),
                                            encoding="utf-8")
        counts[part] = sum(x["response"] is not None for x in lines)
        print(part, counts[part], "answers of", len(reqs))
    m = Manifest(model=model, date=date, prompt_version=PROMPT_VERSION, schema_hash=SCHEMA_HASH, method=method,
                 parts=counts, usage="estimated at 4 characters per token (the answering channel reports none)")
    (dest / MANIFEST).write_text(json.dumps(m.to_json(), indent=2) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("requests").add_argument("work", type=Path)
    c = sub.add_parser("chunks")
    c.add_argument("work", type=Path)
    c.add_argument("--size", type=int, default=40)
    j = sub.add_parser("join")
    j.add_argument("work", type=Path)
    j.add_argument("--model", required=True)
    j.add_argument("--date", required=True)
    j.add_argument("--method", required=True)
    j.add_argument("--out", type=Path, default=RECORDED_DIR)
    a = ap.parse_args()
    if a.cmd == "requests":
        requests(a.work)
    elif a.cmd == "chunks":
        chunks(a.work, a.size)
    else:
        join(a.work, a.model, a.date, a.method, a.out)


if __name__ == "__main__":
    main()
