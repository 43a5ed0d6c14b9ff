"""``reprodiag bench datasets``: the user's stages over a thread corpus, with the build's own audit."""

from __future__ import annotations

import json
from pathlib import Path


def test_bench_datasets_on_the_sample_corpus_passes_its_audit(tmp_path: Path, cli) -> None:  # noqa: ANN001
    proc = cli("-q", "bench", "datasets", "--corpus", "sample", "-o", str(tmp_path / "ds"),
               workspace=tmp_path / "unused", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = json.loads(proc.stdout)
    c = rep["counts"]
    assert c["threads"] == 80 and 0 < c["kept (score)"] <= c["records (extract)"] <= c["relevant (filter)"] <= 80
    assert c["sft rows"] > 0 and c["dpo pairs"] > 0 and c["eval items"] > 0
    assert c["leak rows"] == c["PII rows"] == c["non-declarative eval golds"] == 0
    assert rep["notes"][0] == "audit: all checks pass", rep["notes"]
    audit = json.loads((tmp_path / "ds" / "audit.json").read_text(encoding="utf-8"))
    assert audit["checks"]["participants_checked"] and audit["failed"] == []
    assert not (tmp_path / "unused").exists()  # the bench works in its own temporary workspace


def test_bench_datasets_through_recorded_answers_builds_from_the_llm_reader(tmp_path: Path, cli) -> None:  # noqa: ANN001
    proc = cli("-q", "bench", "datasets", "--corpus", "sample", "--reader", "recorded", "-o", str(tmp_path / "ds"),
               workspace=tmp_path / "unused", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = json.loads(proc.stdout)
    assert rep["notes"][0] == "audit: all checks pass" and "LLM reader" in rep["notes"][1]
    assert rep["counts"]["threads"] == 80 and rep["counts"]["eval items"] > 0
    card = (tmp_path / "ds" / "README.md").read_text(encoding="utf-8")
    assert "| eval | llm: " in card and "openai:recorded " in card
    bad = cli("bench", "datasets", "--corpus", "sample", "--reader", "recorded", "--answers", str(tmp_path / "none"),
              workspace=tmp_path / "unused")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_bench_datasets_bad_corpus_is_one_line(tmp_path: Path, cli) -> None:  # noqa: ANN001
    proc = cli("bench", "datasets", "--corpus", str(tmp_path / "nope.jsonl"), workspace=tmp_path / "w")
    assert proc.returncode == 2 and "--corpus" in proc.stderr and "Traceback" not in proc.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"thread": {"repo": "x"}}\n', encoding="utf-8")
    proc = cli("bench", "datasets", "--corpus", str(bad), workspace=tmp_path / "w")
    assert proc.returncode == 2 and "bad.jsonl:1" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
