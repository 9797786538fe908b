"""Whether a session is still its user's to read: a task's session goes with its execution's deletion."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, exists, select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import HomeChat, Session, UserTaskExecution


def session_deleted(session_id: Any) -> ColumnElement[bool]:
    """True for the session of executions that were all deleted (a deleted task's conversation is not shown
    again); a home chat's session hosts several executions and stays. ``session_id``: a value or a column, so
    that a read of the session can carry it (one statement)."""
    executions = select(UserTaskExecution.user_task_execution_pk).where(UserTaskExecution.session_id == session_id)
    return (exists(executions)
            & ~exists(executions.where(UserTaskExecution.status != "deleted"))
            & ~exists(select(HomeChat.home_chat_pk).where(HomeChat.session_id == session_id)))


def live_session(db: DbSession, session_id: str) -> Session | None:
    """The session, unless it is gone with its executions: one statement."""
    found = db.execute(select(Session, session_deleted(Session.session_id))
                       .where(Session.session_id == session_id)).first()
    return None if found is None or found[1] else found[0]
