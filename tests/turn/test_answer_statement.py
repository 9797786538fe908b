"""Postgres: a plain answer stored by one statement (``answer_statement``), what it refuses, and
the transaction it falls back to. SQLite keeps the transaction (the other tests of tests/turn)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import event, select, text, update

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, SessionEvent, SessionRunner, UserTaskExecution
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.session_claims import Superseded, claim_session, holding
from mojodex_core.execution.turn_completion import TurnFailed
from tests.turn._harness import QUESTION, Step, Turns, tool_call


@pytest.fixture(autouse=True)
def _postgres_only(is_postgres: bool) -> None:
    if not is_postgres:
        pytest.skip("the one-statement answer is Postgres' (SQLite keeps its transaction)")


@contextmanager
def statements(engine) -> Iterator[list[tuple[str, object]]]:  # noqa: ANN001
    """(statement, the connection's transaction status after it) of every statement run."""
    seen: list[tuple[str, object]] = []

    def after(conn, _cursor, statement, *_args) -> None:  # noqa: ANN001, ANN002
        seen.append((" ".join(statement.split()), conn.connection.dbapi_connection.info.transaction_status))

    event.listen(engine, "after_cursor_execute", after)
    try:
        yield seen
    finally:
        event.remove(engine, "after_cursor_execute", after)


def ready(turns: Turns, reply: str = QUESTION, task: str = "turn_prompt_email"):  # noqa: ANN201
    """A started execution's turn, generated and not yet completed: (context, outcome)."""
    user = turns.user()
    pk, session_id = turns.execution(user, task)
    turns.llm.script(QUESTION)
    turns.run(session_id, turns.message(session_id, pk, "first"))  # started, language set
    message_pk = turns.message(session_id, pk, "hello")
    context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk))
    turns.llm.script(reply)
    return context, turns.turn._generate(context, threading.Event())


def answers(turns: Turns, session_id: str) -> list[Message]:
    return [m for m in turns.messages(session_id) if m.sender == "assistant"]


def test_a_plain_answer_is_stored_by_one_statement_in_autocommit(turns, engine):
    import psycopg

    context, outcome = ready(turns)
    with statements(engine) as seen:
        turns.turn._complete(context, outcome)
    assert len(seen) == 1 and seen[0][0].startswith("WITH"), seen  # was BEGIN, 6 statements, COMMIT
    assert seen[0][1] == psycopg.pq.TransactionStatus.IDLE  # committed on its own
    answer = answers(turns, context.session_id)[-1]
    user_message = turns.row(Message, context.message_pk)
    assert (user_message.status, user_message.answer_message_fk) == ("answered", answer.message_pk)
    assert (answer.text, answer.text_with_tags, answer.event_name, answer.status, answer.data) == (
        "Who is it for?", QUESTION, "mojo_message", "final", {})
    sent = turns.sent.named("mojo_message")[-1]
    assert sent == {"text": "Who is it for?", "message_pk": answer.message_pk, "session_id": context.session_id,
                    "user_task_execution_pk": context.user_task_execution_pk,
                    "user_message_pk": context.message_pk, "seq": answer.seq}
    with turns.factory() as db:  # the stored event is the one sent
        stored = db.scalar(select(SessionEvent.payload).where(SessionEvent.session_id == context.session_id,
                                                              SessionEvent.seq == answer.seq))
    assert stored == sent
    assert turns.trace(context.user_task_execution_pk)[-1] == (2, "[DIRECT] WHY-Q", "INSTRUCT_TASK")
    assert context.trace == []


def test_a_tool_follow_up_s_entries_go_in_with_the_answer(turns, engine):
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    message_pk = turns.message(session_id, pk, "echo it")
    turns.llm.script(tool_call("turn_echo", "hi", why="WHY-TOOL"), QUESTION)
    turns.run(session_id, message_pk)  # the first turn sets the language: a transaction
    second = turns.message(session_id, pk, "again")
    turns.llm.script(tool_call("turn_echo", "ho", why="WHY-AGAIN"), QUESTION)
    with statements(engine) as seen:
        turns.run(session_id, second)
    stored = [s for s, _ in seen if "INSERT INTO reasoning_trace_entry" in s]
    assert len(stored) == 1 and stored[0].startswith("WITH"), stored
    assert [p for p, _, _ in turns.trace(pk)] == [1, 2, 3, 4]
    assert turns.trace(pk)[2:] == [(3, "[TOOL_CALL] turn_echo: WHY-AGAIN", "INSTRUCT_TASK"),
                                   (4, "[DIRECT] WHY-Q", "TOOL_FOLLOW_UP")]
    assert turns.row(Message, second).status == "answered"


def test_a_unique_violation_rolls_it_back_and_the_transaction_stores_the_answer(turns, caplog):
    context, outcome = ready(turns)
    sent_before = len(turns.sent.named("mojo_message"))
    with transaction(turns.factory) as db:  # the pk the statement will take from the sequence
        taken = db.execute(text("SELECT last_value + 1 FROM message_message_pk_seq")).scalar()
        db.add(Message(message_pk=taken, session_id=context.session_id, sender="assistant",
                       event_name="mojo_message", text="in the way", status="final", data={}))
    with caplog.at_level(logging.WARNING, logger="mojodex.turn"):
        turns.turn._complete(context, outcome)
    assert "storing it in a transaction" in caplog.text
    answer = answers(turns, context.session_id)[-1]
    assert answer.message_pk > taken and answer.text == "Who is it for?"
    assert turns.row(Message, context.message_pk).answer_message_fk == answer.message_pk
    (sent,) = turns.sent.named("mojo_message")[sent_before:]
    assert sent["message_pk"] == answer.message_pk and sent["seq"] == answer.seq
    with turns.factory() as db:  # the rolled-back statement left no event; the transaction's is the one sent
        stored = db.execute(select(SessionEvent.seq, SessionEvent.payload)
                            .where(SessionEvent.session_id == context.session_id,
                                   SessionEvent.event_name == "mojo_message")).all()
    assert [p["message_pk"] for _, p in stored if p["user_message_pk"] == context.message_pk] == [answer.message_pk]
    assert len({seq for seq, _ in stored}) == len(stored)


