"""Extra live servers for the integration tests that need a differently built platform.

They share the suite's database and scripted LLM with the main live server; each test
using one waits for its runner to go idle, so no turn leaks into the next test (a server
resumes unanswered messages when it starts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from backend.context import Platform
from background.runner import ThreadTurnRunner
from mojodex_core.execution.turn import InstructTurn
from tests.integration._tools import JsonService, install_tool_task
from tests.support.live import LiveServer, live_settings, serving

# The tight server: provider timeouts and turn watchdog small enough to hit in a test,
# and a conversation budget small enough that a few messages overflow it.
TIGHT_FIRST_TOKEN_TIMEOUT_S = 0.3
TIGHT_TURN_TIMEOUT_S = 1.5
TIGHT_CONTEXT_TOKENS = 120


def _small_context(platform: Platform) -> None:
    platform.runner.shutdown(wait=True)
    platform.runner = ThreadTurnRunner(
        InstructTurn(
            platform.session_factory,
            platform.events,
            platform.llm,
            coalesce_ms=platform.settings.token_coalesce_ms,
            context_tokens=TIGHT_CONTEXT_TOKENS,
            turn_timeout_s=platform.settings.turn_timeout_s,
        )
    )


@pytest.fixture(scope="session")
def tight_server(database_url: str, scripted_llm, live_server) -> Iterator[LiveServer]:
    base = live_settings(database_url, scripted_llm.base_url)
    settings = dataclasses.replace(
        base,
        llm=dataclasses.replace(base.llm, timeout_s=3.0, max_retries=1),
        turn_timeout_s=TIGHT_TURN_TIMEOUT_S,
    )
    with serving(
        settings, llm_overrides={"first_token_timeout_s": TIGHT_FIRST_TOKEN_TIMEOUT_S}, configure=_small_context
    ) as live:
        yield live


@pytest.fixture
def tight(tight_server: LiveServer, llm) -> Iterator[LiveServer]:
    yield tight_server
    tight_server.wait_idle(10)


@pytest.fixture(scope="session")
def no_llm_server(database_url: str, live_server) -> Iterator[LiveServer]:
    with serving(live_settings(database_url, None)) as live:
        assert live.platform.llm is None
        yield live


@pytest.fixture
def no_llm(no_llm_server: LiveServer) -> Iterator[LiveServer]:
    yield no_llm_server
    no_llm_server.wait_idle(10)


@pytest.fixture(scope="module")
def service() -> Iterator[JsonService]:
    """The JSON HTTP service the tool task's http_json tool calls (test_tools, test_tools_retry)."""
    svc = JsonService()
    yield svc
    svc.stop()


@pytest.fixture
def tools_live(live: LiveServer, service: JsonService) -> LiveServer:
    """The main live server with the tool task installed, its http_json tool pointed at ``service``."""
    install_tool_task(live, service.url)
    return live
