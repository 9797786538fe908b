"""Whether a session is still its user's to read: a task's session goes with its execution's deletion."""

from __future__ import annotations

from sqlalchemy import exists, select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import HomeChat, UserTaskExecution


def deleted_session(db: DbSession, session_id: str) -> bool:
    """True for the session of executions that were all deleted (a deleted task's conversation is not shown
    again); a home chat's session hosts several executions and stays."""
    executions = select(UserTaskExecution.user_task_execution_pk).where(UserTaskExecution.session_id == session_id)
    return bool(db.scalar(select(
        exists(executions)
        & ~exists(executions.where(UserTaskExecution.status != "deleted"))
        & ~exists(select(HomeChat.home_chat_pk).where(HomeChat.session_id == session_id))
    )))
