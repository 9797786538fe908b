"""Stores one llm_call row per provider call (label, model, tokens, latency, cost)."""

from __future__ import annotations

import logging

from sqlalchemy import insert
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import LLMCall, utcnow

log = logging.getLogger("mojodex.llm_calls")
_INSERT_CALL = insert(LLMCall.__table__)


class DbLLMCallRecorder:
    def __init__(self, session_factory: sessionmaker[DbSession]) -> None:
        self._factory = session_factory

    def __call__(self, record) -> None:  # noqa: ANN001 - an LLMCallRecord
        # One Core INSERT on the table: no ORM object and unit of work for a row nobody reads back.
        with transaction(self._factory) as db:
            db.execute(_INSERT_CALL, {
                "label": record.label,
                "model": record.model,
                "prompt_tokens": record.prompt_tokens or 0,
                "completion_tokens": record.completion_tokens or 0,
                "latency_ms": record.latency_ms or 0.0,
                "cost": record.cost or 0.0,
                "attempts": getattr(record, "attempts", 1) or 1,
                "status": record.status,
                "error": record.error,
                "user_task_execution_fk": record.user_task_execution_pk,
                "created_at": utcnow(),
            })
