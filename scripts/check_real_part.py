"""Check a part file of the real-thread corpus or of the real answer set (plain Python, no project imports).

    python3 scripts/check_real_part.py threads extract/data/real/parts/cv.jsonl
    python3 scripts/check_real_part.py answers eval_diagnosis/data/answers_real/parts/a.jsonl

Prints one line per problem and a summary; exit 1 when a line is malformed."""

from __future__ import annotations

import collections
import json
import re
import sys
from datetime import datetime

TYPES = {"hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware", "other"}
RES = {"resolved", "unresolved_valuable", "unresolved"}
NEG = {"bug_report", "install", "oom", "usage", "weights", "feature_request", "near_miss", "other"}
ASSOC = {"OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE"}


def _date(v: object) -> bool:
    try:
        datetime.fromisoformat(str(v).replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def _numbers_in(text: str) -> set[float]:
    out = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_.])[-+]?\d+(?:[.,]\d+)?", text):
        try:
            out.add(round(float(m.group().replace(",", ".")), 6))
        except ValueError:
            pass
    return out


def check_thread(doc: dict) -> list[str]:
    errs = []
    t, g = doc.get("thread"), doc.get("gold")
    if not isinstance(t, dict) or not isinstance(g, dict):
        return ["needs 'thread' and 'gold' objects"]
    if not str(doc.get("source_url", "")).startswith("https://github.com/"):
        errs.append("source_url must be the real thread's https://github.com/... URL")
    for k in ("repo", "number", "kind", "title", "body", "state", "created_at", "updated_at", "comments"):
        if k not in t:
            errs.append(f"thread.{k} missing")
    if str(t.get("repo", "")).count("/") != 1:
        errs.append("thread.repo must be owner/name")
    if t.get("kind") not in ("issue", "pull_request", "discussion"):
        errs.append("thread.kind must be issue|pull_request|discussion")
    if t.get("state") not in ("open", "closed"):
        errs.append("thread.state must be open|closed")
    if t.get("author_association", "NONE") not in ASSOC:
        errs.append(f"bad author_association {t.get('author_association')!r}")
    for k in ("created_at", "updated_at"):
        if k in t and not _date(t[k]):
            errs.append(f"thread.{k} not ISO-8601")
    allowed = {"repo", "number", "kind", "url", "title", "body", "author", "author_association", "state",
               "state_reason", "created_at", "updated_at", "closed_at", "labels", "reactions", "category",
               "answer_id", "comments"}
    extra = set(t) - allowed
    if extra:
        errs.append(f"thread has unknown keys {sorted(extra)}")
    cids = set()
    for i, c in enumerate(t.get("comments", [])):
        for k in ("id", "body", "created_at"):
            if k not in c:
                errs.append(f"comment {i} lacks {k}")
        if set(c) - {"id", "author", "author_association", "body", "created_at", "reactions", "is_answer", "replies"}:
            errs.append(f"comment {i} has unknown keys")
        if c.get("author_association", "NONE") not in ASSOC:
            errs.append(f"comment {i} bad author_association")
        if c.get("id") in cids:
            errs.append(f"comment {i} id repeated")
        cids.add(c.get("id"))
    if not isinstance(g.get("is_reproduction"), bool):
        errs.append("gold.is_reproduction must be true/false")
    if g.get("error_type") not in TYPES:
        errs.append("gold.error_type must be one of " + ", ".join(sorted(TYPES)))
    if not isinstance(g.get("is_resolved"), bool):
        errs.append("gold.is_resolved must be true/false")
    if g.get("resolution_type") not in RES:
        errs.append("gold.resolution_type must be one of " + ", ".join(sorted(RES)))
    if g.get("is_resolved") and g.get("resolution_type") != "resolved":
        errs.append("is_resolved true needs resolution_type resolved")
    if not g.get("is_resolved") and g.get("resolution_type") == "resolved":
        errs.append("resolution_type resolved needs is_resolved true")
    if g.get("is_reproduction") is False:
        if g.get("negative_kind") not in NEG:
            errs.append("negatives need gold.negative_kind in " + ", ".join(sorted(NEG)))
        if g.get("paper_value") is not None or g.get("obtained_value") is not None:
            errs.append("negatives have null values")
    text = " ".join([str(t.get("title", "")), str(t.get("body", ""))] +
                    [str(c.get("body", "")) for c in t.get("comments", [])] +
                    [str(r.get("body", "")) for c in t.get("comments", []) for r in c.get("replies", [])])
    nums = _numbers_in(text)
    for k in ("paper_value", "obtained_value"):
        v = g.get(k)
        if v is not None:
            if not isinstance(v, (int, float)):
                errs.append(f"gold.{k} must be a number or null")
            elif round(float(v), 6) not in nums:
                errs.append(f"gold.{k}={v} does not appear literally in the thread text")
    if g.get("language") not in ("en", "zh", "ja", "ko", "mixed"):
        errs.append("gold.language must be en|zh|ja|ko|mixed")
    return errs


def check_answer(doc: dict) -> list[str]:
    errs = []
    it = doc.get("item")
    if not isinstance(it, dict):
        return ["needs an 'item' object"]
    for k in ("id", "error_type", "symptom", "gold_root_cause", "source_thread"):
        if not it.get(k):
            errs.append(f"item.{k} missing")
    if it.get("error_type") not in TYPES - {"other"}:
        errs.append("item.error_type must be one of the five types")
    if set(it) - {"id", "error_type", "environment", "paper", "symptom", "tried", "question", "gold_root_cause",
                  "acceptable_directions", "source_thread", "created_year"}:
        errs.append("item has unknown keys")
    if not isinstance(doc.get("answer"), str) or not doc["answer"].strip():
        errs.append("answer missing")
    if not isinstance(doc.get("hit"), bool):
        errs.append("hit must be true/false")
    if doc.get("hit") and not isinstance(doc.get("hit_rank"), int):
        errs.append("a hit needs hit_rank (1-based)")
    if not doc.get("hit") and doc.get("hit_rank") is not None:
        errs.append("a miss has hit_rank null")
    if not str(doc.get("source_url", "")).startswith("https://github.com/"):
        errs.append("source_url must be the real thread's URL")
    return errs


def main() -> int:
    kind, path = sys.argv[1], sys.argv[2]
    bad = 0
    counts: collections.Counter = collections.Counter()
    repos, urls = set(), collections.Counter()
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            print(f"{path}:{no}: not JSON: {exc}")
            bad += 1
            continue
        errs = check_thread(doc) if kind == "threads" else check_answer(doc)
        for e in errs:
            print(f"{path}:{no}: {e}")
        bad += bool(errs)
        urls[doc.get("source_url")] += 1
        if kind == "threads" and isinstance(doc.get("gold"), dict):
            g = doc["gold"]
            repos.add(doc.get("thread", {}).get("repo"))
            counts["positive" if g.get("is_reproduction") else "negative"] += 1
            if g.get("is_reproduction"):
                counts[f"type:{g.get('error_type')}"] += 1
                counts[f"res:{g.get('resolution_type')}"] += 1
            counts[f"lang:{g.get('language')}"] += 1
        elif kind == "answers":
            counts[f"cat:{doc.get('category')}"] += 1
            repos.add(str(doc.get("item", {}).get("source_thread", "")).split("#")[0])
    if kind == "threads":
        dup = [u for u, n in urls.items() if n > 1]
        for u in dup:
            print(f"{path}: source_url repeated: {u}")
        bad += len(dup)
    print(f"{sum(urls.values())} lines, {len(repos)} repositories, {bad} with problems")
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
