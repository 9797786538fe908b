"""The platform's long-lived parts, built once per process and reachable from routes."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from flask import current_app
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from background.runner import ThreadTurnRunner, TurnRunner
from mojodex_core.config import Settings
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.llm_calls import DbLLMCallRecorder
from mojodex_core.execution.tool_loop import ToolSettings
from mojodex_core.execution.turn import InstructTurn
from mojodex_core.llm import LLMProvider, LLMSettings, ServerGuard

log = logging.getLogger("mojodex.platform")


@dataclass
class Platform:
    settings: Settings
    engine: Engine
    session_factory: sessionmaker[DbSession]
    events: SessionEventLog
    runner: TurnRunner
    llm: LLMProvider | None
    # The embedded local model server, when this process runs one (its status goes in /health).
    local_model: object | None = None

    @contextmanager
    def db(self) -> Iterator[DbSession]:
        """A transaction: committed when the block ends, rolled back on error."""
        with transaction(self.session_factory) as session:
            yield session

    def close(self) -> None:
        self.runner.shutdown(wait=False)
        if self.llm is not None:
            self.llm.close()
        self.engine.dispose()


def build_llm(
    settings: Settings,
    session_factory: sessionmaker[DbSession],
    guard: ServerGuard | None = None,
    **overrides: object,
) -> LLMProvider | None:
    if not settings.llm.configured:
        log.warning("no LLM configured: instruct turns will answer with a 'no LLM configured' error")
        return None
    return LLMProvider(
        LLMSettings(
            base_url=settings.llm.base_url,
            api_key=settings.llm.api_key or "not-needed",
            model=settings.llm.model,
            fallback_model=settings.llm.fallback_model,
            timeout_s=settings.llm.timeout_s,
            max_retries=settings.llm.max_retries,
            **overrides,
        ),
        recorder=DbLLMCallRecorder(session_factory),
        guard=guard,
    )


def build_platform(
    settings: Settings,
    *,
    llm_overrides: dict | None = None,
    local_model: object | None = None,
    no_llm_reason: str | None = None,
) -> Platform:
    """``local_model``: the embedded model server (a ServerGuard with ``status()``), if one runs;
    ``no_llm_reason``: why there is no LLM, added to the users' "No LLM configured" answer."""
    engine = make_engine(settings.database_url)
    factory = make_session_factory(engine)
    events = SessionEventLog(factory)
    llm = build_llm(settings, factory, local_model, **(llm_overrides or {}))
    turn = InstructTurn(
        factory,
        events,
        llm,
        coalesce_ms=settings.token_coalesce_ms,
        use_grammar=settings.extra.get("use_grammar", False),
        turn_timeout_s=settings.turn_timeout_s,
        max_tokens=settings.extra.get("max_tokens"),
        no_llm_reason=no_llm_reason,
        tools=ToolSettings(
            mode=settings.tool_mode, max_calls=settings.tool_max_calls, timeout_s=settings.tool_timeout_s
        ),
    )
    runner = ThreadTurnRunner(turn)
    return Platform(
        settings=settings, engine=engine, session_factory=factory, events=events, runner=runner, llm=llm,
        local_model=local_model,
    )


def platform() -> Platform:
    return current_app.extensions["mojodex"]
