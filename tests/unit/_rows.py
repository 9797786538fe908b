"""Minimal rows for unit tests that need an execution."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Session, Task, User, UserTask, UserTaskExecution


def execution_pk(db: DbSession, user_id: str | None = None) -> int:
    user_id = user_id or uuid.uuid4().hex
    if db.get(User, user_id) is None:
        db.add(User(user_id=user_id, name="U", email=f"{user_id}@example.com"))
    task = Task(name_for_system=f"t{uuid.uuid4().hex[:8]}", type="instruct", spec={})
    db.add(task)
    db.flush()
    user_task = UserTask(user_id=user_id, task_fk=task.task_pk)
    session = Session(session_id=uuid.uuid4().hex, user_id=user_id)
    db.add_all([user_task, session])
    db.flush()
    execution = UserTaskExecution(user_task_fk=user_task.user_task_pk, session_id=session.session_id)
    db.add(execution)
    db.flush()
    return execution.user_task_execution_pk


def session_row(db: DbSession) -> str:
    """A new session of a new user; its session_id."""
    sid = uuid.uuid4().hex
    user = User(user_id=uuid.uuid4().hex, name="u", email=f"{sid}@example.com")
    db.add(user)
    db.flush()
    db.add(Session(session_id=sid, user_id=user.user_id))
    return sid
