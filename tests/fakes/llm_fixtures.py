"""Pytest fixtures for the fake LLM servers. Import them in a package's conftest.py::

    from tests.fakes.llm_fixtures import anthropic_server, openai_server  # noqa: F401

Each fixture yields a started server (fresh script and request log per test)
and stops it afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llm_server import AnthropicServer, OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A fake OpenAI API on 127.0.0.1; SDK ``base_url=openai_server.base_url``."""
    srv = OpenAIServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    """A fake Anthropic API on 127.0.0.1; SDK ``base_url=anthropic_server.base_url``."""
    srv = AnthropicServer()
    srv.start()
    yield srv
    srv.stop()
