"""The title and summary of an execution, written once by a background job after its first input.

``claim_title_summary`` is called when a first input (form or message) is accepted: it moves
``title_status`` from NULL to "pending" in one conditional UPDATE, so however many inputs
arrive, one job is submitted, once. The job asks the LLM for ``{title, summary}`` (structured
output), stores both with status "done" and publishes ``user_task_execution_title`` through the
session's event log (durable, replayable); a title the user set meanwhile is kept. After its
last retry the runner calls ``give_up``: status "failed" and a log line; the title the draft may
have given stays.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from pydantic import BaseModel, Field
from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import EXECUTION_LOCK, transaction
from mojodex_core.db.models import Message, Session, Task, User, UserTask, UserTaskExecution
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.produced_text import latest_version
from mojodex_core.execution.prompt import local_datetime, render
from mojodex_core.execution.turn import execution_inputs
from mojodex_core.llm import LLMProvider
from mojodex_core.task_view import displayed_data_for

log = logging.getLogger("mojodex.title_summary")

EVENT_NAME = "user_task_execution_title"
LABEL = "TITLE_SUMMARY"


class TitleSummary(BaseModel):
    title: str = Field(min_length=1, max_length=255, description="A short title naming this task")
    summary: str = Field(min_length=1, max_length=2000, description="One or two sentences")


@dataclass(frozen=True)
class TitleSummaryJob:
    user_task_execution_pk: int
    session_id: str
    attempt: int = 1


def claim_title_summary(db: DbSession, user_task_execution_pk: int) -> bool:
    """True for the one caller that moved the execution to "pending" (it must submit the job)."""
    result = db.execute(
        update(UserTaskExecution)
        .where(
            UserTaskExecution.user_task_execution_pk == user_task_execution_pk,
            UserTaskExecution.title_status.is_(None),
        )
        .values(title_status="pending")
    )
    return result.rowcount == 1


def unfinished_jobs(db: DbSession) -> list[TitleSummaryJob]:
    """Jobs claimed but not finished (the process stopped): to submit again at start-up."""
    rows = db.execute(
        select(UserTaskExecution.user_task_execution_pk, UserTaskExecution.session_id).where(
            UserTaskExecution.title_status == "pending", UserTaskExecution.status != "deleted"
        )
    ).all()
    return [TitleSummaryJob(user_task_execution_pk=pk, session_id=session_id) for pk, session_id in rows]


class TitleSummaryWriter:
    """The job handler (see background.jobs.JobHandler).

    ``stopping``: set when the process quits; the LLM call in flight is then cancelled, and the job
    stays claimed ("pending") for the next start to submit again (``unfinished_jobs``)."""

    def __init__(
        self, session_factory: sessionmaker[DbSession], events: EventPublisher, llm: LLMProvider,
        stopping: threading.Event | None = None,
    ) -> None:
        self._factory = session_factory
        self._events = events
        self._llm = llm
        self._stopping = stopping

    def _messages(self, job: TitleSummaryJob) -> list[dict[str, str]] | None:
        with self._factory() as db:
            execution = db.get(UserTaskExecution, job.user_task_execution_pk)
            if execution is None or execution.status == "deleted" or execution.title_status != "pending":
                return None
            task = db.get(Task, db.get(UserTask, execution.user_task_fk).task_fk)
            session = db.get(Session, execution.session_id)
            user = db.get(User, session.user_id)
            language = session.language or user.language_code
            displayed = displayed_data_for(task, language)
            first = db.scalar(
                select(Message.text)
                .where(Message.user_task_execution_fk == execution.user_task_execution_pk, Message.sender == "user")
                .order_by(Message.message_pk)
                .limit(1)
            )
            system = render(
                "title_summary.jinja2",
                local_datetime=local_datetime(user.timezone_offset_minutes),
                language=language,
                task=task,
                inputs=execution_inputs(execution, displayed.json_input if displayed else []),
                first_message=first or "",
            )
        return [{"role": "system", "content": system}]

    def run(self, job: TitleSummaryJob) -> None:
        messages = self._messages(job)
        if messages is None:
            log.info("title job skipped: execution %s is gone or its title no longer pending",
                     job.user_task_execution_pk)
            return
        result = self._llm.structured(
            messages, TitleSummary, label=LABEL, user_task_execution_pk=job.user_task_execution_pk,
            cancel=self._stopping,
        )
        title, summary = result.title.strip()[:255], result.summary.strip()
        with self._events.publishing(job.session_id) as publication, transaction(self._factory) as db:
            # Serialised with the row's writers (an edit, a rename, a deletion), not with the rows
            # that only name it (the spool's llm_call rows, a turn's messages): see EXECUTION_LOCK.
            execution = db.get(UserTaskExecution, job.user_task_execution_pk, with_for_update=EXECUTION_LOCK)
            if execution is None or execution.status == "deleted":  # deleted during the LLM call: nothing written
                log.info("title job dropped: execution %s was deleted", job.user_task_execution_pk)
                return
            if execution.title_status != "pending":  # another process's job wrote it (or gave up) meanwhile
                log.info("title job dropped: execution %s title is %s", job.user_task_execution_pk,
                         execution.title_status)
                return
            # A title the user chose (POST /user_task_execution_title) wins; one copied from a draft does not.
            draft = latest_version(db, job.user_task_execution_pk)
            if execution.title is None or execution.title == (draft.title[:255] if draft else None):
                execution.title = title
            title = execution.title
            execution.summary = summary
            execution.title_status = "done"
            publication.add(db, EVENT_NAME, {
                "title": title,
                "summary": summary,
                "session_id": job.session_id,
                "user_task_execution_pk": job.user_task_execution_pk,
            })
        log.info("title job done execution=%s attempt=%d", job.user_task_execution_pk, job.attempt)

    def give_up(self, job: TitleSummaryJob, error: BaseException) -> None:
        with transaction(self._factory) as db:
            # Only a title still pending: another process's job may have written it ("done") meanwhile.
            gave_up = db.execute(
                update(UserTaskExecution)
                .where(UserTaskExecution.user_task_execution_pk == job.user_task_execution_pk,
                       UserTaskExecution.title_status == "pending")
                .values(title_status="failed")
            ).rowcount
        if not gave_up:
            log.info("title job of execution=%s ended (%s): its title is no longer pending",
                     job.user_task_execution_pk, error)
            return
        log.warning("title job gave up execution=%s after %d attempt(s): %s",
                    job.user_task_execution_pk, job.attempt, error)
