"""The judge by batch (``grade --batch`` / ``--collect``) through the fake OpenAI and Anthropic Batch APIs, and
recorded verdicts (``grade --verdicts``): side by side with the offline grader and the cascade, stale ones named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_diagnosis.graders.llm import JUDGE_PROMPT_VERSION
from eval_diagnosis.graders.recorded import VERDICTS_DIR
from eval_diagnosis.pipeline import TEST_LABELS, run_grade
from reprodiag.errors import UserError
from tests.fakes.llm_fixtures import anthropic_server, openai_server  # noqa: F401
from tests.fakes.llm_server import Reply


def _labels(tmp_path: Path, n: int = 6) -> Path:
    lines = TEST_LABELS.read_text(encoding="utf-8").splitlines()[:n]
    p = tmp_path / "labels.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _verdict_for(prompt: str) -> Reply:
    """A judge reply for one request: direction 1 matches when the question mentions "truncated" (so replies
    differ by request); a request about the second labeled item fails (a failed line of the batch)."""
    if "Multi-News" not in prompt:
        return Reply.error(500, "judge crashed")
    return Reply.json({"verdicts": [{"n": 1, "reasoning": "reads the same", "match": "truncat" in prompt}],
                       "reason": "r"})


def test_openai_batch_round_trip_grades_reports_a_failed_line_and_asks_nothing_twice(
        tmp_path: Path, openai_server) -> None:  # noqa: ANN001, F811
    import openai

    labels = _labels(tmp_path)
    batch = tmp_path / "judge.jsonl"
    rep = run_grade(None, answers=None, grader="llm:openai:judge-1", out_dir=tmp_path / "o", agreement=labels,
                    batch=batch)
    lines = [json.loads(x) for x in batch.read_text().splitlines()]
    assert rep.counts["batch_requests"] == len(lines) == 6
    assert lines[0]["url"] == "/v1/chat/completions" and lines[0]["body"]["model"] == "judge-1"
    assert lines[0]["body"]["messages"][0]["content"].startswith("You grade answers")
    openai_server.responder = lambda req: _verdict_for(req.prompt_text)
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="k", max_retries=0)
    f = client.files.create(file=batch.open("rb"), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    results = tmp_path / "results.jsonl"
    out = client.files.content(b.output_file_id).content
    if b.error_file_id:
        out += client.files.content(b.error_file_id).content
    results.write_bytes(out)
    failed = sum("Multi-News" not in json.dumps(x) for x in lines)
    assert 0 < failed < 6

    got = run_grade(None, answers=None, grader="llm:openai:judge-1", out_dir=tmp_path / "o", agreement=labels,
                    collect=results)
    assert got.counts["errors"] == failed and got.counts["labels"] == 6 - failed  # reported, not fatal
    assert "collected" in got.notes[0]
    again = run_grade(None, answers=None, grader="llm:openai:judge-1", out_dir=tmp_path / "o", agreement=labels,
                      batch=tmp_path / "rest.jsonl", collect=results)
    assert again.counts["batch_requests"] == failed and again.counts["already_judged"] == 6 - failed


def test_anthropic_message_batches_round_trip(tmp_path: Path, anthropic_server) -> None:  # noqa: ANN001, F811
    import anthropic

    labels = _labels(tmp_path)
    batch = tmp_path / "judge.jsonl"
    run_grade(None, answers=None, grader="llm:anthropic:judge-2", out_dir=tmp_path / "o", agreement=labels,
              batch=batch)
    reqs = [json.loads(x) for x in batch.read_text().splitlines()]
    assert set(reqs[0]) == {"custom_id", "params"} and reqs[0]["params"]["system"].startswith("You grade answers")
    anthropic_server.responder = lambda req: _verdict_for(req.prompt_text)
    client = anthropic.Anthropic(base_url=anthropic_server.base_url, api_key="k", max_retries=0)
    b = client.messages.batches.create(requests=reqs)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n"
                               for r in client.messages.batches.results(b.id)))
    got = run_grade(None, answers=None, grader="llm:anthropic:judge-2", out_dir=tmp_path / "o", agreement=labels,
                    collect=results)
    assert got.counts["labels"] + got.counts["errors"] == 6 and got.counts["errors"] >= 1


def test_batch_needs_a_batch_provider(tmp_path: Path) -> None:
    for bad in ("lexical", "llm:openai-compatible:m@http://x", "lexical+llm:openai:m"):
        with pytest.raises(UserError, match="--batch/--collect"):
            run_grade(None, answers=None, grader=bad, out_dir=tmp_path, agreement=_labels(tmp_path),
                      batch=tmp_path / "b.jsonl")


def test_shipped_recorded_verdicts_are_current_and_reported_beside_the_offline_grader(tmp_path: Path) -> None:
    rep = run_grade(None, answers=None, grader="lexical", out_dir=tmp_path, agreement=TEST_LABELS,
                    verdicts=VERDICTS_DIR)
    doc = json.loads((tmp_path / "agreement.json").read_text())
    g = doc["graders"]
    assert set(g) == {"offline grader (lexical)", "judge (recorded verdicts)",
                      "cascade (lexical, uncertain to the judge)"}
    assert doc["manifest"]["judge_prompt_version"] == JUDGE_PROMPT_VERSION and not doc["stale"]
    assert g["judge (recorded verdicts)"]["errors"] == 0  # a verdict for every labeled answer
    off, casc = g["offline grader (lexical)"], g["cascade (lexical, uncertain to the judge)"]
    assert casc["accuracy"] >= off["accuracy"] and 0 < rep.counts["sent_to_judge"] < off["n"]
    assert all("kappa" in ln and "[" in ln for ln in rep.notes[1:])


def test_stale_verdicts_are_named_not_scored(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    src = VERDICTS_DIR
    (folder / "test.results.jsonl").write_bytes((src / "test.results.jsonl").read_bytes())
    man = json.loads((src / "manifest.json").read_text())
    man["judge_prompt_version"] = "judge-v0"
    (folder / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(UserError, match="stale.*judge-v0"):
        run_grade(None, answers=None, grader="lexical", out_dir=tmp_path, agreement=TEST_LABELS, verdicts=folder)
    rep = run_grade(None, answers=None, grader="lexical", out_dir=tmp_path, agreement=TEST_LABELS, verdicts=folder,
                    allow_stale=True)
    assert "STALE" in rep.notes[0] and "judge-v0" in rep.notes[0]
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(UserError, match="not a recorded-verdicts manifest"):
        run_grade(None, answers=None, grader="lexical", out_dir=tmp_path, agreement=TEST_LABELS, verdicts=folder)
    (folder / "manifest.json").write_text(json.dumps({**man, "parts": ["test"]}))
    with pytest.raises(UserError, match="not a recorded-verdicts manifest.*'parts' is not an object"):
        run_grade(None, answers=None, grader="lexical", out_dir=tmp_path, agreement=TEST_LABELS, verdicts=folder)
