"""Prompt caching: the fixed system prompt and schema go first and unchanged, OpenAI's automatic caching is
read from ``usage.prompt_tokens_details.cached_tokens``, Anthropic requests mark the system block with
``cache_control`` and report cache reads and writes; the run's cost line prints the saving."""

from __future__ import annotations

from extract.anthropic_backend import AnthropicExtractor
from extract.openai_backend import OpenAIExtractor
from extract.pricing import Usage, cost_line, cost_usd
from tests.extract.llm_helpers import answer_for, llm_thread
from tests.fakes.llm_server import Reply


def test_cached_tokens_are_priced_lower_and_the_saving_reported() -> None:
    u = Usage(input_tokens=10_000, output_tokens=500, calls=4, cached_input_tokens=6_000)
    cost, saved = cost_usd("gpt-5-mini", u)
    assert abs(cost - (4_000 * 0.25 + 6_000 * 0.025 + 500 * 2.0) / 1e6) < 1e-12
    assert abs(saved - 6_000 * 0.225 / 1e6) < 1e-12
    assert "6000 read from the prompt cache" in cost_line("gpt-5-mini", u) and "caching saved $" in cost_line(
        "gpt-5-mini", u)
    assert cost_usd("my-local-model", u) is None and "cost unknown" in cost_line("my-local-model", u)


def test_openai_reports_automatic_cache_hits(openai_server) -> None:  # noqa: ANN001
    ts = [llm_thread(i) for i in (1, 2, 3)]
    openai_server.script(*(Reply.json(answer_for(t)) for t in ts))
    ex = OpenAIExtractor("gpt-5-mini", base_url=openai_server.base_url, env={"OPENAI_API_KEY": "sk-x"},
                         retry_cap_s=0.05, concurrency=1)
    ex.extract(ts)
    reqs = openai_server.api_requests("/v1/chat/completions")
    systems = {r.json["messages"][0]["content"] for r in reqs}
    assert len(systems) == 1  # the long fixed prefix is byte-identical across threads
    assert ex.usage.cached_input_tokens > 0 and ex.usage.calls == 3
    assert "read from the prompt cache" in ex.cost_summary()


def test_anthropic_marks_the_fixed_prefix_for_caching(anthropic_server) -> None:  # noqa: ANN001
    ts = [llm_thread(i) for i in (4, 5)]
    anthropic_server.script(*(Reply.tool(answer_for(t)) for t in ts))
    ex = AnthropicExtractor("claude-haiku-4-5", base_url=anthropic_server.base_url,
                            env={"ANTHROPIC_API_KEY": "sk-ant-x"}, retry_cap_s=0.05, concurrency=1)
    ex.extract(ts)
    req = anthropic_server.api_requests("/v1/messages")[0].json
    assert req["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert ex.usage.cache_write_tokens > 0 and ex.usage.cached_input_tokens > 0  # written once, then read
    assert "written to it" in ex.cost_summary()
