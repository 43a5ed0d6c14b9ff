"""The OpenAI backends run the official SDK against the loopback fake OpenAI server."""

from __future__ import annotations

import json

import pytest

from extract.compatible_backend import CompatibleExtractor
from extract.openai_backend import OpenAIExtractor
from extract.pipeline import run_extract
from reprodiag.errors import UserError
from tests.extract.llm_helpers import answer_for, llm_thread, thread_number
from tests.fakes.llm_server import Reply

ENV = {"OPENAI_API_KEY": "sk-test-SECRETVALUE123"}


def _ex(srv, store=None, **kw):  # noqa: ANN001, ANN202
    return OpenAIExtractor("gpt-4o-mini", base_url=srv.base_url, env=ENV, store=store, retry_cap_s=0.05, **kw)


def test_structured_output_request_and_record(openai_server) -> None:
    t = llm_thread(1)
    openai_server.script(Reply.json(answer_for(t)))
    ex = _ex(openai_server)
    [r] = ex.extract([t])
    req = openai_server.api_requests("/v1/chat/completions")[0].json
    assert req["response_format"]["type"] == "json_schema" and req["response_format"]["json_schema"]["strict"]
    assert req["model"] == "gpt-4o-mini"
    assert r.symptom.paper_value == 32.7 and r.symptom.obtained_value == 21.4 and r.symptom.gap == pytest.approx(-11.3)
    assert r.grounded and r.extractor.backend == "openai" and r.extractor.model == "gpt-4o-mini"
    assert r.resolution_type == "resolved" and r.stats.comments == 2
    assert ex.usage.calls == 1 and ex.usage.input_tokens > 0
    assert "$" in ex.cost_summary()


def test_retries_honour_retry_after_and_5xx_then_succeed(openai_server) -> None:
    t = llm_thread(2)
    openai_server.script(Reply.error(429, retry_after=0.01), Reply.error(500), Reply.raw("{broken"),
                         Reply.json(answer_for(t)))
    ex = _ex(openai_server)
    assert len(ex.extract([t])) == 1
    assert len(openai_server.api_requests("/v1/chat/completions")) == 4  # the SDK itself never retried


def test_invalid_schema_and_truncated_answers_are_reasked_with_the_error(openai_server) -> None:
    t = llm_thread(3)
    openai_server.script(Reply.of_text("not json at all"), Reply.json(answer_for(t)))
    assert len(_ex(openai_server).extract([t])) == 1
    second = openai_server.api_requests("/v1/chat/completions")[1].json["messages"]
    assert "not valid JSON" in second[-1]["content"]
    openai_server.reset()
    openai_server.script(Reply.json({"is_reproduction": "maybe"}), Reply.truncated('{"is_rep'))
    ex = _ex(openai_server)
    assert ex.extract([t]) == []
    assert "truncated" in ex.failures[t.id]


def test_invented_quotes_are_reasked_then_dropped(openai_server) -> None:
    t = llm_thread(4)
    bad = answer_for(t, root_cause="Wrong seed.", evidence=[
        {"field": "root_cause", "comment_id": None, "quote": "the seed was wrong (never said)"}])
    openai_server.script(Reply.json(bad), Reply.json(bad))
    [r] = _ex(openai_server).extract([t])
    assert r.root_cause is None and not r.grounded and not r.is_resolved
    assert "root_cause" in openai_server.requests[1].json["messages"][-1]["content"]


def test_secrets_are_masked_before_sending_and_never_leak(openai_server) -> None:
    t = llm_thread(5)
    t = t.model_copy(update={"body": t.body + " my token ghp_abcdefghijklmnopqrstuvwxyz0123456789"})
    openai_server.script(Reply.error(401, "Incorrect API key provided: sk-test-SECRETVALUE123"))
    with pytest.raises(UserError) as exc:
        _ex(openai_server).extract([t])
    assert "SECRETVALUE" not in str(exc.value)
    assert "ghp_abcdefghij" not in openai_server.requests[0].prompt_text


