"""Pytest plugin: the scripted OpenAI-compatible server as fixtures.

Register with ``pytest_plugins = ["tests.support.llm_fixtures"]`` in tests/conftest.py.

- ``scripted_llm``: one server for the whole session.
- ``llm``: the same server, reset (no steps, no requests, no responder) before and after each test.
- ``llm_settings``: ``LLMSettings`` pointing at it, with tiny backoffs and timeouts.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mojodex_core.llm import LLMCallRecord, LLMProvider, LLMSettings
from tests.support.scripted_llm import ScriptedLLMServer


@pytest.fixture(scope="session")
def scripted_llm() -> Iterator[ScriptedLLMServer]:
    server = ScriptedLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm(scripted_llm: ScriptedLLMServer) -> Iterator[ScriptedLLMServer]:
    scripted_llm.reset()
    yield scripted_llm
    scripted_llm.reset()


@pytest.fixture
def llm_settings(llm: ScriptedLLMServer) -> LLMSettings:
    return LLMSettings(
        base_url=llm.base_url,
        api_key="test",
        model="gpt-4o-mini",
        backoff_base_s=0.01,
        timeout_s=5,
        first_token_timeout_s=2,
    )


@pytest.fixture
def records() -> list[LLMCallRecord]:
    """What ``provider`` recorded, one entry a call."""
    return []


@pytest.fixture
def provider(llm_settings: LLMSettings, records: list[LLMCallRecord]) -> Iterator[LLMProvider]:
    """An LLMProvider on the scripted LLM server, recording its calls in ``records``."""
    p = LLMProvider(llm_settings, recorder=records.append)
    yield p
    p.close()
