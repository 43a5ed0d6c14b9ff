"""The streamed, vectorized scorer against the per-record scorer it replaced.

``tests/scoring/data/score_golden_*.jsonl.gz`` and ``score_golden_reports.json`` are the outputs of
``reprodiag score`` at commit 7e077c2 (the per-record implementation, since removed) on
``scoring/data/real_records.jsonl.gz`` (rules extractions of the 1,179 real-corpus threads, the older
labeled sets and the bundled sample, plus 240 variants with planted secrets, mentions, cross-posts,
old framework-bound causes and odd unicode), for three settings. Every document must come out equal,
key for key, and so must every count and note: kept, dropped and why, tiers, versions, redactions,
duplicate clusters, splits.

One deliberate change: the old scorer redacted detected framework versions as if they were addresses
(``{"cudnn": "[REDACTED_IP]"}`` for cuDNN 8.9.2.26); versions are now kept as versions. Golden values of
that shape are compared as "a version string now", and the IP count is lowered by their number.

Later additions: records carry ``relevance`` (the filter's probability, after ``grounded``); the seed
records predate it, so it is null in every output and no record is gated by ``--min-relevance``. Version 0.2.0
added the LLM reader's reasoning: ``basis`` on each hypothesis, ``verification`` and ``open_questions`` (after
``tried``); the seed records are rules extractions, so they hold the defaults (null, null, []).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from scoring.grow import SEED_RECORDS
from scoring.pipeline import run_score

DATA = Path(__file__).with_name("data")
REPORTS = json.loads((DATA / "score_golden_reports.json").read_text(encoding="utf-8"))
VERSION = re.compile(r"^[0-9][0-9A-Za-z.*+\-]*$")


@pytest.fixture(scope="module")
def records_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("diff") / "records.jsonl"
    with gzip.open(SEED_RECORDS, "rb") as fh:
        path.write_bytes(fh.read())
    return path


def _normalize(gold: dict, new: dict) -> int:
    """Apply the one deliberate change to ``gold`` (see the module docstring); returns how many values."""
    fixed = 0
    if "relevance" not in gold:
        items = list(gold.items())
        at = [k for k, _ in items].index("grounded") + 1
        gold.clear()
        gold.update(items[:at] + [("relevance", None)] + items[at:])
    if "verification" not in gold:
        items = list(gold.items())
        at = [k for k, _ in items].index("tried") + 1
        gold.clear()
        gold.update(items[:at] + [("verification", None), ("open_questions", [])] + items[at:])
    for h in gold.get("hypothesis_chain") or []:
        h.setdefault("basis", None)
    gv, nv = gold["temporal_tag"]["framework_versions"], new["temporal_tag"]["framework_versions"]
    for k, v in gv.items():
        if isinstance(v, str) and v.startswith("[REDACTED_") and VERSION.match(nv.get(k, "")):
            gv[k] = nv[k]
            fixed += 1
    return fixed


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_same_documents_counts_and_notes_as_the_per_record_scorer(name: str, records_file: Path,
                                                                   tmp_path: Path) -> None:
    expected = REPORTS[name]
    out = tmp_path / "scored.jsonl"
    report = run_score(None, input=records_file, output=out, rejects=tmp_path / "rejects.jsonl",
                       **expected["kwargs"])
    with gzip.open(DATA / f"score_golden_{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
        gold = [json.loads(line) for line in fh]
    new = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(new) == len(gold) == expected["counts"]["records"]
    versions_kept = 0
    for g, n in zip(gold, new, strict=True):
        versions_kept += _normalize(g, n)
        assert list(n) == list(g), g["thread_id"]  # the same keys, in the contract's order
        assert n == g, g["thread_id"]
    counts = dict(expected["counts"])
    counts["redacted_ip"] -= versions_kept
    counts["redacted"] -= versions_kept
    assert report.counts == counts
    assert report.notes == expected["notes"]
    assert 0 < versions_kept < 100  # four-part versions (cuDNN, TensorRT) of the planted variants, nothing else


def test_the_golden_set_exercises_every_decision() -> None:
    c = REPORTS["default"]["counts"]
    assert c["dropped_near_duplicate"] > 10 and c["tier_filtered"] > 20 and c["tier_historical"] > 20
    assert min(c[f"split_{s}"] for s in ("train", "validation", "test")) > 20
    for kind in ("github_token", "openai_key", "hf_token", "aws_access_key", "email", "home_path", "ip", "user"):
        assert c[f"redacted_{kind}"] > 0, kind
    assert REPORTS["dated"]["counts"]["split_validation"] == 0 and REPORTS["strict"]["counts"]["kept"] > c["kept"]
