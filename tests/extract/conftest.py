"""Fixtures for the extract tests: the fake LLM servers and small hand-written threads."""

from __future__ import annotations

from tests.fakes.llm_fixtures import anthropic_server, openai_server  # noqa: F401
