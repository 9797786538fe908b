"""accept_user_message inserts the message row with its seq: the seq stored on the row is the seq
of its user_message_reception event (stored and sent), a repeat allocates nothing, and a retried
failed message keeps its seq. Run on the in-process log here; tests/distributed/test_intake_seq.py
runs the same checks on the Redis log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.models import Message, SessionEvent, UserTaskExecution
from mojodex_core.execution.events import EventPublisher, SessionEventLog
from mojodex_core.execution.intake import MessageIdTaken, accept_user_message
from tests.unit._rows import execution_pk


class Sent:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, session_id: str, name: str, payload: dict[str, Any]) -> None:
        self.events.append((session_id, name, payload))


@pytest.fixture(scope="module")
def factory(database_url: str) -> Iterator[sessionmaker[DbSession]]:
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


def check_message_seq_is_its_event_seq(factory: sessionmaker[DbSession], events: EventPublisher, sent: Sent) -> None:
    with transaction(factory) as db:
        pk = execution_pk(db)
        session_id = db.get(UserTaskExecution, pk).session_id

    def accept(message_id: str):  # noqa: ANN202
        return accept_user_message(factory, events, session_id=session_id, user_task_execution_pk=pk,
                                   text=f"text {message_id}", message_id=message_id)

    first = accept("m1")
    events.publish(session_id, "mojo_token", {"delta": "x"}, durable=False)  # a seq taken between
    second = accept("m2")
    again = accept("m1")  # idempotent: same message, nothing allocated or sent
    assert (again.message_pk, again.run) == (first.message_pk, False)
    with transaction(factory) as db:
        db.execute(update(Message).where(Message.message_pk == second.message_pk).values(status="failed"))
    retried = accept("m2")
    assert (retried.message_pk, retried.status, retried.run) == (second.message_pk, "pending", True)

    with factory() as db:
        rows = {m.message_pk: m.seq for m in db.scalars(select(Message).where(Message.session_id == session_id))}
        stored = {e.payload["message_pk"]: (e.seq, e.payload["seq"]) for e in db.scalars(
            select(SessionEvent).where(SessionEvent.session_id == session_id,
                                       SessionEvent.event_name == "user_message_reception"))}
    live = {p["message_pk"]: p["seq"] for s, n, p in sent.events
            if s == session_id and n == "user_message_reception"}
    assert set(rows) == set(stored) == set(live) == {first.message_pk, second.message_pk}
    for message_pk, seq in rows.items():
        assert seq is not None
        assert stored[message_pk] == (seq, seq)
        assert live[message_pk] == seq
    assert rows[second.message_pk] == rows[first.message_pk] + 2  # the token's seq between them
    assert len([e for e in sent.events if e[0] == session_id and e[1] == "user_message_reception"]) == 2

    # A caller that saw no such id (the route's check) inserts without looking; one that raced in
    # meanwhile fails the INSERT on the unique (session, message_id), and the retry answers it.
    raced = accept_user_message(factory, events, session_id=session_id, user_task_execution_pk=pk,
                                text="again", message_id="m1", seen_absent=True)
    assert (raced.message_pk, raced.status, raced.run) == (first.message_pk, "pending", False)
    with pytest.raises(MessageIdTaken):
        accept_user_message(factory, events, session_id=session_id, user_task_execution_pk=pk, text="edit",
                            message_id="m1", event_name="text_edit", seen_absent=True)
    third = accept_user_message(factory, events, session_id=session_id, user_task_execution_pk=pk,
                                text="third", message_id="m3", seen_absent=True)
    with factory() as db:
        assert db.scalar(select(func.count()).select_from(Message).where(Message.session_id == session_id)) == 3
        (event_seq,) = db.execute(select(SessionEvent.seq).where(
            SessionEvent.session_id == session_id, SessionEvent.event_name == "user_message_reception",
            SessionEvent.seq > max(rows.values()))).one()
        assert db.get(Message, third.message_pk).seq == event_seq
    assert [p["message_pk"] for s, n, p in sent.events if s == session_id and n == "user_message_reception"] == [
        first.message_pk, second.message_pk, third.message_pk]


def test_message_seq_is_its_event_seq_in_process(factory):
    sent = Sent()
    check_message_seq_is_its_event_seq(factory, SessionEventLog(factory, sent), sent)


def test_add_refuses_a_seq_that_is_not_the_last_allocated(factory):
    with transaction(factory) as db:
        session_id = db.get(UserTaskExecution, execution_pk(db)).session_id
    log = SessionEventLog(factory)
    with pytest.raises(ValueError, match="out of order"):
        with log.publishing(session_id) as publication, transaction(factory) as db:
            seq = publication.next_seq()
            publication.next_seq()
            publication.add(db, "user_message_reception", {"message_pk": 0}, seq=seq)
    assert log.publish(session_id, "mojo_message", {"text": "after"}) == 1  # nothing was kept


def test_on_postgres_a_new_message_and_its_event_are_one_statement(factory, is_postgres):
    if not is_postgres:
        pytest.skip("SQLite has no data-modifying CTE: it keeps its transaction (no network there)")
    import psycopg
    from sqlalchemy import event

    with transaction(factory) as db:
        pk = execution_pk(db)
        session_id = db.get(UserTaskExecution, pk).session_id
    sent = Sent()
    log = SessionEventLog(factory, sent)
    with log.session_lock(session_id):
        pass  # the log reads where the session's seq stands once, on first use
    engine = factory.kw["bind"]
    statements: list[tuple[str, object]] = []

    def after(conn, _cursor, statement, *_args) -> None:  # noqa: ANN001, ANN002
        statements.append((statement, conn.connection.dbapi_connection.info.transaction_status))

    event.listen(engine, "after_cursor_execute", after)
    try:
        accepted = accept_user_message(factory, log, session_id=session_id, user_task_execution_pk=pk,
                                       text="fused", message_id="fused-1", event_name="user_message",
                                       data={"origin": "test"}, seen_absent=True)
    finally:
        event.remove(engine, "after_cursor_execute", after)
    assert len(statements) == 1 and statements[0][1] == psycopg.pq.TransactionStatus.IDLE, statements
    with factory() as db:
        row = db.get(Message, accepted.message_pk)
        (stored,) = db.scalars(select(SessionEvent).where(SessionEvent.session_id == session_id,
                                                          SessionEvent.seq == row.seq))
    assert (row.text, row.status, row.sender, row.data) == ("fused", "pending", "user", {"origin": "test"})
    ((_sid, name, payload),) = [e for e in sent.events if e[0] == session_id]
    assert name == stored.event_name == "user_message_reception"
    assert payload == stored.payload == {
        "message_pk": accepted.message_pk, "message_id": "fused-1", "text": "fused", "event_name": "user_message",
        "data": {"origin": "test"}, "session_id": session_id, "user_task_execution_pk": pk, "seq": row.seq,
    }


def test_a_message_whose_event_cannot_be_stored_is_not_stored_either(factory):
    # The event's seq already taken (by a writer this log does not know of): the message row must
    # not stay without its reception event, whatever the statement(s) storing both.
    with transaction(factory) as db:
        pk = execution_pk(db)
        session_id = db.get(UserTaskExecution, pk).session_id
    log = SessionEventLog(factory, Sent())
    log.publish(session_id, "mojo_message", {"text": "first"})  # the log's stream now starts at seq 1
    with transaction(factory) as db:
        db.add(SessionEvent(session_id=session_id, seq=2, event_name="foreign", payload={}))
    with pytest.raises(RuntimeError, match="could not store"):
        accept_user_message(factory, log, session_id=session_id, user_task_execution_pk=pk, text="lost?",
                            message_id="half-1", seen_absent=True)
    with factory() as db:
        assert db.scalars(select(Message).where(Message.session_id == session_id,
                                                Message.message_id == "half-1")).all() == []