def test_an_execution_deleted_before_it_fails_the_turn_and_stores_nothing(turns, engine):
    context, outcome = ready(turns)
    with transaction(turns.factory) as db:
        db.execute(update(UserTaskExecution)
                   .where(UserTaskExecution.user_task_execution_pk == context.user_task_execution_pk)
                   .values(status="deleted"))
    count = len(answers(turns, context.session_id))
    with statements(engine) as seen, pytest.raises(TurnFailed, match="deleted"):
        turns.turn._complete(context, outcome)
    assert [s[:4] for s, _ in seen] == ["WITH"]  # told by the one statement
    assert len(answers(turns, context.session_id)) == count
    assert turns.row(Message, context.message_pk).status == "processing"  # the caller marks it failed
    assert len(context.trace) == 1  # not written: the caller writes it on its own


def test_a_message_answered_elsewhere_is_superseded(turns, engine):
    context, outcome = ready(turns)
    with transaction(turns.factory) as db:
        db.execute(update(Message).where(Message.message_pk == context.message_pk).values(status="answered"))
    count = len(answers(turns, context.session_id))
    with statements(engine) as seen, pytest.raises(Superseded, match="is answered"):
        turns.turn._complete(context, outcome)
    assert [s[:4] for s, _ in seen] == ["WITH"]
    assert len(answers(turns, context.session_id)) == count


def test_a_trace_longer_than_one_statement_s_keeps_the_transaction(turns, engine):
    from mojodex_core.execution.answer_statement import MAX_TRACE_ENTRIES

    context, outcome = ready(turns)
    context.trace.extend((f"[DIRECT] step {n}", "INSTRUCT_TASK") for n in range(MAX_TRACE_ENTRIES))
    with statements(engine) as seen:
        turns.turn._complete(context, outcome)
    assert len(seen) > 1 and not any(s.startswith("WITH") for s, _ in seen), seen
    assert turns.row(Message, context.message_pk).status == "answered"
    assert len(turns.trace(context.user_task_execution_pk)) == 2 + MAX_TRACE_ENTRIES


def test_under_a_lease_the_fence_is_checked_in_the_statement(turns, engine):
    context, outcome = ready(turns)
    old = claim_session(turns.factory, context.session_id, "w1", lease_s=30)
    claim_session(turns.factory, context.session_id, "w2", lease_s=0)  # taken over
    count = len(answers(turns, context.session_id))
    with holding(old), pytest.raises(Superseded, match="superseded"):
        turns.turn._complete(context, outcome)
    assert len(answers(turns, context.session_id)) == count
    assert turns.row(Message, context.message_pk).status == "processing"

    current = claim_session(turns.factory, context.session_id, "w3", lease_s=0)
    with holding(current), statements(engine) as seen:
        turns.turn._complete(context, outcome)
    assert len(seen) == 1 and "session_runner" in seen[0][0], seen


def test_under_a_lease_its_row_is_locked_before_the_execution_s(turns, engine):
    # As check_fence does in the transaction: the other order could deadlock with a transaction
    # holding the lease row and waiting for the execution's.
    context, outcome = ready(turns)
    claim = claim_session(turns.factory, context.session_id, "w1", lease_s=30)
    done: list[bool] = []

    def complete() -> None:
        with holding(claim):
            turns.turn._complete(context, outcome)
        done.append(True)

    with engine.connect() as holder:  # another transaction holds the lease row
        holder.execute(select(SessionRunner).where(SessionRunner.session_id == context.session_id).with_for_update())
        completing = threading.Thread(target=complete)
        completing.start()
        completing.join(0.5)
        assert completing.is_alive()  # waiting for the lease row...
        with engine.connect() as probe:  # ...without holding the execution's
            probe.execute(text("SELECT 1 FROM user_task_execution WHERE user_task_execution_pk = :pk"
                               " FOR UPDATE NOWAIT"), {"pk": context.user_task_execution_pk})
            probe.rollback()
        holder.commit()
    completing.join(10)
    assert done == [True] and turns.row(Message, context.message_pk).status == "answered"
    assert turns.row(Message, context.message_pk).status == "answered"


def test_an_answer_in_a_new_language_keeps_the_transaction(turns, engine):
    context, outcome = ready(turns, QUESTION.replace(">en<", ">de<"))
    with statements(engine) as seen:
        turns.turn._complete(context, outcome)
    assert len(seen) > 1 and any(s.startswith("UPDATE md_session") for s, _ in seen), seen
    assert turns.row(Message, context.message_pk).status == "answered"


def test_a_whole_turn_runs_with_it(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    turns.llm.script(QUESTION)
    turns.run(session_id, turns.message(session_id, pk, "first"))
    second = turns.message(session_id, pk, "second")
    turns.llm.script(Step(QUESTION))
    turns.run(session_id, second)
    assert turns.row(Message, second).status == "answered"
    assert [m.text for m in answers(turns, session_id)] == ["Who is it for?", "Who is it for?"]
