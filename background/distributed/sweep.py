"""The periodic sweep (Celery beat): turns whose worker died are re-run, lost drains re-sent.

- A session whose lease holder stopped heart-beating for longer than the lease is taken over:
  its fence is bumped (the dead worker's completion, should it wake up, is refused), each of its
  messages left ``processing`` goes back to ``pending`` with a ``mojo_message_retrying`` event
  ({message_pk, seq}), and a drain task is sent for it. The client then sees the answer.
- A session with a message pending for a while and no lease holder lost its drain task (the
  broker restarted, a send failed): a drain task is sent again. Drains are idempotent.
"""

from __future__ import annotations

import logging
from typing import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import Message
from mojodex_core.execution.events import EventPublisher, Publication
from mojodex_core.execution.session_claims import (
    answered_by_runner,
    sessions_waiting,
    stalled_sessions,
    take_over,
)

log = logging.getLogger("mojodex.sweep")

RETRYING_EVENT = "mojo_message_retrying"


def requeue_orphans(db: DbSession, publication: Publication, session_id: str) -> list[int]:
    """Messages left ``processing`` by a lease holder that is gone go back to ``pending``, each with a
    ``mojo_message_retrying`` event. Call it holding the session (a lease just claimed or taken
    over): no live turn of the session can then be running."""
    rows = db.scalars(
        select(Message)
        .where(
            Message.session_id == session_id,
            answered_by_runner(),
            Message.status == "processing",
        )
        .order_by(Message.message_pk)
    ).all()
    for row in rows:
        row.status = "pending"
        publication.add(db, RETRYING_EVENT, {"message_pk": row.message_pk})
    return [row.message_pk for row in rows]


def sweep(
    factory: sessionmaker[DbSession],
    events: EventPublisher,
    submit: Callable[[str], None],
    *,
    lease_s: float,
    pending_grace_s: float,
) -> dict[str, int]:
    """One pass; returns how many sessions were recovered and re-sent (for logs and tests)."""
    with factory() as db:
        stalled = stalled_sessions(db, lease_s)
    recovered = 0
    for session_id, fence in stalled:
        with events.publishing(session_id) as publication, transaction(factory) as db:
            if not take_over(db, session_id, fence, lease_s):
                continue  # it renewed meanwhile, or another sweep got it
            retried = requeue_orphans(db, publication, session_id)
        recovered += 1
        log.warning("session %s: worker lost (fence %d); re-running message(s) %s", session_id, fence, retried)
        submit(session_id)
    with factory() as db:
        waiting = sessions_waiting(db, pending_grace_s)
    for session_id in waiting:
        submit(session_id)
    if waiting:
        log.info("re-sent the drain of %d session(s) with unanswered messages", len(waiting))
    return {"recovered": recovered, "resent": len(waiting)}
