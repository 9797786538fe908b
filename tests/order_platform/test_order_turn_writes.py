"""How a deterministic order turn writes: the engine runs outside the write transaction, the
message is claimed by that transaction, and a message answered meanwhile is never answered twice."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event, select, text, update

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, OrderSession, SessionEvent
from mojodex_core.execution.intake import accept_user_message
from mojodex_core.execution.jobs import TurnJob
from tests.order_platform._helpers import audit_count, customer, message_count, open_order
from tests.support.row_locks import row_naming_the_execution


def _accept(live, chat, text_: str) -> int:  # noqa: ANN001
    """A message stored as the route stores it, but not handed to the runner (the test runs it)."""
    platform = live.platform
    return accept_user_message(platform.session_factory, platform.events, session_id=chat.session_id,
                               user_task_execution_pk=chat.pk, text=text_, message_id=f"m-{text_}").message_pk


def _turn_of(live, chat):  # noqa: ANN001, ANN202
    with live.db() as db:
        return db.scalar(select(OrderSession.turn).where(OrderSession.user_task_execution_fk == chat.pk))


def _events(live, chat) -> int:  # noqa: ANN001
    with live.db() as db:
        return len(db.scalars(select(SessionEvent.seq).where(SessionEvent.session_id == chat.session_id)).all())


def test_a_message_answered_elsewhere_while_the_engine_ran_is_not_answered_twice(orders, monkeypatch):
    chat = open_order(customer(orders))
    try:
        chat.say("an everything bagel")
        handler = orders.platform.dispatcher.handler("order")
        message_pk = _accept(orders, chat, "a large iced latte")
        before = (message_count(orders, chat.session_id), audit_count(orders, chat.pk), _turn_of(orders, chat),
                  _events(orders, chat))
        converse = handler._converse

        def answered_meanwhile(context, cancel):  # noqa: ANN001, ANN202
            outcome = converse(context, cancel)
            with orders.db() as db:  # another process answers the same message first
                db.execute(update(Message).where(Message.message_pk == message_pk).values(status="answered"))
            return outcome

        monkeypatch.setattr(handler, "_converse", answered_meanwhile)
        handler(TurnJob(session_id=chat.session_id, message_pk=message_pk), threading.Event())
        after = (message_count(orders, chat.session_id), audit_count(orders, chat.pk), _turn_of(orders, chat),
                 _events(orders, chat))
        assert after == before  # no answer, no audit row, no turn, no event: the transaction rolled back
        assert chat.socket.named("error") == []
    finally:
        chat.close()


def test_a_job_replayed_for_an_answered_message_changes_nothing(orders):
    chat = open_order(customer(orders))
    try:
        chat.say("an everything bagel")
        with orders.db() as db:
            message_pk = db.scalar(select(Message.message_pk).where(
                Message.session_id == chat.session_id, Message.sender == "user").order_by(Message.message_pk.desc()))
        before = (message_count(orders, chat.session_id), audit_count(orders, chat.pk), _turn_of(orders, chat))
        orders.platform.dispatcher.handler("order")(TurnJob(session_id=chat.session_id, message_pk=message_pk),
                                                    threading.Event())
        assert (message_count(orders, chat.session_id), audit_count(orders, chat.pk), _turn_of(orders, chat)) == before
    finally:
        chat.close()


def test_the_engine_runs_outside_the_write_transaction(orders, monkeypatch):
    # Before, the turn claimed its message first, so on SQLite it held the database's write lock
    # while the engine ran: another writer waited for the whole turn.
    chat = open_order(customer(orders))
    try:
        handler = orders.platform.dispatcher.handler("order")
        message_pk = _accept(orders, chat, "an everything bagel")
        converse = handler._converse
        wrote: list[bool] = []

        def write_elsewhere() -> None:
            with transaction(orders.platform.session_factory) as db:
                db.execute(text("UPDATE message SET error = NULL WHERE message_pk = :pk"), {"pk": -1})
            wrote.append(True)

        def with_a_writer(context, cancel):  # noqa: ANN001, ANN202
            other = threading.Thread(target=write_elsewhere, daemon=True)
            other.start()
            other.join(3)
            return converse(context, cancel)

        monkeypatch.setattr(handler, "_converse", with_a_writer)
        handler(TurnJob(session_id=chat.session_id, message_pk=message_pk), threading.Event())
        assert wrote == [True], "another writer waited on this turn's engine"
        with orders.db() as db:
            assert db.scalar(select(Message.status).where(Message.message_pk == message_pk)) == "answered"
    finally:
        chat.close()


def test_the_answer_row_is_inserted_with_its_event_seq(orders):
    # Its seq is taken before the INSERT (as intake and instruct turns do): no UPDATE of the row after.
    chat = open_order(customer(orders))
    engine = orders.platform.engine
    sent: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        sent.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        chat.say("an everything bagel")
    finally:
        event.remove(engine, "before_cursor_execute", record)
        chat.close()
    assert not [s for s in sent if s.startswith("UPDATE message SET seq")]
    with orders.db() as db:
        answers = db.execute(select(Message.message_pk, Message.seq).where(
            Message.session_id == chat.session_id, Message.sender == "assistant")).all()
        replies = {e.payload["message_pk"]: e.seq for e in db.scalars(select(SessionEvent).where(
            SessionEvent.session_id == chat.session_id, SessionEvent.event_name == "mojo_message"))}
    assert answers and all(replies[pk] == seq for pk, seq in answers)


def test_a_row_naming_the_execution_does_not_hold_a_turn_or_the_start(orders, is_postgres):
    # was: the start and each turn's record locked the execution FOR UPDATE, which waits for the
    # foreign key's lock of every uncommitted row naming it (an llm_call of the spool, a message)
    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database")
    chat = open_order(customer(orders), start=False)
    try:
        with row_naming_the_execution(orders.platform.engine, chat.pk):
            started: list[int] = []
            starting = threading.Thread(target=lambda: started.append(chat.client.call(
                "POST", "/user_task_execution_run", json={"user_task_execution_pk": chat.pk}).status_code), daemon=True)
            starting.start()
            starting.join(15)
            assert started == [200], f"the start waited for a row that only names its execution: {started}"
            chat.socket.wait_event("order_state")
            assert chat.say("an everything bagel")  # answered meanwhile (waits up to 15 s)
    finally:
        chat.close()


def test_an_execution_deleted_while_the_engine_ran_fails_the_turn_with_no_retry_offered(orders, monkeypatch):
    # was: retryable: true, though a retry can only meet a 404
    from mojodex_core.db.models import UserTaskExecution

    chat = open_order(customer(orders))
    try:
        handler = orders.platform.dispatcher.handler("order")
        message_pk = _accept(orders, chat, "a plain bagel")
        converse = handler._converse

        def deleted_meanwhile(context, cancel):  # noqa: ANN001, ANN202
            outcome = converse(context, cancel)
            with orders.db() as db:  # DELETE /user_task_execution lands before the turn is stored
                db.get(UserTaskExecution, chat.pk).status = "deleted"
            return outcome

        monkeypatch.setattr(handler, "_converse", deleted_meanwhile)
        handler(TurnJob(session_id=chat.session_id, message_pk=message_pk), threading.Event())
        error = chat.error_of(message_pk)
    finally:
        chat.close()
    assert error["error"] == "The task execution was deleted." and error["retryable"] is False


def test_a_turn_cancelled_by_the_order_s_deletion_fails_with_no_retry_offered(orders, monkeypatch):
    # was: "The turn was cancelled." with retryable: true, though a retry can only meet a 404
    from mojodex_core.db.models import UserTaskExecution

    chat = open_order(customer(orders))
    try:
        handler = orders.platform.dispatcher.handler("order")
        message_pk = _accept(orders, chat, "an onion bagel")
        converse = handler._converse
        cancel = threading.Event()

        def deleted_and_cancelled(context, cancel_):  # noqa: ANN001, ANN202
            with orders.db() as db:  # DELETE /user_task_execution: the row deleted, then the runner's cancel
                db.get(UserTaskExecution, chat.pk).status = "deleted"
            cancel.set()
            return converse(context, cancel_)

        monkeypatch.setattr(handler, "_converse", deleted_and_cancelled)
        handler(TurnJob(session_id=chat.session_id, message_pk=message_pk), cancel)
        error = chat.error_of(message_pk)
    finally:
        chat.close()
    assert error["error"] == "The task execution was deleted." and error["retryable"] is False


def test_any_failure_of_a_turn_whose_order_was_deleted_offers_no_retry(orders, monkeypatch):
    # was: only a cancelled turn was told apart; one failing otherwise meanwhile said retryable: true
    from mojodex_core.db.models import UserTaskExecution

    chat = open_order(customer(orders))
    try:
        handler = orders.platform.dispatcher.handler("order")
        message_pk = _accept(orders, chat, "a poppy seed bagel")

        def deleted_then_broken(context, cancel):  # noqa: ANN001, ANN202
            with orders.db() as db:
                db.get(UserTaskExecution, chat.pk).status = "deleted"
            raise RuntimeError("the engine failed")

        monkeypatch.setattr(handler, "_converse", deleted_then_broken)
        handler(TurnJob(session_id=chat.session_id, message_pk=message_pk), threading.Event())
        error = chat.error_of(message_pk)
    finally:
        chat.close()
    assert error["error"] == "The task execution was deleted." and error["retryable"] is False
