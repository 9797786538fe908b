"""The instruct prompt as InstructTurn built it from ORM rows before its reads became Core
(commit e8de6f8), frozen here as the reference the new reads must reproduce byte for byte."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import (
    Message,
    Session,
    Task,
    TaskPredefinedAction,
    User,
    UserProfile,
    UserTask,
    UserTaskExecution,
)
from mojodex_core.execution.produced_text import latest_version
from mojodex_core.execution.prompt import ChatMessage, local_datetime, render, window_newest_first
from mojodex_core.execution.tool_loop import describes_tags, prompt_tools
from mojodex_core.execution.turn import InstructTurn, execution_inputs
from mojodex_core.knowledge import knowledge_block, prompt_knowledge
from mojodex_core.task_view import displayed_data_for, pick_entry


def previous_task_context(db: DbSession, execution: UserTaskExecution) -> dict[str, Any] | None:
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


def legacy_llm_messages(db: DbSession, turn: InstructTurn, message_pk: int, now: datetime) -> list[dict[str, str]]:
    """InstructTurn._begin's prompt for ``message_pk`` as the ORM code rendered it (``now`` fixed)."""
    message = db.get(Message, message_pk)
    execution = db.get(UserTaskExecution, message.user_task_execution_fk)
    session = db.get(Session, execution.session_id)
    user_task = db.get(UserTask, execution.user_task_fk)
    task = db.get(Task, user_task.task_fk)
    user = db.get(User, user_task.user_id)
    upto_pk = message.message_pk

    language = session.language or user.language_code
    displayed = displayed_data_for(task, language)
    latest = latest_version(db, execution.user_task_execution_pk)
    knowledge = prompt_knowledge(
        user, db.get(UserProfile, user.user_id), platform=session.platform, language=language,
        tasks_config_dir=turn._tasks_config_dir, now=now,
    )
    system = render(
        "instruct_task.jinja2",
        knowledge_block=knowledge_block(knowledge, turn._knowledge_tokens),
        username=knowledge.username,
        language=language,
        local_datetime=local_datetime(user.timezone_offset_minutes, now),
        task=task,
        inputs=execution_inputs(execution, displayed.json_input if displayed else []),
        infos_to_extract=task.infos_to_extract or [],
        produced_text=latest,
        previous_task=previous_task_context(db, execution),
        tools=[] if turn._use_grammar else prompt_tools(task.spec if task.type == "instruct" else None),
        tag_tools=describes_tags(turn._tools.mode),
    )
    rows = list(
        db.scalars(
            select(Message)
            .where(
                Message.session_id == session.session_id,
                Message.sender.in_(("user", "assistant")),
                or_(Message.user_task_execution_fk == execution.user_task_execution_pk,
                    Message.user_task_execution_fk.is_(None)),
            )
            .order_by(Message.message_pk)
        )
    )
    answers = {row.message_pk: row for row in rows if row.sender == "assistant"}
    conversation: list[ChatMessage] = []
    for row in rows:
        if row.sender != "user" or row.message_pk > upto_pk:
            continue
        conversation.append(ChatMessage(role="user", content=row.text))
        answer = answers.get(row.answer_message_fk) if row.message_pk != upto_pk else None
        if answer is not None:
            conversation.append(ChatMessage(role="assistant", content=answer.text_with_tags or answer.text))
    windowed = window_newest_first(reversed(conversation), turn._context_tokens)
    return [{"role": "system", "content": system}] + [{"role": m.role, "content": m.content} for m in windowed]


def legacy_home_chat_conversation(db: DbSession, session_id: str, upto_pk: int, budget: int) -> list[ChatMessage]:
    """The home chat's conversation as HomeChatTurn read it whole before its reads were bounded
    (commit c664fda): every message of the session, only their visible text."""
    rows = list(db.scalars(
        select(Message)
        .where(Message.session_id == session_id, Message.sender.in_(("user", "assistant")))
        .order_by(Message.message_pk)
    ))
    answers = {row.message_pk: row for row in rows if row.sender == "assistant"}
    out: list[ChatMessage] = []
    for row in rows:
        if row.sender != "user" or row.message_pk > upto_pk or not row.text:
            continue
        out.append(ChatMessage("user", row.text))
        answer = answers.get(row.answer_message_fk) if row.message_pk != upto_pk else None
        if answer is not None and answer.text:
            out.append(ChatMessage("assistant", answer.text))
    return window_newest_first(reversed(out), budget)
