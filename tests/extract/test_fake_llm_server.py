"""The fake LLM servers speak the real protocols: the official SDKs run unchanged against them."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from tests.fakes.llm_server import Reply


def _oa(srv, **kw):  # noqa: ANN001, ANN202
    return openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0, **kw)


def _an(srv, **kw):  # noqa: ANN001, ANN202
    return anthropic.Anthropic(base_url=srv.base_url, api_key="sk-ant-test", max_retries=0, **kw)


def test_openai_json_schema_and_usage(openai_server) -> None:
    openai_server.script(Reply.json({"answer": 42}))
    resp = _oa(openai_server).chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "x" * 400}],
        response_format={"type": "json_schema", "json_schema": {"name": "a", "strict": True, "schema": {
            "type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
            "additionalProperties": False}}},
    )
    assert json.loads(resp.choices[0].message.content) == {"answer": 42}
    assert resp.choices[0].finish_reason == "stop"
    schema = json.dumps(openai_server.requests[-1].json["response_format"], sort_keys=True)
    assert resp.usage.prompt_tokens == (len("be brief") + 1 + 400) // 4 + len(schema) // 4  # the schema is billed
    req = openai_server.requests[-1]
    assert req.json["response_format"]["type"] == "json_schema"
    assert req.headers["authorization"] == "Bearer sk-test"


def test_openai_errors_truncation_and_sdk_retry(openai_server) -> None:
    openai_server.script(Reply.error(429, "slow down", retry_after=0.01))
    with pytest.raises(openai.RateLimitError) as exc:
        _oa(openai_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert exc.value.response.headers["retry-after"] == "0.01"
    openai_server.script(Reply.error(500), Reply.of_text("second"))
    resp = _oa(openai_server, ).with_options(max_retries=1).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}])
    assert resp.choices[0].message.content == "second"
    openai_server.script(Reply.truncated('{"a": '))
    resp = _oa(openai_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert resp.choices[0].finish_reason == "length"
    openai_server.script(Reply.raw("{not json"))
    with pytest.raises(json.JSONDecodeError):  # the SDK surfaces a broken body as a decode error
        _oa(openai_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])


def test_openai_responder_and_tool_calls(openai_server) -> None:
    openai_server.responder = lambda req: Reply.tool({"echo": req.prompt_text[-3:]})
    resp = _oa(openai_server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "abcxyz"}],
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
    call = resp.choices[0].message.tool_calls[0]
    assert call.function.name == "f" and json.loads(call.function.arguments) == {"echo": "xyz"}


def test_openai_batch_round_trip(openai_server, tmp_path) -> None:
    openai_server.responder = lambda req: Reply.json({"n": req.prompt_text})
    lines = [{"custom_id": f"c{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "m", "messages": [{"role": "user", "content": str(i)}]}} for i in range(3)]
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    client = _oa(openai_server)
    f = client.files.create(file=p.open("rb"), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    b = client.batches.retrieve(b.id)
    assert b.status == "completed"
    out = [json.loads(x) for x in client.files.content(b.output_file_id).text.splitlines()]
    got = {o["custom_id"]: json.loads(o["response"]["body"]["choices"][0]["message"]["content"]) for o in out}
    assert got == {"c0": {"n": "0"}, "c1": {"n": "1"}, "c2": {"n": "2"}}


def test_anthropic_tool_use_and_errors(anthropic_server) -> None:
    anthropic_server.script(Reply.error(429, retry_after=0.01), Reply.error(529), Reply.json({"k": "v"}))
    client = _an(anthropic_server)
    tools = [{"name": "record", "description": "d", "input_schema": {"type": "object"}}]
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(model="claude", max_tokens=10, messages=[{"role": "user", "content": "q"}])
    with pytest.raises(anthropic.APIStatusError) as exc:
        client.messages.create(model="claude", max_tokens=10, messages=[{"role": "user", "content": "q"}])
    assert exc.value.status_code == 529
    msg = client.messages.create(model="claude", max_tokens=10, system="sys", tools=tools,
                                 tool_choice={"type": "tool", "name": "record"},
                                 messages=[{"role": "user", "content": "question"}])
    assert msg.stop_reason == "tool_use"
    assert msg.content[0].type == "tool_use" and msg.content[0].input == {"k": "v"}
    assert msg.usage.input_tokens == len("sys\nquestion") // 4
    headers = anthropic_server.requests[-1].headers
    assert "sk-ant-test" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
    assert "anthropic-version" in headers


def test_anthropic_truncated_and_batches(anthropic_server) -> None:
    client = _an(anthropic_server)
    anthropic_server.script(Reply.truncated("partial"))
    msg = client.messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": "q"}])
    assert msg.stop_reason == "max_tokens" and msg.content[0].text == "partial"
    anthropic_server.script(Reply.of_text("one"), Reply.error(500))
    batch = client.messages.batches.create(requests=[
        {"custom_id": "a", "params": {"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "1"}]}},
        {"custom_id": "b", "params": {"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "2"}]}},
    ])
    assert client.messages.batches.retrieve(batch.id).processing_status == "ended"
    res = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert res["a"].type == "succeeded" and res["a"].message.content[0].text == "one"
    assert res["b"].type == "errored"
