"""Postgres: another transaction holding a row that names an execution, for the tests of
``mojodex_core.db.EXECUTION_LOCK``: a writer of the execution's row must not wait for it; and
how a test sees that a backend has come to wait for another's lock."""

from __future__ import annotations

import time
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


def backend_pid(connection: Connection) -> int:
    return connection.connection.dbapi_connection.info.backend_pid


def waiting_for_a_lock(engine: Engine, blocker_pid: int, timeout: float = 10.0) -> bool:
    """Whether a backend comes to wait for a lock that backend ``blocker_pid`` holds, within ``timeout``."""
    deadline = time.monotonic() + timeout
    with engine.connect() as probe:
        while time.monotonic() < deadline:
            waiting = probe.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"),
                {"pid": blocker_pid},
            ).scalar()
            probe.rollback()
            if waiting:
                return True
            time.sleep(0.02)
    return False
