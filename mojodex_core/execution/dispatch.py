"""Which turn runs a message: a handler per task type, picked from the message's task.

The runner hands every job to one TurnDispatcher; it looks up the type of the task the
message belongs to (cached per session: a session's task never changes) and calls that type's
handler. A type with no handler (e.g. 'workflow' until workflows run) fails the message
visibly with an error event instead of running another type's turn. Routes ask
``handles(task_type)`` first so such messages are refused before anything is stored.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db.models import Message, Task, UserTask, UserTaskExecution
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import fail_or_mark, mark_failed
from mojodex_core.execution.jobs import TurnJob

log = logging.getLogger("mojodex.dispatch")

TurnHandler = Callable[[TurnJob, threading.Event], None]
MAX_CACHED_SESSIONS = 10_000


class UnsupportedTaskType(Exception):
    def __init__(self, task_type: str) -> None:
        super().__init__(f"tasks of type {task_type!r} cannot run here yet (no turn handler for {task_type!r})")
        self.task_type = task_type


class TurnDispatcher:
    def __init__(self, factory: sessionmaker[DbSession], events: EventPublisher) -> None:
        self._factory = factory
        self._events = events
        self._handlers: dict[str, TurnHandler] = {}
        self._types: dict[str, str] = {}  # session_id -> task type
        self._lock = threading.Lock()

    def register(self, task_type: str, handler: TurnHandler) -> None:
        self._handlers[task_type] = handler

    def handler(self, task_type: str) -> TurnHandler | None:
        return self._handlers.get(task_type)

    def handles(self, task_type: str) -> bool:
        return task_type in self._handlers

    def check(self, task_type: str) -> None:
        if task_type not in self._handlers:
            raise UnsupportedTaskType(task_type)

    @property
    def task_types(self) -> list[str]:
        return sorted(self._handlers)

    def _task_type(self, job: TurnJob) -> tuple[str | None, int | None, str | None]:
        with self._factory() as db:
            row = db.execute(
                select(Task.type, Message.user_task_execution_fk, Message.message_id)
                .select_from(Message)
                .join(UserTaskExecution, UserTaskExecution.user_task_execution_pk == Message.user_task_execution_fk)
                .join(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
                .join(Task, Task.task_pk == UserTask.task_fk)
                .where(Message.message_pk == job.message_pk)
            ).first()
        if row is None:
            return None, None, None
        return row[0], row[1], row[2]

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        task_type = self._types.get(job.session_id)
        handler = self._handlers.get(task_type) if task_type else None
        if handler is None:
            try:
                task_type, execution_pk, message_id = self._task_type(job)
            except Exception:
                log.exception("dispatch failed session=%s message_pk=%s", job.session_id, job.message_pk)
                mark_failed(self._factory, job.message_pk, "The assistant failed to answer because of an internal "
                                                            "error. Please retry.")
                return
            if task_type is None:  # the message or its execution is gone: the handler would find nothing
                handler = next(iter(self._handlers.values()), None)
                if handler is not None:
                    handler(job, cancel)
                return
            handler = self._handlers.get(task_type)
            if handler is None:
                log.warning("no turn handler for task type %r (message_pk=%s)", task_type, job.message_pk)
                fail_or_mark(
                    self._factory, self._events, session_id=job.session_id, message_pk=job.message_pk,
                    message_id=message_id, user_task_execution_pk=execution_pk,
                    reason=str(UnsupportedTaskType(task_type)), retryable=False,
                )
                return
            with self._lock:
                if len(self._types) >= MAX_CACHED_SESSIONS:
                    self._types.clear()  # a cache, not a registry: it refills one query per session
                self._types[job.session_id] = task_type
        handler(job, cancel)
