"""Task chaining: a predefined action of a finished task starts a follow-up task.

The follow-up execution links to its parent (``parent_user_task_execution_fk``) and its prompt
gets the parent's latest result and the action's ``message_prefix`` (see instruct_task.jinja2).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Session, Task, TaskPredefinedAction, User, UserTask, UserTaskExecution
from mojodex_core.execution.produced_text import latest_version
from mojodex_core.task_view import displayed_data_for, pick_entry


class ChainError(ValueError):
    """The follow-up cannot be chained to that parent (shown to the client as a 400)."""


def predefined_action(db: DbSession, parent_task: Task, follow_up: Task) -> TaskPredefinedAction:
    action = db.scalar(
        select(TaskPredefinedAction).where(
            TaskPredefinedAction.task_fk == parent_task.task_pk,
            TaskPredefinedAction.action_name == follow_up.name_for_system,
        )
    )
    if action is None:
        raise ChainError(
            f"task {follow_up.name_for_system!r} is not a predefined action of task {parent_task.name_for_system!r}"
        )
    return action


def check_chain(db: DbSession, parent: UserTaskExecution, follow_up: Task) -> None:
    """The parent (already checked to be the caller's) must offer the follow-up as a predefined action."""
    parent_task = db.get(Task, db.get(UserTask, parent.user_task_fk).task_fk)
    predefined_action(db, parent_task, follow_up)


def previous_task_context(db: DbSession, execution: UserTaskExecution) -> dict[str, Any] | None:
    """What the follow-up's prompt gets from its parent, or None when it has no parent."""
    if execution.parent_user_task_execution_fk is None:
        return None
    parent = db.get(UserTaskExecution, execution.parent_user_task_execution_fk)
    if parent is None or parent.status == "deleted":
        return None
    parent_task = db.get(Task, db.get(UserTask, parent.user_task_fk).task_fk)
    task = db.get(Task, db.get(UserTask, execution.user_task_fk).task_fk)
    session = db.get(Session, execution.session_id)
    language = session.language or db.get(User, session.user_id).language_code
    prefix = None
    action = db.scalar(
        select(TaskPredefinedAction).where(
            TaskPredefinedAction.task_fk == parent_task.task_pk,
            TaskPredefinedAction.action_name == task.name_for_system,
        )
    )
    if action is not None:
        prefix = ((pick_entry(action.displayed_data or [], language) or {}).get("data") or {}).get("message_prefix")
    displayed = displayed_data_for(parent_task, language)
    latest = latest_version(db, parent.user_task_execution_pk)
    return {
        "user_task_execution_pk": parent.user_task_execution_pk,
        "task_name": displayed.name_for_user if displayed else parent_task.name_for_system,
        "title": parent.title,
        "summary": parent.summary,
        "result_title": latest.title if latest else None,
        "result": latest.production if latest else None,
        "message_prefix": prefix,
    }
