"""Task chaining: a predefined action of a finished task starts a follow-up task.

The follow-up execution links to its parent (``parent_user_task_execution_fk``) and its prompt
gets the parent's latest result and the action's ``message_prefix`` (see instruct_task.jinja2).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, bindparam, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Task, TaskPredefinedAction, UserTask, UserTaskExecution
from mojodex_core.execution.produced_text import latest_version_row
from mojodex_core.execution.task_prompt import TaskPrompts
from mojodex_core.task_view import pick_entry


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


_execution = UserTaskExecution.__table__
_user_task = UserTask.__table__
_task = Task.__table__
_action = TaskPredefinedAction.__table__
# The parent, its task, and the predefined action of that task that started the follow-up (if any).
_PARENT = (
    select(
        _execution.c.user_task_execution_pk, _execution.c.status, _execution.c.title, _execution.c.summary,
        _task.c.task_pk, _task.c.updated_at, _action.c.displayed_data.label("action_displayed_data"),
    )
    .select_from(_execution)
    .join(_user_task, _user_task.c.user_task_pk == _execution.c.user_task_fk)
    .join(_task, _task.c.task_pk == _user_task.c.task_fk)
    .outerjoin(_action, and_(_action.c.task_fk == _task.c.task_pk, _action.c.action_name == bindparam("b_action")))
    .where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
)


def previous_task_context(
    db: DbSession | Connection, parent_pk: int | None, follow_up_task: str, language: str | None, tasks: TaskPrompts
) -> dict[str, Any] | None:
    """What the follow-up's prompt gets from its parent, or None when it has no parent.

    ``follow_up_task``: the follow-up's task name_for_system (the action's name); ``language``: the
    follow-up session's language (its user's when the session has none)."""
    if parent_pk is None:
        return None
    parent = db.execute(_PARENT, {"b_pk": parent_pk, "b_action": follow_up_task}).first()
    if parent is None or parent.status == "deleted":
        return None
    prefix = None
    if parent.action_displayed_data is not None:
        entry = pick_entry(parent.action_displayed_data or [], language) or {}
        prefix = (entry.get("data") or {}).get("message_prefix")
    parent_task = tasks.get(db, parent.task_pk, parent.updated_at)
    displayed = parent_task.displayed_for(language)
    latest = latest_version_row(db, parent.user_task_execution_pk)
    return {
        "user_task_execution_pk": parent.user_task_execution_pk,
        "task_name": displayed.name_for_user if displayed else parent_task.name_for_system,
        "title": parent.title,
        "summary": parent.summary,
        "result_title": latest.title if latest else None,
        "result": latest.production if latest else None,
        "message_prefix": prefix,
    }
