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

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import HomeChat, Message, OrderSession, Task, UserTask, UserTaskExecution
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import EXECUTION_DELETED, fail_or_mark, failure_reason, mark_failed
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.llm import LLMCancelled
from mojodex_core.order.conversation import (
    Conversation,
    ConversationEnded,
    NoTransition,
    TurnInput,
    TurnOutcome,
    converse,
)
from mojodex_core.order_runtime import ORDER_EVENT
from mojodex_core.order_runtime.context import BoundLLM, OrderClosed, OrderTurnContext, TurnFailed, live_state
from mojodex_core.order_runtime.intake import OrderFinished, accept_event
from mojodex_core.order_runtime.menus import MenuCatalog, MenuNotFound
from mojodex_core.order_runtime.record import NotClaimed, TurnRecord, store_turn
from mojodex_core.order_runtime.routed import ended_by_cancel, greeted_instead
from mojodex_core.order_runtime.store import LiveStateStore, state_key
from mojodex_core.order_runtime.tickets import TicketDelivery

log = logging.getLogger("mojodex.order.turn")


_CONTEXT = (
    select(
        Message.status.label("message_status"), Message.message_id, Message.event_name, Message.text, Message.data,
        Message.user_task_execution_fk,
        UserTaskExecution.session_id, UserTaskExecution.status, UserTaskExecution.start_date,
        UserTask.user_id, Task.output_text_type_fk, Task.spec,
        OrderSession.menu_ref, OrderSession.location, OrderSession.lane, OrderSession.state, OrderSession.turn,
        HomeChat.home_chat_pk,
    )
    .select_from(Message)
    .outerjoin(UserTaskExecution, UserTaskExecution.user_task_execution_pk == Message.user_task_execution_fk)
    .outerjoin(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
    .outerjoin(Task, Task.task_pk == UserTask.task_fk)
    .outerjoin(OrderSession, OrderSession.user_task_execution_fk == UserTaskExecution.user_task_execution_pk)
    .outerjoin(HomeChat, HomeChat.session_id == UserTaskExecution.session_id)
    .where(Message.message_pk == bindparam("b_pk"))
)
_CLAIM_PROCESSING = (
    update(Message.__table__)
    .where(Message.__table__.c.message_pk == bindparam("b_pk"), Message.__table__.c.status == "pending")
    .values(status="processing")
)
_MARK_FAILED = (
    update(Message.__table__)
    .where(Message.__table__.c.message_pk == bindparam("b_pk"))
    .values(status="failed", error=bindparam("b_error", type_=Message.__table__.c.error.type))
)
RECENT_CONVERSATIONS = 10_000  # conversations kept in memory by the process that answered them last


class _ExecutionGone(Exception):
    """The message's task execution no longer exists."""


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
            raise OrderClosed("This order is finished: start a new one.") from exc
        except NoTransition as exc:  # e.g. an event the state machine has no row for in this state
            raise TurnFailed(f"This cannot be handled in the current state of the order ({exc}).") from exc
        if cancel.is_set():
            raise LLMCancelled("cancelled")
        if context.routed:
            if context.turn == 0 and context.utterance is not None:
                outcome = greeted_instead(context.conversation, outcome, context.menu)
            outcome = ended_by_cancel(outcome)
        return outcome

    def _fail(self, context: OrderTurnContext, exc: Exception) -> None:
        if not isinstance(exc, OrderClosed) and self._deleted(context.user_task_execution_pk):
            # Deleted meanwhile (DELETE /user_task_execution cancels the turn; or the engine or the
            # store failed after it): whatever ended the turn, a retry could only meet a 404.
            exc = OrderClosed(EXECUTION_DELETED)
        reason = failure_reason(exc, shown=(TurnFailed,), what="order turn",
                                where=f"session={context.session_id} message_pk={context.message_pk}")
        fail_or_mark(
            self._factory, self._events, session_id=context.session_id, message_pk=context.message_pk,
            message_id=context.message_id, user_task_execution_pk=context.user_task_execution_pk, reason=reason,
            retryable=not isinstance(exc, OrderClosed),
        )

    def _deleted(self, user_task_execution_pk: int) -> bool:
        try:
            with self._factory() as db:
                status = db.scalar(select(UserTaskExecution.status)
                                   .where(UserTaskExecution.user_task_execution_pk == user_task_execution_pk))
        except Exception:  # the failure is recorded anyway, as a cancellation
            log.exception("could not read the status of execution %s", user_task_execution_pk)
            return False
        return status is None or status == "deleted"

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
        """No LLM: the turn reads what it needs, runs the (pure, fast) engine, then writes the whole
        turn in one write transaction, which claims the message: SQLite's write lock is held for
        the writes only, never while the turn reads or the engine thinks."""
        started = time.perf_counter()
        try:
            with transaction(self._factory) as db:
                context = self._load(db, job, expected_status="pending")
        except _ExecutionGone:
            mark_failed(self._factory, job.message_pk, "the task execution does not exist")
            return
        except Exception:
            log.exception("order turn set-up failed session=%s message_pk=%s", job.session_id, job.message_pk)
            mark_failed(self._factory, job.message_pk, "The assistant failed to answer because of an internal "
                                                        "error. Please retry.")
            return
        if context is None:
            return  # answered already, or not ours to answer: never answer twice
        context.begin_ms = (time.perf_counter() - started) * 1000
        try:
            if context.setup_error is not None:
                raise (OrderClosed if context.setup_final else TurnFailed)(context.setup_error)
            outcome = self._converse(context, cancel)
            record = TurnRecord.of(context, outcome)
            with self._events.publishing(job.session_id) as publication, transaction(self._factory) as db:
                if context.started_now:
                    self._start_execution(db, context)
                    publication.add(db, "user_task_execution_start", {
                        "session_id": context.session_id, "user_task_execution_pk": context.user_task_execution_pk,
                    })
                ticket_pk = store_turn(db, publication, context, outcome, record, expected_status="pending",
                                       started=started)
        except NotClaimed:
            return  # rolled back: another turn answered this message meanwhile
        except Exception as exc:  # rolled back: the message is pending again, then failed visibly
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
                raise (OrderClosed if context.setup_final else TurnFailed)(context.setup_error)
            outcome = self._converse(context, cancel)
            record = TurnRecord.of(context, outcome)
            with self._events.publishing(context.session_id) as publication, transaction(self._factory) as db:
                ticket_pk = store_turn(db, publication, context, outcome, record, expected_status="processing",
                                       started=started)
        except NotClaimed:
            log.warning("order turn session=%s message_pk=%s: the message was answered elsewhere",
                        context.session_id, context.message_pk)
            return
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

    # --- phase 1: the message, its conversation and menu
    def _begin(self, job: TurnJob) -> OrderTurnContext | None:
        """With an LLM: the message marked processing (committed) before the engine runs."""
        with transaction(self._factory) as db:
            claimed = db.execute(_CLAIM_PROCESSING, {"b_pk": job.message_pk}).rowcount == 1
            if not claimed:
                return None
            try:
                context = self._load(db, job, expected_status="processing")
            except _ExecutionGone:
                db.execute(_MARK_FAILED, {"b_pk": job.message_pk, "b_error": "the task execution does not exist"})
                return None
            if context is not None and context.started_now:
                self._start_execution(db, context)
        return context

    @staticmethod
    def _start_execution(db: DbSession, context: OrderTurnContext) -> None:
        db.execute(
            update(UserTaskExecution)
            .where(UserTaskExecution.user_task_execution_pk == context.user_task_execution_pk)
            .values(start_date=datetime.now(UTC), status="started")
        )

    def _load(self, db: DbSession, job: TurnJob, *, expected_status: str) -> OrderTurnContext | None:
        """What the turn needs, in one query (column reads, not whole rows: with a live copy the
        conversation JSON is not read from the database); None when the message is gone or not in
        the expected status. Raises _ExecutionGone when its execution is."""
        found = db.execute(_CONTEXT, {"b_pk": job.message_pk}).first()
        if found is None or found.message_status != expected_status:
            return None
        if found.user_task_execution_fk is None or found.session_id is None:
            raise _ExecutionGone(job.message_pk)
        has_row = found.menu_ref is not None
        context = OrderTurnContext(
            session_id=found.session_id,
            message_pk=job.message_pk,
            message_id=found.message_id,
            user_task_execution_pk=found.user_task_execution_fk,
            user_id=found.user_id,
            output_text_type_fk=found.output_text_type_fk,
            webhook_url=(found.spec or {}).get("pos_webhook_url"),
            key=state_key(found.location, found.lane, found.session_id) if has_row else "",
            conversation=None,
            turn=found.turn if has_row else 0,
            menu=None,
            turn_input=None,
            routed=found.home_chat_pk is not None,  # only the home chat's routing puts an order in its session
        )
        if found.event_name == ORDER_EVENT:
            data = found.data or {}
            context.event = data.get("event")
            context.turn_input = TurnInput(event=context.event, item=data.get("item"))
        else:
            context.utterance = found.text
            context.turn_input = TurnInput(text=found.text)
        if found.status == "deleted":
            context.setup_error, context.setup_final = EXECUTION_DELETED, True
        elif not has_row:
            context.setup_error = "This execution has no order conversation (was it created as an order task?)."
            context.setup_final = True
        elif found.state == "Idle":
            context.setup_error, context.setup_final = "This order is finished: start a new one.", True
        else:
            try:
                context.menu = self._menus.resolve(db, found.menu_ref)
                context.conversation = self._conversation(db, context)
            except MenuNotFound as exc:
                context.setup_error = f"The menu of this order is not available: {exc}"
            except Exception:
                # Raising here would leave the message failed with no error event: fail it
                # visibly (retryable) like any other turn.
                log.exception("order turn set-up failed session=%s message_pk=%s", job.session_id, job.message_pk)
                context.setup_error = "The assistant failed to answer because of an internal error. Please retry."
        context.started_now = found.start_date is None and found.status != "deleted"
        return context

    def _conversation(self, db: DbSession, context: OrderTurnContext) -> Conversation:
        """The latest turn's conversation: this process's own copy, else the live store's, else the
        durable record. A copy is only used when it is this execution's (a home chat's orders share
        its session, so their key) and its turn counter is the database's."""
        recent = self._recent.get(context.user_task_execution_pk)
        if recent is not None and recent[0] == context.turn:
            return recent[1]  # never mutated: converse returns a new conversation
        live = self.store.load(context.key)
        if live is not None:
            try:
                data = json.loads(live)
                if data.get("execution") == context.user_task_execution_pk and data.get("turn") == context.turn:
                    return Conversation.from_json(data["conversation"])
            except (ValueError, KeyError, TypeError, AttributeError):
                log.warning("unreadable live state under %s: using the database", context.key)
        stored = db.scalar(
            select(OrderSession.conversation).where(
                OrderSession.user_task_execution_fk == context.user_task_execution_pk
            )
        )
        return Conversation.from_json(stored)

    def _after_commit(self, context: OrderTurnContext, outcome: TurnOutcome) -> None:
        conversation = outcome.conversation
        if outcome.state_after == "Idle":
            self._recent.pop(context.user_task_execution_pk, None)
            self.store.drop(context.key)
        else:
            if len(self._recent) >= RECENT_CONVERSATIONS:
                self._recent.clear()
            self._recent[context.user_task_execution_pk] = (context.turn + 1, conversation)
            if self.store.name != "database":  # that store keeps nothing: don't serialise for it
                self.store.save(context.key, live_state(context.user_task_execution_pk, context.turn + 1, conversation))
