"""Opening a user's home chat, the tasks it may route to, leaving the task it runs."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import selectinload

from mojodex_core.db.models import (
    MESSAGE_UNANSWERED,
    HomeChat,
    Message,
    Session,
    Task,
    User,
    UserTask,
    UserTaskExecution,
)
from mojodex_core.execution.session_claims import answered_by_runner
from mojodex_core.task_view import displayed_data_for
from mojodex_core.timestamps import iso_utc

# The task types the chat's prompt offers. Instruct and order tasks start in the chat: their turn runs
# on any message, with no form to fill first (an order's conversation is opened when it is routed to).
# A workflow needs its form (inputs, files): routed to, the chat answers how to start it.
ROUTABLE_TYPES = ("instruct", "order", "workflow")
STARTED_IN_CHAT = ("instruct", "order")
# How a task the chat does not start itself is started: the client creates its execution.
START_WITH = "PUT /user_task_execution"
# What the routing list of the chat's prompt says of each task: enough to choose one. A spec's definition
# may be long (it is the task's own prompt), and every message of every user granted the task would carry it.
ROUTING_DEFINITION_CHARS = 600


def routing_definition(definition: str) -> str:
    """The start of a task's definition, cut at a word, for the chat's routing list."""
    text = " ".join(definition.split())
    if len(text) <= ROUTING_DEFINITION_CHARS:
        return text
    return text[:ROUTING_DEFINITION_CHARS].rsplit(" ", 1)[0] + "..."


@dataclass(frozen=True)
class RoutableTask:
    name: str  # name_for_system: what the model routes to
    name_for_user: str
    definition: str
    user_task_pk: int
    task_pk: int
    task_type: str

    @property
    def started_in_chat(self) -> bool:
        return self.task_type in STARTED_IN_CHAT

    def start_view(self) -> dict[str, Any]:
        """What the client needs to start a task the chat does not start itself (``start_task``)."""
        return {"user_task_pk": self.user_task_pk, "name_for_system": self.name, "name_for_user": self.name_for_user,
                "task_type": self.task_type, "start_with": START_WITH}


def available_tasks(db: DbSession, user_id: str, language: str) -> list[RoutableTask]:
    """The user's enabled tasks the home chat may route to: nothing the user has no access to."""
    rows = db.execute(
        select(UserTask, Task)
        .join(Task, Task.task_pk == UserTask.task_fk)
        .options(selectinload(Task.displayed_data))
        .where(UserTask.user_id == user_id, UserTask.enabled.is_(True), Task.type.in_(ROUTABLE_TYPES))
        .order_by(Task.name_for_system)
    ).all()
    tasks = []
    for user_task, task in rows:
        displayed = displayed_data_for(task, language)
        tasks.append(RoutableTask(
            name=task.name_for_system,
            name_for_user=displayed.name_for_user if displayed else task.name_for_system,
            definition=routing_definition(task.definition_for_system),
            user_task_pk=user_task.user_task_pk,
            task_pk=task.task_pk,
            task_type=task.type,
        ))
    return tasks


def home_chat_for_session(db: DbSession, session_id: str, *, lock: bool = False) -> HomeChat | None:
    query = select(HomeChat).where(HomeChat.session_id == session_id)
    return db.scalar(query.with_for_update() if lock else query)


def another_turn_in_line(
    db: DbSession, session_id: str, user_task_execution_pk: int, *, deleting: bool = False
) -> bool:
    """Whether the session's turn in line (running, or the first to run) is not this execution's.
    Only a home chat's session can hold another's: the executions it routed to share it with its
    free chat, so stopping or deleting one of them must not stop the turn in line then. A chat
    message is tied to an execution only when its turn starts; until then it goes to the chat's
    running task (as ``HomeChatRouter`` decides), or to the free chat, and always to the free chat
    once that task is deleted (``deleting``: the caller has just deleted it)."""
    # Deleting: locked as the router locks it to tie a waiting message to the running task, so the
    # two see each other's outcome (a message tied just before the deletion counts as the task's).
    home_chat = home_chat_for_session(db, session_id, lock=deleting)
    if home_chat is None:
        return False
    first = db.execute(
        select(Message.user_task_execution_fk)
        .where(Message.session_id == session_id, answered_by_runner(), Message.status.in_(MESSAGE_UNANSWERED))
        .order_by(Message.message_pk)
        .limit(1)
    ).first()
    if first is None:
        return False  # nothing in line: a stop stops nothing either way
    owner = first.user_task_execution_fk
    if owner is None and not deleting:
        owner = home_chat.running_user_task_execution_fk
    return owner != user_task_execution_pk


def open_home_chat(db: DbSession, user: User, platform: str) -> tuple[HomeChat, bool]:
    """The user's home chat, created the first time (``True``); its session follows the client's platform."""
    home_chat = db.scalar(select(HomeChat).where(HomeChat.user_id == user.user_id))
    if home_chat is not None:
        session = db.get(Session, home_chat.session_id)
        if session.platform != platform:
            session.platform = platform  # the prompt's mobile flags follow the client in use
        return home_chat, False
    try:
        with db.begin_nested():
            session = Session(session_id=secrets.token_urlsafe(32), user_id=user.user_id, platform=platform,
                              language=user.language_code)
            db.add(session)
            db.flush()
            home_chat = HomeChat(user_id=user.user_id, session_id=session.session_id)
            db.add(home_chat)
            db.flush()
        return home_chat, True
    except IntegrityError:  # opened concurrently by another request of the same user: return that one
        return db.scalar(select(HomeChat).where(HomeChat.user_id == user.user_id)), False


def leave_task(db: DbSession, home_chat: HomeChat) -> int | None:
    """Back to free chat; returns the execution left (it stays, and can be resumed from its own session)."""
    left = home_chat.running_user_task_execution_fk
    home_chat.running_user_task_execution_fk = None
    return left


def home_chat_view(db: DbSession, home_chat: HomeChat) -> dict[str, Any]:
    session = db.get(Session, home_chat.session_id)
    running = (
        db.get(UserTaskExecution, home_chat.running_user_task_execution_fk)
        if home_chat.running_user_task_execution_fk is not None else None
    )
    return {
        "home_chat_pk": home_chat.home_chat_pk,
        "session_id": home_chat.session_id,
        "platform": session.platform,
        "running_user_task_execution_pk": running.user_task_execution_pk if running else None,
        "created_at": iso_utc(home_chat.created_at),
    }
