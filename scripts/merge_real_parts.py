"""Merge labeled part files (one per collection batch) into the corpus's frozen parts, split by repository.

    python3 scripts/merge_real_parts.py threads extract/data/real/parts extract/data/real
    python3 scripts/merge_real_parts.py answers eval_diagnosis/data/answers_real/parts eval_diagnosis/data/answers_real

Rows already in an output part keep their part (a frozen ``test`` row never moves). The ``test`` part was
frozen on its first measurement: new rows go to ``dev`` (``split_of`` decided only the first 489 threads),
and a new row from a repository that ``test`` holds is refused (it would leak across the split). Rows are
deduplicated by source URL (threads) or (item id, answer) (answers) and sorted, so reruns are stable."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


def split_of(repo: str) -> str:
    return "test" if int(hashlib.sha256(repo.lower().encode()).hexdigest(), 16) % 5 in (0, 1) else "dev"


def main() -> int:
    kind, src, dst = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    rows: dict[tuple, dict] = {}
    for part in ("dev", "test"):
        p = dst / f"{part}.jsonl"
        if p.exists():
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    d = json.loads(line)
                    rows[_key(kind, d)] = d
    test_repos = {_repo(kind, d) for d in rows.values() if d["split"] == "test"}
    refused = 0
    for f in sorted(src.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            k = _key(kind, d)
            if k in rows:
                continue
            if _repo(kind, d) in test_repos:
                refused += 1
                continue
            d["split"] = "dev" if test_repos else split_of(_repo(kind, d))
            rows[k] = d
    if refused:
        print(f"refused {refused} new rows from repositories of the frozen test part")
    dst.mkdir(parents=True, exist_ok=True)
    for part in ("dev", "test"):
        docs = sorted((d for d in rows.values() if d["split"] == part), key=lambda d: _sort(kind, d))
        (dst / f"{part}.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                                           encoding="utf-8")
        print(part, len(docs))
    return 0


def _repo(kind: str, d: dict) -> str:
    return (d["thread"]["repo"] if kind == "threads" else d["item"]["source_thread"].split("#")[0]).lower()


def _key(kind: str, d: dict) -> tuple:
    return (d["source_url"].rstrip("/").lower(),) if kind == "threads" else (d["item"]["id"], d["answer"])


def _sort(kind: str, d: dict) -> tuple:
    if kind == "threads":
        return (d["thread"]["repo"].lower(), d["thread"]["kind"], d["thread"]["number"])
    return (d["item"]["id"], d.get("category", ""), d["answer"])


if __name__ == "__main__":
    sys.exit(main())
