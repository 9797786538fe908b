"""What a user sees of a task: texts in their language (falling back to English)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Task, TaskDisplayedData, TaskPredefinedAction, UserTask


def _candidates(language: str | None) -> list[str]:
    """'fr-CA' -> ['fr-CA', 'fr', 'en']: the language, its base language, then English."""
    language = language or "en"
    return [language, language.split("-")[0], "en"]


def displayed_data_for(task: Task, language: str | None) -> TaskDisplayedData | None:
    by_language = {d.language_code: d for d in task.displayed_data}
    found = next((by_language[c] for c in _candidates(language) if c in by_language), None)
    return found or next(iter(by_language.values()), None)


def pick_entry(entries: list[dict[str, Any]], language: str | None) -> dict[str, Any] | None:
    """The entry (a dict with a language_code) in the language, its base language, English, or the first."""
    by_language = {e.get("language_code"): e for e in entries}
    found = next((by_language[c] for c in _candidates(language) if c in by_language), None)
    return found or (entries[0] if entries else None)


def predefined_actions(db: DbSession, task: Task, user_id: str, language: str) -> list[dict[str, Any]]:
    """Follow-up tasks the user can start from this one (only those the user may run)."""
    rows = db.execute(
        select(TaskPredefinedAction, UserTask)
        .join(Task, Task.name_for_system == TaskPredefinedAction.action_name)
        .join(UserTask, (UserTask.task_fk == Task.task_pk) & (UserTask.user_id == user_id))
        .where(TaskPredefinedAction.task_fk == task.task_pk, UserTask.enabled.is_(True))
        .order_by(TaskPredefinedAction.task_predefined_action_pk)
    ).all()
    actions = []
    for action, user_task in rows:
        entry = pick_entry(action.displayed_data, language) or {}
        data = entry.get("data", {})
        actions.append(
            {
                "task_name": action.action_name,
                "user_task_pk": user_task.user_task_pk,
                "name": data.get("name", action.action_name),
                "button_text": data.get("button_text"),
                "message_prefix": data.get("message_prefix"),
            }
        )
    return actions


def user_task_view(user_task: UserTask, task: Task, language: str) -> dict[str, Any]:
    displayed = displayed_data_for(task, language)
    return {
        "user_task_pk": user_task.user_task_pk,
        "task_pk": task.task_pk,
        "name_for_system": task.name_for_system,
        "type": task.type,
        "icon": task.icon,
        "name": displayed.name_for_user if displayed else task.name_for_system,
        "description": displayed.definition_for_user if displayed else "",
        "language_code": displayed.language_code if displayed else None,
        "json_input": displayed.json_input if displayed else [],
        "enabled": user_task.enabled,
    }
