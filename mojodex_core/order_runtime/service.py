"""What the order routes do, without Flask: open a conversation, start it, read it, raise events.

Every function takes an open database session (the caller's transaction) or the session
factory when it publishes events; ownership is the routes' business.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import EXECUTION_LOCK, transaction
from mojodex_core.db.models import Message, OrderAudit, OrderSession, OrderTicket, Task, UserTaskExecution
from mojodex_core.execution.events import EventPublisher
from mojodex_core.order.conversation import (
    Conversation,
    affected_by,
    at_current_prices,
    order_view,
    start_conversation,
)
from mojodex_core.order_runtime.context import live_state
from mojodex_core.order_runtime.menus import MenuCatalog
from mojodex_core.order_runtime.store import LiveStateStore, state_key
from mojodex_core.order_runtime.tickets import ticket_view
from mojodex_core.timestamps import iso_utc

DEFAULT_LANE = "0"


def state_location(task: Task) -> tuple[str, str]:
    spec = task.spec or {}
    return spec.get("location") or task.name_for_system, spec.get("lane") or DEFAULT_LANE


def open_order(
    db: DbSession, execution: UserTaskExecution, task: Task, catalog: MenuCatalog, store: LiveStateStore,
    language: str = "en",
) -> dict[str, Any]:
    """Creates the conversation of a new order execution; returns {order, greeting}."""
    menu = catalog.resolve(db, task.menu or (task.spec or {}).get("menu", ""))
    try:
        conversation, greeting = start_conversation(menu, language)
    except (ValueError, LookupError, OSError):  # no responses in that language: the base one
        conversation, greeting = start_conversation(menu, "en")
    location, lane = state_location(task)
    db.add(OrderSession(
        user_task_execution_fk=execution.user_task_execution_pk,
        menu_ref=task.menu or (task.spec or {}).get("menu", ""),
        menu_id=menu.id,
        location=location,
        lane=lane,
        state=conversation.state,
        turn=0,
        conversation={**conversation.model_dump(mode="json"), "greeting": greeting},
    ))
    db.flush()
    key = state_key(location, lane, execution.session_id)
    store.save(key, live_state(execution.user_task_execution_pk, 0, conversation))
    return {"order": order_view(conversation, menu), "greeting": greeting, "state": conversation.state}


def greeting_of(row: OrderSession) -> str:
    return (row.conversation or {}).get("greeting", "")


@dataclass
class Started:
    message_pk: int | None
    started_now: bool


def start_order(
    factory: sessionmaker[DbSession], events: EventPublisher, catalog: MenuCatalog, user_task_execution_pk: int
) -> Started:
    """Starts an order execution (no form): the greeting becomes the first assistant message, once."""
    with transaction(factory) as db:
        execution = db.get(UserTaskExecution, user_task_execution_pk)
        session_id = execution.session_id
    with events.publishing(session_id) as publication, transaction(factory) as db:
        execution = db.get(UserTaskExecution, user_task_execution_pk, with_for_update=EXECUTION_LOCK)
        row = db.get(OrderSession, user_task_execution_pk)
        first = db.execute(select(Message.message_pk, Message.data).where(
            Message.user_task_execution_fk == user_task_execution_pk,
            Message.sender == "assistant",
        ).order_by(Message.message_pk).limit(1)).first()
        if first is not None or execution.start_date is not None:
            # The greeting's pk; none when the customer spoke first (the conversation began with their message).
            greeted = first is not None and (first.data or {}).get("response_key") == "greeting"
            return Started(first.message_pk if greeted else None, started_now=False)
        execution.start_date = datetime.now(UTC)
        execution.status = "started"
        base = {"session_id": session_id, "user_task_execution_pk": user_task_execution_pk}
        publication.add(db, "user_task_execution_start", base)
        greeting = Message(
            session_id=session_id, user_task_execution_fk=user_task_execution_pk, sender="assistant",
            event_name="mojo_message", text=greeting_of(row), status="final",
            data={"response_key": "greeting", "state": row.state},
        )
        db.add(greeting)
        db.flush()
        greeting.seq = publication.add(db, "mojo_message", {
            **base, "text": greeting.text, "message_pk": greeting.message_pk, "response_key": "greeting",
        })
        menu = catalog.resolve(db, row.menu_ref)
        publication.add(db, "order_state", {
            **base, "state": row.state, "order": order_view(Conversation.from_json(_conversation(row)), menu),
            "cancel_reply": False,
        })
        return Started(greeting.message_pk, started_now=True)


def _conversation(row: OrderSession) -> dict[str, Any]:
    return {k: v for k, v in (row.conversation or {}).items() if k != "greeting"}


def conversation_of(row: OrderSession) -> Conversation:
    return Conversation.from_json(_conversation(row))


def snapshot(db: DbSession, catalog: MenuCatalog, user_task_execution_pk: int) -> dict[str, Any]:
    """GET /order: {state, order, ticket} from the durable record."""
    row = db.get(OrderSession, user_task_execution_pk)
    if row is None:
        raise LookupError("this execution has no order conversation")
    menu = catalog.resolve(db, row.menu_ref)
    ticket = db.scalar(select(OrderTicket).where(OrderTicket.user_task_execution_fk == user_task_execution_pk))
    conversation = conversation_of(row)
    if ticket is None:  # the ticket froze its prices; until then, those of the menu as uploaded now
        conversation = at_current_prices(conversation, menu)
    return {
        "user_task_execution_pk": user_task_execution_pk,
        "state": row.state,
        "turn": row.turn,
        "menu_id": row.menu_id,
        "order": order_view(conversation, menu),
        "ticket": ticket_view(ticket),
    }


def audit(db: DbSession, user_task_execution_pk: int) -> list[dict[str, Any]]:
    rows = db.scalars(
        select(OrderAudit).where(OrderAudit.user_task_execution_fk == user_task_execution_pk).order_by(OrderAudit.seq)
    )
    return [
        {
            "seq": r.seq,
            "message_pk": r.message_fk,
            "utterance": r.utterance,
            "event": r.event,
            "intent": r.intent,
            "off_topic_type": r.off_topic_type,
            "parsed": r.parsed,
            "diff": r.diff,
            "state_before": r.state_before,
            "state_after": r.state_after,
            "transition": r.transition,
            "response_key": r.response_key,
            "reply": r.reply,
            "latency_ms": r.latency_ms,
            "timings_ms": r.timings_ms,
            "trace": r.trace,
            "created_at": iso_utc(r.created_at),
        }
        for r in rows
    ]


def affected_sessions(
    db: DbSession, menu_id: str, item_type: str, field: str | None, value: str | None, in_stock: bool
) -> list[tuple[str, int, dict[str, Any]]]:
    """Running conversations on this menu whose order uses what just went out of stock."""
    if in_stock:
        return []
    rows = db.execute(
        select(OrderSession, UserTaskExecution.session_id)
        .join(UserTaskExecution, UserTaskExecution.user_task_execution_pk == OrderSession.user_task_execution_fk)
        .where(OrderSession.menu_id == menu_id, OrderSession.state != "Idle", UserTaskExecution.status != "deleted")
    ).all()
    item = {"item_type": item_type, "field": field, "value": value}
    found = []
    for row, session_id in rows:
        if affected_by(conversation_of(row), item_type, field, value):
            found.append((session_id, row.user_task_execution_fk, item))
    return found
