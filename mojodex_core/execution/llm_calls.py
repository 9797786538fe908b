"""Stores one llm_call row per provider call (label, model, tokens, latency, cost)."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import LLMCall

log = logging.getLogger("mojodex.llm_calls")


class DbLLMCallRecorder:
    def __init__(self, session_factory: sessionmaker[DbSession]) -> None:
        self._factory = session_factory

    def __call__(self, record) -> None:  # noqa: ANN001 - an LLMCallRecord
        with transaction(self._factory) as db:
            db.add(
                LLMCall(
                    label=record.label,
                    model=record.model,
                    prompt_tokens=record.prompt_tokens or 0,
                    completion_tokens=record.completion_tokens or 0,
                    latency_ms=record.latency_ms or 0.0,
                    cost=record.cost or 0.0,
                    attempts=getattr(record, "attempts", 1) or 1,
                    status=record.status,
                    error=record.error,
                    user_task_execution_fk=record.user_task_execution_pk,
                )
            )