def test_batch_of_100_with_10_percent_bad_answers(openai_server, store, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV["OPENAI_API_KEY"])
    threads = [llm_thread(i) for i in range(100)]
    store.upsert_threads(threads)

    def responder(req):  # noqa: ANN001, ANN202
        n = thread_number(req.prompt_text)
        return Reply.of_text("{oops") if n % 10 == 0 else Reply.json(answer_for(threads[n]))

    openai_server.responder = responder
    rep = run_extract(store, input=None, output=None, backend="openai", model="gpt-4o-mini",
                      base_url=openai_server.base_url, no_filter=True, concurrency=8, batch=None, collect=None)
    assert rep.counts["records"] == 90 and rep.counts["failed"] == 10
    assert store.count("records") == 90 and store.count("rejects", "stage='extract'") == 10
    calls = len(openai_server.requests)
    # a re-run costs nothing: unchanged threads are skipped, answers are cached
    rep2 = run_extract(store, input=None, output=None, backend="openai", model="gpt-4o-mini",
                       base_url=openai_server.base_url, no_filter=True, concurrency=8, batch=None, collect=None)
    assert rep2.counts["skipped_unchanged"] == 90
    assert len(openai_server.requests) - calls == 10 * 2  # only the 10 failures are asked again (+1 re-ask)


def test_cache_makes_rerun_free(openai_server, store) -> None:
    t = llm_thread(6)
    openai_server.script(Reply.json(answer_for(t)))
    a = _ex(openai_server, store=store).extract([t])
    ex = _ex(openai_server, store=store)
    b = ex.extract([t])
    assert a == b and ex.cache_hits == 1 and len(openai_server.requests) == 1


def test_batch_file_round_trip(openai_server, tmp_path) -> None:
    import openai

    threads = [llm_thread(i) for i in range(3)]
    ex = _ex(openai_server)
    path = tmp_path / "batch.jsonl"
    assert ex.write_batch(threads, path) == 3
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["url"] == "/v1/chat/completions" and lines[0]["body"]["response_format"]["type"] == "json_schema"
    openai_server.responder = lambda req: Reply.json(answer_for(threads[thread_number(req.prompt_text)]))
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="k", max_retries=0)
    f = client.files.create(file=path.open("rb"), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    out = tmp_path / "out.jsonl"
    out.write_bytes(client.files.content(b.output_file_id).content)
    recs = _ex(openai_server).collect(threads, out)
    assert sorted(r.thread_id for r in recs) == sorted(t.id for t in threads)


def test_openai_compatible_falls_back_to_json_mode_and_needs_no_key(openai_server) -> None:
    t = llm_thread(7)
    openai_server.script(Reply.error(400, "response_format json_schema not supported"), Reply.json(answer_for(t)))
    ex = CompatibleExtractor("llama3", base_url=openai_server.base_url, env={}, retry_cap_s=0.01)
    assert len(ex.extract([t])) == 1
    assert openai_server.requests[1].json["response_format"] == {"type": "json_object"}
    assert "cost unknown" in ex.cost_summary()
    with pytest.raises(UserError):
        CompatibleExtractor("m", base_url=None, env={})
    with pytest.raises(UserError):
        OpenAIExtractor("m", env={})


def test_json_wrapped_in_prose_is_read_without_a_reask(openai_server) -> None:
    """Servers without structured outputs (proxies, older models) answer with prose around the JSON."""
    t = llm_thread(9)
    body = json.dumps(answer_for(t))
    openai_server.script(Reply.of_text(f"Sure! Here is the diagnosis record:\n```json\n{body}\n```\nLet me know {{:)}}"))
    ex = _ex(openai_server)
    [r] = ex.extract([t])
    assert len(openai_server.api_requests("/v1/chat/completions")) == 1
    assert r.symptom.paper_value == 32.7 and r.root_cause == answer_for(t)["root_cause"]


def test_one_extractor_serves_several_chunks(openai_server) -> None:
    """A workspace run calls extract() once per chunk of 200 threads; the SDK client closed at the end of one
    call must not be the one the next call uses (runs over 200 threads failed with 'client has been closed')."""
    a, b = llm_thread(11), llm_thread(12)
    openai_server.script(Reply.json(answer_for(a)), Reply.json(answer_for(b)))
    ex = _ex(openai_server)
    assert len(ex.extract([a])) == 1
    assert len(ex.extract([b])) == 1 and not ex.failures
