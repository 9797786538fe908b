"""Global events of an order conversation, stored like messages so the runner orders them with utterances.

An event (silence, barge_in, out_of_stock, session_end, and the platform's own order_complete)
is a system message with event_name "order_event", pending until its turn runs: the same
per-session FIFO, idempotency and failure handling as a customer's message.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, OrderSession
from mojodex_core.execution.events import EventPublisher
from mojodex_core.order_runtime import ORDER_EVENT

# Events a client may raise (POST /order_event); order_complete is raised by the platform after a ticket.
CLIENT_EVENTS = ("silence", "barge_in", "out_of_stock", "session_end")


class OrderFinished(Exception):
    """The conversation is Idle: nothing more can be said to it."""


def ensure_open(db: DbSession, user_task_execution_pk: int) -> OrderSession:
    row = db.get(OrderSession, user_task_execution_pk)
    if row is None:
        raise LookupError("this execution has no order conversation")
    if row.state == "Idle":
        raise OrderFinished("this order is finished (the conversation is Idle): start a new one")
    return row


def accept_event(
    factory: sessionmaker[DbSession],
    events: EventPublisher,
    *,
    session_id: str,
    user_task_execution_pk: int,
    event: str,
    item: dict[str, Any] | None,
) -> int:
    """Stores a global event as a system message for the runner (same FIFO as utterances); its pk."""
    message_id = f"event-{uuid.uuid4().hex}"
    with events.publishing(session_id) as publication, transaction(factory) as db:
        ensure_open(db, user_task_execution_pk)
        message = Message(
            session_id=session_id, user_task_execution_fk=user_task_execution_pk, sender="system",
            message_id=message_id, event_name=ORDER_EVENT, text=event, status="pending",
            data={"event": event, "item": item},
        )
        db.add(message)
        db.flush()
        message.seq = publication.add(db, "order_event_reception", {
            "session_id": session_id, "user_task_execution_pk": user_task_execution_pk,
            "message_pk": message.message_pk, "message_id": message_id, "event": event, "item": item,
        })
        return message.message_pk


