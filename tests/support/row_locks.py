"""Postgres: another transaction holding a row that names an execution, for the tests of
``mojodex_core.db.EXECUTION_LOCK``: a writer of the execution's row must not wait for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

# An llm_call row, as the spool inserts it: its foreign key takes FOR KEY SHARE on the execution.
ROW_NAMING_THE_EXECUTION = text(
    "INSERT INTO llm_call (label, model, prompt_tokens, completion_tokens, latency_ms, cost, attempts, "
    "status, user_task_execution_fk, created_at) VALUES ('held', 'm', 0, 0, 0, 0, 1, 'ok', :pk, now())"
)


@contextmanager
def row_naming_the_execution(engine: Engine, pk: int) -> Iterator[Connection]:
    """An uncommitted row naming execution ``pk``, held until the block ends (then rolled back)."""
    with engine.connect() as other:
        other.execute(ROW_NAMING_THE_EXECUTION, {"pk": pk})
        try:
            yield other
        finally:
            other.rollback()
