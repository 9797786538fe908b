"""Writing one answered order turn: the reply, the message's answer, the conversation, the audit.

Everything the rows need is computed first (`TurnRecord.of`: JSON dumps, the order view, the
audit row), so the write transaction only runs statements: on SQLite it holds the database's
one write lock, and any Python work done while holding it makes every other writer wait.
The statements are SQLAlchemy Core on the tables, built once: the ORM's unit of work cost
more than the SQL itself on this path.

Order of the writes (one transaction, the caller's):
  the answer row, then the user message claimed (`status` still the one the turn expects,
  else `NotClaimed`: someone else answered it and this transaction is rolled back), then the
  conversation (guarded by its turn counter), the execution checked, the ticket at Closing,
  the events, the audit row and the reasoning trace.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db import EXECUTION_LOCK
from mojodex_core.db.models import Message, OrderAudit, OrderSession, UserTaskExecution
from mojodex_core.execution.events import Publication
from mojodex_core.execution.failures import EXECUTION_DELETED
from mojodex_core.execution.reasoning import append_trace
from mojodex_core.execution.session_claims import check_fence
from mojodex_core.order.conversation import TurnOutcome, build_ticket, order_view
from mojodex_core.order_runtime.context import OrderClosed, OrderTurnContext, TurnFailed
from mojodex_core.order_runtime.tickets import create_ticket, ticket_view

_message = Message.__table__
_session = OrderSession.__table__
_execution = UserTaskExecution.__table__

_INSERT_ANSWER = insert(_message)
_CLAIM_ANSWERED = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"), _message.c.status == bindparam("b_expected"))
    .values(status="answered", answer_message_fk=bindparam("b_answer", type_=_message.c.answer_message_fk.type))
)
_STORE_CONVERSATION = (
    update(_session)
    .where(_session.c.user_task_execution_fk == bindparam("b_pk"), _session.c.turn == bindparam("b_turn"))
    .values(
        conversation=bindparam("b_conversation", type_=_session.c.conversation.type),
        state=bindparam("b_state", type_=_session.c.state.type), turn=bindparam("b_next", type_=_session.c.turn.type),
        updated_at=bindparam("b_now", type_=_session.c.updated_at.type),
    )
)
_EXECUTION_STATUS = (  # under the execution's row lock, which rows naming it (llm_call, messages) do not wait for
    select(_execution.c.status).where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
    .with_for_update(**EXECUTION_LOCK)
)
_COMPLETE_EXECUTION = (
    update(_execution)
    .where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
    .values(status="completed", end_date=bindparam("b_now", type_=_execution.c.end_date.type))
)
_INSERT_AUDIT = insert(OrderAudit.__table__)


class NotClaimed(Exception):
    """The user message is no longer in the status this turn expects: another turn answered it."""


@dataclass
class TurnRecord:
    """The rows of one answered turn, computed before the write transaction opens."""

    conversation: dict[str, Any]
    view: dict[str, Any]
    audit: dict[str, Any]

    @classmethod
    def of(cls, context: OrderTurnContext, outcome: TurnOutcome) -> TurnRecord:
        audit = {
            "user_task_execution_fk": context.user_task_execution_pk,
            "seq": context.turn + 1,
            "message_fk": context.message_pk,
            "utterance": context.utterance,
            "event": context.event,
            "intent": outcome.intent,
            "off_topic_type": outcome.off_topic_type,
            "parsed": outcome.parsed,
            "diff": outcome.diff,
            "state_before": outcome.state_before,
            "state_after": outcome.state_after,
            "transition": outcome.transition,
            "response_key": outcome.response_key,
            "reply": outcome.reply,
            "trace": outcome.trace,
        }
        return cls(outcome.conversation.model_dump(mode="json"), order_view(outcome.conversation, context.menu), audit)


def store_turn(
    db: DbSession,
    publication: Publication,
    context: OrderTurnContext,
    outcome: TurnOutcome,
    record: TurnRecord,
    *,
    expected_status: str,
    started: float,
) -> int | None:
    """Writes the turn in the caller's transaction; the ticket's pk when one was made."""
    persist_started = time.perf_counter()
    check_fence(db, context.session_id)  # distributed: a worker that lost its lease stores nothing
    now = datetime.now(UTC)
    pk = context.user_task_execution_pk
    base = {"session_id": context.session_id, "user_task_execution_pk": pk}
    # The answer's row is inserted with its event's seq, taken first (as intake and instruct turns do).
    seq = publication.next_seq()
    answer_pk = db.execute(_INSERT_ANSWER, {
        "session_id": context.session_id, "user_task_execution_fk": pk, "sender": "assistant",
        "event_name": "mojo_message", "text": outcome.reply, "status": "final",
        "data": {"response_key": outcome.response_key, "state": outcome.state_after}, "created_at": now,
        "seq": seq,
    }).inserted_primary_key[0]
    claimed = db.execute(_CLAIM_ANSWERED, {"b_pk": context.message_pk, "b_expected": expected_status,
                                           "b_answer": answer_pk})
    if claimed.rowcount != 1:
        raise NotClaimed(context.message_pk)
    stored = db.execute(_STORE_CONVERSATION, {
        "b_pk": pk, "b_turn": context.turn, "b_conversation": record.conversation,
        "b_state": outcome.state_after, "b_next": context.turn + 1, "b_now": now,
    })
    if stored.rowcount != 1:
        # Another process answered a turn of this conversation meanwhile: never overwrite it.
        raise TurnFailed("The order changed while this message was handled. Please retry.")
    status = db.execute(_EXECUTION_STATUS, {"b_pk": pk}).scalar()
    if status is None or status == "deleted":
        raise OrderClosed(EXECUTION_DELETED)
    ticket = None
    if outcome.closed:
        ticket = create_ticket(
            db, db.get(UserTaskExecution, pk), context.user_id, build_ticket(outcome.conversation, context.menu),
            webhook_url=context.webhook_url, text_type_fk=context.output_text_type_fk,
            message_pk=answer_pk, title=f"Order ticket #{pk}",
        )
    if outcome.ended or outcome.state_after == "Idle":
        db.execute(_COMPLETE_EXECUTION, {"b_pk": pk, "b_now": now})
    publication.add(db, "mojo_message", {
        **base, "text": outcome.reply, "message_pk": answer_pk, "user_message_pk": context.message_pk,
        "response_key": outcome.response_key,
    }, seq=seq)
    if ticket is not None:
        publication.add(db, "order_ticket", {**base, "ticket": ticket_view(ticket)})
    publication.add(db, "order_state", {
        **base, "state": outcome.state_after, "order": record.view, "cancel_reply": outcome.cancel_reply,
    })
    timings = {
        **outcome.timings_ms,
        "begin": round(context.begin_ms, 3),
        "persistence": round((time.perf_counter() - persist_started) * 1000, 3),
    }
    db.execute(_INSERT_AUDIT, {
        **record.audit, "timings_ms": timings, "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        "created_at": now,
    })
    # The same decisions in the execution's reasoning trace, beside instruct and tool turns'.
    append_trace(db, pk, outcome.trace, source="ORDER_TURN")
    return ticket.order_ticket_pk if ticket is not None else None
