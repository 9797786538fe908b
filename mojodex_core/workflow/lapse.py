"""What the heartbeat watch does with a step whose process stopped: marks it (``heartbeat.mark_lapsed``),
tells the client, and stores the ``workflow_run`` message that runs its slot again, in one transaction;
then submits that message. When the runner refuses it, the step fails visibly instead (relaunchable),
unless the process is shutting down: the start-up resume then runs the message."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Callable

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, UserTaskExecution
from mojodex_core.execution.events import EventPublisher, Publication
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.workflow import store
from mojodex_core.workflow.heartbeat import mark_lapsed
from mojodex_core.workflow.runner import ENDED, request_run

log = logging.getLogger("mojodex.workflow")

NOT_RERUN = ("The step stopped: the process running it stopped renewing its heartbeat, and it could not be run "
             "again. Relaunch it to retry.")


def lapsed_step(factory: sessionmaker[DbSession], events: EventPublisher, session_id: str, execution_pk: int,
                step_pk: int, rerun: bool, cutoff: datetime) -> tuple[bool, int | None]:
    """Marks a step whose process stopped (``heartbeat.mark_lapsed``), tells the client, and with
    ``rerun`` stores the ``workflow_run`` message that runs its slot again, in one transaction: a
    failure leaves the step running for the next sweep. Returns (marked, the message's pk to submit)."""
    with events.publishing(session_id) as publication, transaction(factory) as db:
        if not mark_lapsed(db, step_pk, rerun, cutoff):
            return False, None
        execution = _tell_ended(db, publication, session_id, execution_pk, step_pk)
        if not rerun or execution is None or execution.status == "deleted":
            return True, None
        return True, request_run(db, session_id, execution_pk, "re-run after a lapsed heartbeat").message_pk


def submit_rerun(factory: sessionmaker[DbSession], events: EventPublisher, submit: Callable[[TurnJob], None],
                 session_id: str, execution_pk: int, step_pk: int, message_pk: int,
                 stopping: Callable[[], bool] = lambda: False) -> None:
    """Submits the re-run ``lapsed_step`` stored. When the runner refuses it while the process is shutting
    down (``stopping``: the heartbeat is stopped before the runner), the message stays pending and the step
    lapsed: the start-up resume runs it. Otherwise (its queue unreachable) nothing would run it before the
    process restarts, and a lapsed step offers the user nothing to act on: the message is dropped and the
    step fails with ``NOT_RERUN``, so a relaunch goes on."""
    try:
        submit(TurnJob(session_id=session_id, message_pk=message_pk))
        return
    except Exception:
        if stopping():
            log.warning("the re-run of lapsed step execution %s (execution %s) was refused at shutdown: its "
                        "message %s is left to the start-up resume", step_pk, execution_pk, message_pk)
            return
        log.exception("could not submit the re-run of lapsed step execution %s (execution %s)", step_pk,
                      execution_pk)
    try:
        with events.publishing(session_id) as publication, transaction(factory) as db:
            dropped = db.execute(update(Message).where(Message.message_pk == message_pk, Message.status == "pending")
                                 .values(status="failed", error=NOT_RERUN)).rowcount
            if not dropped:  # taken meanwhile (a start-up resume): it runs the slot
                return
            try:
                with db.begin_nested():  # live again: the slot's unique index refuses it if a run claimed it
                    failed = db.execute(update(store.StepRow).where(
                        store.StepRow.user_workflow_step_execution_pk == step_pk, store.StepRow.status == "lapsed")
                        .values(status="failed", error=NOT_RERUN)).rowcount
            except IntegrityError:
                return  # another run of the slot was claimed since: the workflow goes on without this one
            if failed:
                _tell_ended(db, publication, session_id, execution_pk, step_pk)
    except Exception:  # the message stays pending: the start-up resume runs it
        log.exception("could not fail lapsed step execution %s after its re-run was refused", step_pk)


def _tell_ended(db: DbSession, publication: Publication, session_id: str, execution_pk: int,
                step_pk: int) -> UserTaskExecution | None:
    """Publishes the step's ``workflow_step_execution_ended`` as stored; returns its execution."""
    row = db.get(store.StepRow, step_pk)
    db.refresh(row)
    execution = db.get(UserTaskExecution, execution_pk)
    step = store.step_def(store.task_of(db, execution), row.rank) if execution is not None else None
    publication.add(db, ENDED, {**store.step_view(row, None, None, step), "session_id": session_id})
    return execution
