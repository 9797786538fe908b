"""What the heartbeat watch does with a step whose process stopped: marks it (``heartbeat.mark_lapsed``),
tells the client, and stores the ``workflow_run`` message that runs its slot again, in one transaction."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import UserTaskExecution
from mojodex_core.execution.events import EventPublisher
from mojodex_core.workflow import store
from mojodex_core.workflow.heartbeat import mark_lapsed
from mojodex_core.workflow.runner import ENDED, request_run


def lapsed_step(factory: sessionmaker[DbSession], events: EventPublisher, session_id: str, execution_pk: int,
                step_pk: int, rerun: bool, cutoff: datetime) -> tuple[bool, int | None]:
    """Marks a step whose process stopped (``heartbeat.mark_lapsed``), tells the client, and with
    ``rerun`` stores the ``workflow_run`` message that runs its slot again, in one transaction: a
    failure leaves the step running for the next sweep. Returns (marked, the message's pk to submit)."""
    with events.publishing(session_id) as publication, transaction(factory) as db:
        if not mark_lapsed(db, step_pk, rerun, cutoff):
            return False, None
        row = db.get(store.StepRow, step_pk)
        db.refresh(row)
        execution = db.get(UserTaskExecution, execution_pk)
        step = store.step_def(store.task_of(db, execution), row.rank) if execution is not None else None
        publication.add(db, ENDED, {**store.step_view(row, None, None, step), "session_id": session_id})
        if not rerun or execution is None or execution.status == "deleted":
            return True, None
        return True, request_run(db, session_id, execution_pk, "re-run after a lapsed heartbeat").message_pk
