"""A model under test answered by batch (``eval --batch`` / ``--collect``) through the fake OpenAI and Anthropic
Batch APIs, driven with the official SDKs: the requests ask what the direct path asks, the answers join back to
their items, failed lines are error rows a later collect fills in, and a rerun asks nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_diagnosis.io import load_eval_set
from eval_diagnosis.pipeline import run_eval
from eval_diagnosis.prompt import SYSTEM
from reprodiag.errors import UserError
from tests.fakes.llm_server import Reply

ANSWER = "1. The learning-rate warmup is shorter than the paper's\n2. Test-time augmentation was left out"


def _set(built: Path, tmp_path: Path, n: int = 5) -> Path:
    p = tmp_path / "set.jsonl"
    p.write_text("".join(i.model_dump_json() + "\n" for i in load_eval_set(built)[:n]), encoding="utf-8")
    return p


def _openai_batch(server, requests: Path, out: Path) -> None:  # noqa: ANN001
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    f = client.files.create(file=requests.open("rb"), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    data = client.files.content(b.output_file_id).content if b.output_file_id else b""
    if b.error_file_id:
        data += client.files.content(b.error_file_id).content
    out.write_bytes(data)


def test_openai_batch_round_trip_joins_answers_reports_failures_and_asks_nothing_twice(
        built: Path, tmp_path: Path, openai_server) -> None:  # noqa: ANN001
    es = _set(built, tmp_path)
    items = load_eval_set(es)
    req = tmp_path / "req.jsonl"
    rep = run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=1,
                   store=None, batch=req)
    lines = [json.loads(x) for x in req.read_text(encoding="utf-8").splitlines()]
    assert rep.counts["batch_requests"] == len(lines) == len(items)
    assert not (tmp_path / "e" / "answers.jsonl").exists()  # writing requests answers nothing
    body = lines[0]["body"]
    assert lines[0]["url"] == "/v1/chat/completions" and body["model"] == "gpt-test"
    assert body["messages"][0] == {"role": "system", "content": SYSTEM} and "Symptom:" in body["messages"][1]["content"]
    assert len({x["custom_id"] for x in lines}) == len(lines) and all(len(x["custom_id"]) <= 64 for x in lines)

    # the item whose symptom is first in the set fails on the provider's side; the others are answered
    first = items[0].symptom or ""
    openai_server.responder = (lambda r: Reply.error(500, "overloaded") if first and first in r.prompt_text
                               else Reply.of_text(ANSWER))
    results = tmp_path / "results.jsonl"
    _openai_batch(openai_server, req, results)
    got = run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=1,
                   store=None, collect=results)
    rows = [json.loads(x) for x in (tmp_path / "e" / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert got.counts["answered"] == len(items) and got.counts["errors"] == 1
    assert {r["id"] for r in rows} == {it.id for it in items} and {r["model"] for r in rows} == {"openai:gpt-test"}
    assert sum(r["answer"] == ANSWER for r in rows) == len(items) - 1
    assert (tmp_path / "e" / "results.json").exists() and (tmp_path / "e" / "report.html").exists()

    # the rerun asks only for the failed answer; its results fill the gap
    again = run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=1,
                     store=None, batch=tmp_path / "rest.jsonl")
    assert again.counts["batch_requests"] == 1 and again.counts["already_answered"] == len(items) - 1
    openai_server.responder = lambda r: Reply.of_text(ANSWER)
    _openai_batch(openai_server, tmp_path / "rest.jsonl", tmp_path / "rest-results.jsonl")
    done = run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=1,
                    store=None, collect=tmp_path / "rest-results.jsonl")
    assert done.counts["errors"] == 0 and done.counts["reused"] == len(items) - 1 and done.counts["answered"] == 1
    results_doc = json.loads((tmp_path / "e" / "results.json").read_text(encoding="utf-8"))
    assert "openai:gpt-test" in json.dumps(results_doc)


def test_anthropic_message_batches_round_trip(built: Path, tmp_path: Path, anthropic_server) -> None:  # noqa: ANN001
    import anthropic

    es = _set(built, tmp_path, 3)
    req = tmp_path / "new" / "folder" / "req.jsonl"  # folders made as needed
    run_eval(es, models=["anthropic:claude-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=1,
             store=None, batch=req)
    reqs = [json.loads(x) for x in req.read_text(encoding="utf-8").splitlines()]
    assert set(reqs[0]) == {"custom_id", "params"} and reqs[0]["params"]["system"] == SYSTEM
    anthropic_server.responder = lambda r: Reply.of_text(ANSWER)
    client = anthropic.Anthropic(base_url=anthropic_server.base_url, api_key="k", max_retries=0)
    b = client.messages.batches.create(requests=reqs)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n"
                               for r in client.messages.batches.results(b.id)), encoding="utf-8")
    got = run_eval(es, models=["anthropic:claude-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=1,
                   store=None, collect=results)
    assert got.counts["answered"] == 3 and got.counts["errors"] == 0


def test_results_of_another_model_or_prompt_are_not_taken(built: Path, tmp_path: Path, openai_server) -> None:  # noqa: ANN001
    """Answers are joined by a custom id made of the model, the prompt version and the prompt: results written
    for another model are not anybody's answers here (error rows, not wrong answers)."""
    es = _set(built, tmp_path, 2)
    req = tmp_path / "req.jsonl"
    run_eval(es, models=["openai:model-a"], grader="lexical", out_dir=tmp_path / "a", concurrency=1, store=None,
             batch=req)
    openai_server.responder = lambda r: Reply.of_text(ANSWER)
    _openai_batch(openai_server, req, tmp_path / "res.jsonl")
    got = run_eval(es, models=["openai:model-b"], grader="lexical", out_dir=tmp_path / "b", concurrency=1,
                   store=None, collect=tmp_path / "res.jsonl")
    assert got.counts["errors"] == 2 and any("another model" in n for n in got.notes)


def test_batch_bad_input_is_one_line(built: Path, tmp_path: Path, cli) -> None:  # noqa: ANN001
    es = _set(built, tmp_path, 2)
    for models, match in ((["baseline:prior"], "API model"), (["hf:x"], "API model"),
                          (["openai:a", "anthropic:b"], "exactly one --model")):
        with pytest.raises(UserError, match=match):
            run_eval(es, models=models, grader="lexical", out_dir=tmp_path / "x", concurrency=1, store=None,
                     batch=tmp_path / "b.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"custom_id": "ans-1", "response": {}}\n{not json\n', encoding="utf-8")
    for args, needle in ((["--collect", str(broken)], "broken.jsonl:2"),
                         (["--collect", str(tmp_path / "none.jsonl")], "no batch results"),
                         (["--batch", str(tmp_path / "b.jsonl"), "--collect", str(broken)], "not both")):
        proc = cli("eval", "--eval-set", str(es), "--model", "openai:gpt-test", "--grader", "lexical",
                   "-o", str(tmp_path / "o"), *args, workspace=tmp_path / "ws")
        assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
