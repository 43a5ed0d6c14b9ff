"""OpenAI parameters by model family against a fake server that refuses what the real API refuses for
reasoning models (``max_tokens``, non-default temperature), through the official SDK."""

from __future__ import annotations

import re

import pytest

from eval_diagnosis.providers import make_chat
from extract.openai_backend import OpenAIExtractor
from extract.openai_params import ParamPolicy, is_reasoning_model, unsupported_param
from tests.extract.llm_helpers import answer_for, llm_thread
from tests.fakes.llm_server import Reply

ENV = {"OPENAI_API_KEY": "sk-test-SECRETVALUE123"}


@pytest.mark.parametrize(("model", "reasoning"), [("gpt-5-mini", True), ("o4-mini", True), ("o3", True),
                                                  ("gpt-4o-mini", False), ("gpt-4.1", False),
                                                  ("gpt-5-chat-latest", False)])
def test_model_families(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning
    p = ParamPolicy(model, 1000).params()
    assert p["max_completion_tokens"] == 1000 and "max_tokens" not in p
    assert ("temperature" in p) is not reasoning and ("reasoning_effort" in p) is reasoning


def test_unsupported_parameter_messages_are_read() -> None:
    assert unsupported_param("Unsupported parameter: 'max_tokens' is not supported with this model.") == "max_tokens"
    assert unsupported_param("Unsupported value: 'temperature' does not support 0 with this model.") == "temperature"
    assert unsupported_param("Unrecognized request argument supplied: reasoning_effort") == "reasoning_effort"
    assert unsupported_param("Invalid schema for response_format") is None


def test_reasoning_model_extracts_without_refused_parameters(openai_server) -> None:  # noqa: ANN001
    t = llm_thread(3)
    openai_server.script(Reply.json(answer_for(t)))
    ex = OpenAIExtractor("gpt-5-mini", base_url=openai_server.base_url, env=ENV, retry_cap_s=0.05)
    [r] = ex.extract([t])
    [req] = openai_server.api_requests("/v1/chat/completions")
    assert "max_tokens" not in req.json and "temperature" not in req.json
    assert req.json["max_completion_tokens"] > 0 and req.json["reasoning_effort"] == "low"
    assert r.symptom.paper_value == 32.7 and r.grounded


def test_unknown_model_refusing_a_parameter_is_retried_once_without_it_and_remembered(openai_server) -> None:  # noqa: ANN001
    openai_server.reasoning_models = re.compile(r"^(?:o\d|gpt-5|newfamily)")  # a family the client does not know
    ts = [llm_thread(i) for i in (4, 5)]
    openai_server.script(*(Reply.json(answer_for(t)) for t in ts))
    ex = OpenAIExtractor("newfamily-1", base_url=openai_server.base_url, env=ENV, retry_cap_s=0.05, concurrency=1)
    recs = ex.extract(ts)
    reqs = openai_server.api_requests("/v1/chat/completions")
    assert len(recs) == 2 and all(r.grounded for r in recs)
    assert len(reqs) == 3  # one refusal, then both threads without temperature
    assert "temperature" in reqs[0].json and all("temperature" not in q.json for q in reqs[1:])
    assert "dropped for newfamily-1: temperature" in ex.cost_summary()


def test_eval_runner_and_judge_use_the_same_rules(openai_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.default = Reply.of_text("1. warmup")
    chat = make_chat("openai:o4-mini")
    assert chat.complete("system", "user") == "1. warmup"
    [req] = openai_server.api_requests("/v1/chat/completions")
    assert "max_tokens" not in req.json and "temperature" not in req.json


def test_fakes_refuse_loose_schemas_and_bad_tool_shapes(openai_server, anthropic_server) -> None:  # noqa: ANN001
    import anthropic
    import openai

    client = openai.OpenAI(api_key="sk-x", base_url=openai_server.base_url, max_retries=0)
    loose = {"type": "json_schema", "json_schema": {"name": "a", "strict": True, "schema": {
        "type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": False}}}
    with pytest.raises(openai.BadRequestError, match="'required' is required"):
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                                       response_format=loose)
    ac = anthropic.Anthropic(api_key="sk-ant-x", base_url=anthropic_server.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="not found in tools"):
        ac.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}],
                           tools=[{"name": "a", "input_schema": {"type": "object"}}],
                           tool_choice={"type": "tool", "name": "b"})


def test_the_projects_own_requests_pass_the_strict_fakes(openai_server, anthropic_server) -> None:  # noqa: ANN001
    """The extractor's schema is strict-valid and its tool use well-formed, for a reasoning model and an older one."""
    from extract.anthropic_backend import AnthropicExtractor

    for model in ("gpt-5-mini", "gpt-4o-mini"):
        t = llm_thread(7)
        openai_server.script(Reply.json(answer_for(t)))
        [r] = OpenAIExtractor(model, base_url=openai_server.base_url, env=ENV, retry_cap_s=0.05).extract([t])
        assert r.grounded, model
    t = llm_thread(8)
    anthropic_server.script(Reply.tool(answer_for(t)))
    [r] = AnthropicExtractor("claude-haiku-4-5", base_url=anthropic_server.base_url,
                             env={"ANTHROPIC_API_KEY": "sk-ant-x"}, retry_cap_s=0.05).extract([t])
    assert r.grounded


def test_reasoning_effort_flag_reaches_the_request(openai_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("REPRODIAG_REASONING_EFFORT", "high")
    t = llm_thread(9)
    openai_server.script(Reply.json(answer_for(t)))
    OpenAIExtractor("o4-mini", base_url=openai_server.base_url, env=ENV, retry_cap_s=0.05).extract([t])
    assert openai_server.api_requests("/v1/chat/completions")[-1].json["reasoning_effort"] == "high"
