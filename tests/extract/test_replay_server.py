"""The recorded-answers server: the project's OpenAI backend (the official SDK, unchanged) extracts through it
and gets exactly the records the recorded answers give offline; unknown threads are a provider error."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from extract.llm import custom_id
from extract.pipeline import run_extract
from extract.prompts import build_messages
from extract.recorded import RecordedExtractor, results_lines
from extract.replay_server import serve_recorded, thread_key
from tests.extract.llm_helpers import answer_for, llm_thread

KEY = "sk-test-RECORDED0001"


def _results(tmp_path: Path, threads: list) -> Path:
    reqs = [{"custom_id": custom_id(t.id), "body": {"messages": [
        {"role": "system", "content": build_messages(t)[0]}, {"role": "user", "content": build_messages(t)[1]}]}}
        for t in threads]
    lines = results_lines(reqs, {custom_id(t.id): answer_for(t) for t in threads}, model="m", created=0)
    path = tmp_path / "test.results.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_the_openai_backend_through_the_server_gives_the_recorded_records(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    threads = [llm_thread(i) for i in range(1, 6)]
    results = _results(tmp_path, threads[:4])  # the fifth has no recorded answer
    src = tmp_path / "threads.jsonl"
    src.write_text("".join(t.model_dump_json() + "\n" for t in threads), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serve_recorded(results, threads, model="m") as srv:
        rep = run_extract(None, input=src, output=tmp_path / "records.jsonl", backend="openai", model="m",
                          base_url=srv.url, no_filter=True, concurrency=2)
        assert srv.served == 4 and srv.unknown >= 1
    assert rep.counts["records"] == 4 and rep.counts["failed"] == 1
    rejects = (tmp_path / "records.rejects.jsonl").read_text(encoding="utf-8")
    assert threads[4].id in rejects and "404" in rejects and KEY not in rejects
    got = {json.loads(x)["thread_id"]: json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()}
    offline = {r.thread_id: r.model_dump(mode="json") for r in RecordedExtractor(results).extract(threads[:4])}
    for k, doc in offline.items():  # the same fields read from the same answers, whichever way they came
        for f in ("error_type", "symptom", "root_cause", "resolution", "is_resolved", "hypothesis_chain", "evidence"):
            assert got[k][f] == doc[f], (k, f)


def test_the_sdk_sees_openai_shaped_answers_and_errors(tmp_path: Path) -> None:
    threads = [llm_thread(i) for i in range(1, 3)]
    with serve_recorded(_results(tmp_path, threads[:1]), threads, model="m") as srv:
        client = openai.OpenAI(api_key=KEY, base_url=srv.url, max_retries=0)
        system, user = build_messages(threads[0], "abcd1234")  # another delimiter than the recorded request's
        resp = client.chat.completions.create(model="m", messages=[{"role": "system", "content": system},
                                                                   {"role": "user", "content": user}])
        assert json.loads(resp.choices[0].message.content or "")["root_cause"] == answer_for(threads[0])["root_cause"]
        assert resp.usage is not None and resp.usage.prompt_tokens > 0
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                 "content": build_messages(threads[1])[1]}])
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="m", messages=[{"role": "system", "content": "x"}])


def test_a_thread_is_known_by_repository_kind_date_and_title_not_by_its_state() -> None:
    t = llm_thread(1)
    closed = t.model_copy(update={"state": "closed", "state_reason": "COMPLETED"})
    assert thread_key(build_messages(t)[1]) == thread_key(build_messages(closed)[1]) != ""
    renamed = t.model_copy(update={"title": "another title"})
    assert thread_key(build_messages(renamed)[1]) != thread_key(build_messages(t)[1])
    assert thread_key("no header here") == ""
