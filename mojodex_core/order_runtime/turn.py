"""One turn of an order task: a customer utterance or a global event through the conversation engine.

The same shape as an instruct turn (begin / run / complete or fail), on the same runner, so
ordering per session, idempotency on message_id and failures behave the same: a turn that
cannot answer leaves its message failed with an error event, retryable with the same
message_id. The reply is never written by an LLM: it comes from the engine's resource files;
the LLM (when configured) only helps the engine parse and classify.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import (
    Message,
    OrderAudit,
    OrderSession,
    Task,
    UserTask,
    UserTaskExecution,
)
from mojodex_core.execution.events import EventPublisher, Publication
from mojodex_core.execution.failures import fail_or_mark, failure_reason, mark_failed
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.reasoning import append_trace
from mojodex_core.execution.session_claims import check_fence
from mojodex_core.llm import LLMCancelled
from mojodex_core.order.conversation import (
    Conversation,
    ConversationEnded,
    NoTransition,
    TurnInput,
    TurnOutcome,
    build_ticket,
    converse,
    order_view,
)
from mojodex_core.order_runtime import ORDER_EVENT
from mojodex_core.order_runtime.context import BoundLLM, OrderTurnContext, TurnFailed, live_state
from mojodex_core.order_runtime.intake import OrderFinished, accept_event
from mojodex_core.order_runtime.menus import MenuCatalog, MenuNotFound
from mojodex_core.order_runtime.store import LiveStateStore, state_key
from mojodex_core.order_runtime.tickets import TicketDelivery, create_ticket

log = logging.getLogger("mojodex.order.turn")


RECENT_CONVERSATIONS = 10_000  # conversations kept in memory by the process that answered them last


class OrderTurn:
    """Callable handed to the dispatcher for task type 'order'."""

    def __init__(
        self,
        session_factory: sessionmaker[DbSession],
        events: EventPublisher,
        llm: Any,
        store: LiveStateStore,
        menus: MenuCatalog,
        tickets: TicketDelivery | None,
        *,
        threshold: float = 0.8,
    ) -> None:
        self._factory = session_factory
        self._events = events
        self._llm = llm
        self.store = store
        self._menus = menus
        self._tickets = tickets
        self._threshold = threshold
        # execution pk -> (turn counter, conversation) of the turns this process answered last.
        self._recent: dict[int, tuple[int, Conversation]] = {}

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        if self._llm is None:
            self._run_in_one_transaction(job, cancel)
        else:
            self._run_in_two_transactions(job, cancel)

    def _converse(self, context: OrderTurnContext, cancel: threading.Event) -> TurnOutcome:
        llm = BoundLLM(self._llm, context.user_task_execution_pk, cancel) if self._llm is not None else None
        try:
            outcome = converse(
                context.conversation, context.turn_input, context.menu, llm=llm, threshold=self._threshold
            )
        except ConversationEnded as exc:
            raise TurnFailed("This order is finished: start a new one.") from exc
        except NoTransition as exc:  # e.g. an event the state machine has no row for in this state
            raise TurnFailed(f"This cannot be handled in the current state of the order ({exc}).") from exc
        if cancel.is_set():
            raise LLMCancelled("cancelled")
        return outcome

    def _fail(self, context: OrderTurnContext, exc: Exception) -> None:
        reason = failure_reason(exc, shown=(TurnFailed,), what="order turn",
                                where=f"session={context.session_id} message_pk={context.message_pk}")
        fail_or_mark(
            self._factory, self._events, session_id=context.session_id, message_pk=context.message_pk,
            message_id=context.message_id, user_task_execution_pk=context.user_task_execution_pk, reason=reason,
        )

    def _finish(self, context: OrderTurnContext, outcome: TurnOutcome, ticket_pk: int | None, started: float) -> None:
        """After the commit: live copy, ticket delivery, and Closing's order_complete."""
        self._after_commit(context, outcome)
        log.info(
            "order turn done session=%s message_pk=%s %s->%s (%s) in %.1f ms",
            context.session_id, context.message_pk, outcome.state_before, outcome.state_after,
            outcome.response_key, (time.perf_counter() - started) * 1000,
        )
        if ticket_pk is not None:
            if self._tickets is not None and context.webhook_url:
                self._tickets.deliver_later(ticket_pk)
            self._order_complete(context)

    def _run_in_one_transaction(self, job: TurnJob, cancel: threading.Event) -> None:
        """No LLM: the engine is pure and fast, so the whole turn is one write transaction (the
        message claimed by its first statement, which also takes SQLite's write lock)."""
        started = time.perf_counter()
        context: OrderTurnContext | None = None
        try:
            with self._events.publishing(job.session_id) as publication, transaction(self._factory) as db:
                claimed = db.execute(
                    update(Message)
                    .where(Message.message_pk == job.message_pk, Message.status == "pending")
                    .values(status="processing")
                )
                if claimed.rowcount != 1:
                    return  # answered already, or not ours to answer: never answer twice
                message = db.get(Message, job.message_pk)
                context = self._load(db, job, message)
                if context is None:
                    return
                if context.started_now:
                    publication.add(db, "user_task_execution_start", {
                        "session_id": context.session_id, "user_task_execution_pk": context.user_task_execution_pk,
                    })
                context.begin_ms = (time.perf_counter() - started) * 1000
                if context.setup_error is not None:
                    raise TurnFailed(context.setup_error)
                outcome = self._converse(context, cancel)
                ticket_pk = self._store(db, publication, context, outcome, started)
        except Exception as exc:  # rolled back: the message is pending again, then failed visibly
            if context is None:
                log.exception("order turn set-up failed session=%s message_pk=%s", job.session_id, job.message_pk)
                mark_failed(self._factory, job.message_pk, "The assistant failed to answer because of an internal "
                                                            "error. Please retry.")
            else:
                self._fail(context, exc)
            return
        self._finish(context, outcome, ticket_pk, started)

    def _run_in_two_transactions(self, job: TurnJob, cancel: threading.Event) -> None:
        """With an LLM the engine may wait on it: never inside a write transaction."""
        started = time.perf_counter()
        try:
            context = self._begin(job)
            if context is not None:
                context.begin_ms = (time.perf_counter() - started) * 1000
        except Exception:
            log.exception("order turn set-up failed session=%s message_pk=%s", job.session_id, job.message_pk)
            mark_failed(self._factory, job.message_pk, "The assistant failed to answer because of an internal error.")
            return
        if context is None:
            return
        try:
            if context.started_now:
                self._events.publish(
                    context.session_id,
                    "user_task_execution_start",
                    {"session_id": context.session_id, "user_task_execution_pk": context.user_task_execution_pk},
                )
            if context.setup_error is not None:
                raise TurnFailed(context.setup_error)
            outcome = self._converse(context, cancel)
            with self._events.publishing(context.session_id) as publication, transaction(self._factory) as db:
                ticket_pk = self._store(db, publication, context, outcome, started)
        except Exception as exc:
            self._fail(context, exc)
            return
        self._finish(context, outcome, ticket_pk, started)

    def _order_complete(self, context: OrderTurnContext) -> None:
        """The ticket is stored: Closing ends in Idle through the engine's order_complete event, run
        now in this turn's slot of the session's queue (nothing can slip in between)."""
        try:
            message_pk = accept_event(
                self._factory, self._events, session_id=context.session_id,
                user_task_execution_pk=context.user_task_execution_pk, event="order_complete", item=None,
            )
        except OrderFinished:
            return
        except Exception:
            log.exception("could not raise order_complete for execution %s", context.user_task_execution_pk)
            return
        self(TurnJob(session_id=context.session_id, message_pk=message_pk), threading.Event())

    # --- phase 1: the message, its conversation and menu; the message marked processing
    def _begin(self, job: TurnJob) -> OrderTurnContext | None:
        with transaction(self._factory) as db:
            message = db.get(Message, job.message_pk, with_for_update=True)
            if message is None or message.status != "pending":
                return None
            context = self._load(db, job, message)
            if context is not None:
                message.status = "processing"
        return context

    def _load(self, db: DbSession, job: TurnJob, message: Message) -> OrderTurnContext | None:
        """What the turn needs; None (the message failed) when its execution is gone. Column reads,
        not whole rows: with a live copy the conversation JSON is not read from the database."""
        found = db.execute(
            select(
                UserTaskExecution.session_id, UserTaskExecution.status, UserTaskExecution.start_date,
                UserTask.user_id, Task.output_text_type_fk, Task.spec,
                OrderSession.menu_ref, OrderSession.location, OrderSession.lane, OrderSession.state,
                OrderSession.turn,
            )
            .select_from(UserTaskExecution)
            .join(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
            .join(Task, Task.task_pk == UserTask.task_fk)
            .outerjoin(
                OrderSession, OrderSession.user_task_execution_fk == UserTaskExecution.user_task_execution_pk
            )
            .where(UserTaskExecution.user_task_execution_pk == message.user_task_execution_fk)
        ).first() if message.user_task_execution_fk is not None else None
        if found is None:
            message.status = "failed"
            message.error = "the task execution does not exist"
            return None
        has_row = found.menu_ref is not None
        context = OrderTurnContext(
            session_id=found.session_id,
            message_pk=message.message_pk,
            message_id=message.message_id,
            user_task_execution_pk=message.user_task_execution_fk,
            user_id=found.user_id,
            output_text_type_fk=found.output_text_type_fk,
            webhook_url=(found.spec or {}).get("pos_webhook_url"),
            key=state_key(found.location, found.lane, found.session_id) if has_row else "",
            conversation=None,
            turn=found.turn if has_row else 0,
            menu=None,
            turn_input=None,
        )
        if message.event_name == ORDER_EVENT:
            data = message.data or {}
            context.event = data.get("event")
            context.turn_input = TurnInput(event=context.event, item=data.get("item"))
        else:
            context.utterance = message.text
            context.turn_input = TurnInput(text=message.text)
        if found.status == "deleted":
            context.setup_error = "The task execution was deleted."
        elif not has_row:
            context.setup_error = "This execution has no order conversation (was it created as an order task?)."
        elif found.state == "Idle":
            context.setup_error = "This order is finished: start a new one."
        else:
            try:
                context.menu = self._menus.resolve(db, found.menu_ref)
                context.conversation = self._conversation(db, context)
            except MenuNotFound as exc:
                context.setup_error = f"The menu of this order is not available: {exc}"
            except Exception:
                # Raising here would leave the message failed with no error event: commit
                # "processing", then fail it visibly (retryable) like any other turn.
                log.exception("order turn set-up failed session=%s message_pk=%s", job.session_id, job.message_pk)
                context.setup_error = "The assistant failed to answer because of an internal error. Please retry."
        context.started_now = found.start_date is None and found.status != "deleted"
        if context.started_now:
            db.execute(
                update(UserTaskExecution)
                .where(UserTaskExecution.user_task_execution_pk == context.user_task_execution_pk)
                .values(start_date=datetime.now(UTC), status="started")
            )
        return context

    def _conversation(self, db: DbSession, context: OrderTurnContext) -> Conversation:
        """The latest turn's conversation: this process's own copy, else the live store's, else the
        durable record. A copy is only used when its turn counter is the database's."""
        recent = self._recent.get(context.user_task_execution_pk)
        if recent is not None and recent[0] == context.turn:
            return recent[1]  # never mutated: converse returns a new conversation
        live = self.store.load(context.key)
        if live is not None:
            try:
                data = json.loads(live)
                if data.get("turn") == context.turn:
                    return Conversation.from_json(data["conversation"])
            except (ValueError, KeyError, TypeError, AttributeError):
                log.warning("unreadable live state under %s: using the database", context.key)
        stored = db.scalar(
            select(OrderSession.conversation).where(
                OrderSession.user_task_execution_fk == context.user_task_execution_pk
            )
        )
        return Conversation.from_json(stored)

    # --- phase 3: the reply, audit, state and ticket in one transaction, then the events
    def _store(
        self, db: DbSession, publication: Publication, context: OrderTurnContext, outcome: TurnOutcome, started: float
    ) -> int | None:
        """Writes the turn in the caller's transaction; the ticket's pk when one was made."""
        check_fence(db, context.session_id)  # distributed: a worker that lost its lease stores nothing
        persist_started = time.perf_counter()
        conversation = outcome.conversation
        ticket_pk = None
        # The first write takes SQLite's lock (Postgres: the row lock) before the status checks.
        stored = db.execute(
            update(OrderSession)
            .where(
                OrderSession.user_task_execution_fk == context.user_task_execution_pk,
                OrderSession.turn == context.turn,
            )
            .values(
                conversation=conversation.model_dump(mode="json"), state=outcome.state_after,
                turn=context.turn + 1, updated_at=datetime.now(UTC),
            )
        )
        if stored.rowcount != 1:
            # Another process answered a turn of this conversation meanwhile: never overwrite it.
            raise TurnFailed("The order changed while this message was handled. Please retry.")
        execution = db.get(UserTaskExecution, context.user_task_execution_pk, with_for_update=True)
        if execution is None or execution.status == "deleted":
            raise TurnFailed("The task execution was deleted.")
        view = order_view(conversation, context.menu)
        base = {"session_id": context.session_id, "user_task_execution_pk": context.user_task_execution_pk}
        answer = Message(
            session_id=context.session_id,
            user_task_execution_fk=context.user_task_execution_pk,
            sender="assistant",
            event_name="mojo_message",
            text=outcome.reply,
            status="final",
            data={"response_key": outcome.response_key, "state": outcome.state_after},
        )
        db.add(answer)
        db.flush()
        db.execute(
            update(Message)
            .where(Message.message_pk == context.message_pk)
            .values(status="answered", answer_message_fk=answer.message_pk)
        )
        ticket = None
        if outcome.closed:
            ticket = create_ticket(
                db, execution, context.user_id, build_ticket(conversation, context.menu),
                webhook_url=context.webhook_url, text_type_fk=context.output_text_type_fk,
                message_pk=answer.message_pk, title=f"Order ticket #{context.user_task_execution_pk}",
            )
            ticket_pk = ticket.order_ticket_pk
        if outcome.ended or outcome.state_after == "Idle":
            execution.status = "completed"
            execution.end_date = datetime.now(UTC)
        answer.seq = publication.add(db, "mojo_message", {
            **base, "text": outcome.reply, "message_pk": answer.message_pk, "user_message_pk": context.message_pk,
            "response_key": outcome.response_key,
        })
        if ticket is not None:
            from mojodex_core.order_runtime.tickets import ticket_view

            publication.add(db, "order_ticket", {**base, "ticket": ticket_view(ticket)})
        publication.add(db, "order_state", {
            **base, "state": outcome.state_after, "order": view, "cancel_reply": outcome.cancel_reply,
        })
        timings = {
            **outcome.timings_ms,
            "begin": round(context.begin_ms, 3),
            "persistence": round((time.perf_counter() - persist_started) * 1000, 3),
        }
        db.add(OrderAudit(
            user_task_execution_fk=context.user_task_execution_pk,
            seq=context.turn + 1,
            message_fk=context.message_pk,
            utterance=context.utterance,
            event=context.event,
            intent=outcome.intent,
            off_topic_type=outcome.off_topic_type,
            parsed=outcome.parsed,
            diff=outcome.diff,
            state_before=outcome.state_before,
            state_after=outcome.state_after,
            transition=outcome.transition,
            response_key=outcome.response_key,
            reply=outcome.reply,
            trace=outcome.trace,
            timings_ms=timings,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
        ))
        # The same decisions in the execution's reasoning trace, beside instruct and tool turns'.
        append_trace(db, context.user_task_execution_pk, outcome.trace, source="ORDER_TURN")
        return ticket_pk

    def _after_commit(self, context: OrderTurnContext, outcome: TurnOutcome) -> None:
        conversation = outcome.conversation
        if outcome.state_after == "Idle":
            self._recent.pop(context.user_task_execution_pk, None)
            self.store.drop(context.key)
        else:
            if len(self._recent) >= RECENT_CONVERSATIONS:
                self._recent.clear()
            self._recent[context.user_task_execution_pk] = (context.turn + 1, conversation)
            self.store.save(context.key, live_state(context.turn + 1, conversation))
