"""The Anthropic backend runs the official SDK against the loopback fake Anthropic server."""

from __future__ import annotations

import json

import pytest

from extract.anthropic_backend import TOOL_NAME, AnthropicExtractor
from reprodiag.errors import UserError
from tests.extract.llm_helpers import answer_for, llm_thread, thread_number
from tests.fakes.llm_server import Reply

ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-SECRET"}


def _ex(srv, **kw):  # noqa: ANN001, ANN202
    return AnthropicExtractor("claude-3-5-haiku-latest", base_url=srv.base_url, env=ENV, retry_cap_s=0.05, **kw)


def test_forced_tool_use_with_retries(anthropic_server) -> None:
    t = llm_thread(1)
    anthropic_server.script(Reply.error(429, retry_after=0.01), Reply.error(529), Reply.json(answer_for(t)))
    ex = _ex(anthropic_server)
    [r] = ex.extract([t])
    req = anthropic_server.api_requests("/v1/messages")[-1].json
    assert req["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert req["tools"][0]["input_schema"]["additionalProperties"] is False
    assert "<thread-" in req["messages"][0]["content"] and "never follow" in req["system"][0]["text"].lower()
    assert r.error_type == "evaluation_protocol" and r.grounded and r.extractor.backend == "anthropic"
    assert ex.usage.calls == 1 and "$" in ex.cost_summary()
    assert len(anthropic_server.requests) == 3


def test_schema_violation_and_truncation_become_failures(anthropic_server) -> None:
    t = llm_thread(2)
    anthropic_server.script(Reply.json({"error_type": "cosmic_rays"}), Reply.truncated("partial"))
    ex = _ex(anthropic_server)
    assert ex.extract([t]) == []
    assert "truncated" in ex.failures[t.id]
    first_reask = anthropic_server.requests[1].json["messages"][-1]["content"]
    assert "schema" in first_reask


def test_injection_flag_marks_record_ungrounded(anthropic_server) -> None:
    t = llm_thread(3)
    anthropic_server.script(Reply.json(answer_for(t, injection_suspected=True)))
    [r] = _ex(anthropic_server).extract([t])
    assert not r.grounded


def test_missing_key_is_one_line_user_error() -> None:
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicExtractor("m", env={})


def test_message_batches_round_trip(anthropic_server, tmp_path) -> None:
    import anthropic

    threads = [llm_thread(i) for i in range(4)]
    ex = _ex(anthropic_server)
    path = tmp_path / "req.jsonl"
    ex.write_batch(threads, path)
    reqs = [json.loads(x) for x in path.read_text().splitlines()]
    anthropic_server.responder = lambda req: (Reply.error(500) if thread_number(req.prompt_text) == 3
                                              else Reply.json(answer_for(threads[thread_number(req.prompt_text)])))
    client = anthropic.Anthropic(base_url=anthropic_server.base_url, api_key="k", max_retries=0)
    batch = client.messages.batches.create(requests=reqs)
    out = tmp_path / "results.jsonl"
    out.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in client.messages.batches.results(batch.id)))
    recs = ex.collect(threads, out)
    assert sorted(r.thread_id for r in recs) == sorted(t.id for t in threads[:3])
    assert threads[3].id in ex.failures


def test_one_extractor_serves_several_chunks(anthropic_server) -> None:
    a, b = llm_thread(11), llm_thread(12)
    anthropic_server.script(Reply.json(answer_for(a)), Reply.json(answer_for(b)))
    ex = _ex(anthropic_server)
    assert len(ex.extract([a])) == 1
    assert len(ex.extract([b])) == 1 and not ex.failures
