"""Postgres: the row lock a turn's completion takes on its execution.

It serialises the completion with every other writer of the execution's row (a deletion, an
edit's version, another completion), and with nothing else: a row that merely names the
execution (an ``llm_call`` from the spool, a message) takes a key-share lock for its foreign
key, which ``FOR NO KEY UPDATE`` lets through and ``FOR UPDATE`` made wait. In the bench the
two waited for each other: a spool batch behind a draft's completion for up to 0.6 s, holding
up, meanwhile, the completions of the turns its earlier rows named."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError

from mojodex_core.db.models import Message, UserTaskExecution
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.turn_completion import TurnFailed
from tests.support.row_locks import (
    ROW_NAMING_THE_EXECUTION,
    backend_pid,
    row_naming_the_execution,
    waiting_for_a_lock,
)
from tests.turn._harness import DRAFT, QUESTION, Turns


@pytest.fixture(autouse=True)
def _postgres_only(is_postgres: bool) -> None:
    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database")


def ready(turns: Turns, reply: str):  # noqa: ANN201
    """A started execution's turn, generated and not yet completed: (context, outcome)."""
    user = turns.user()
    pk, session_id = turns.execution(user)
    turns.llm.script(QUESTION)
    turns.run(session_id, turns.message(session_id, pk, "first"))
    message_pk = turns.message(session_id, pk, "hello")
    context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk))
    turns.llm.script(reply)
    return context, turns.turn._generate(context, threading.Event())


def completing(turns: Turns, context, outcome) -> tuple[threading.Thread, list[object]]:  # noqa: ANN001
    done: list[object] = []

    def complete() -> None:
        try:
            turns.turn._complete(context, outcome)
            done.append("stored")
        except Exception as exc:  # noqa: BLE001 - reported to the test
            done.append(exc)

    thread = threading.Thread(target=complete, daemon=True)
    thread.start()
    return thread, done


@pytest.mark.parametrize("reply", [QUESTION, DRAFT], ids=["answer", "draft"])
def test_a_row_naming_the_execution_does_not_hold_its_completion(turns, engine, reply):
    # was: FOR UPDATE of the execution, which waits for the foreign key's lock of every
    # uncommitted row that names it: the completion stayed blocked until that row's commit
    context, outcome = ready(turns, reply)
    with row_naming_the_execution(engine, context.user_task_execution_pk):
        thread, done = completing(turns, context, outcome)
        thread.join(15)
        stored_meanwhile = list(done)
    thread.join(15)  # a completion that waited ends once the row is rolled back
    assert stored_meanwhile == ["stored"], f"the completion waited for a row that only names its execution: {done}"
    assert turns.row(Message, context.message_pk).status == "answered"


def test_a_completion_does_not_hold_a_row_naming_its_execution(turns, engine):
    # The other way round: a draft's completion in progress (its transaction holding the lock)
    # lets the spool's rows for the same execution through. (A plain answer is one statement in
    # autocommit: its lock ends with it.)
    context, outcome = ready(turns, DRAFT)
    inserted: list[str] = []
    pk = context.user_task_execution_pk

    def spool_meanwhile(_conn, _cursor, statement, *_rest) -> None:  # noqa: ANN001
        if "user_task_execution" not in statement or "UPDATE" not in statement.upper():
            return
        if inserted:
            return
        with engine.connect() as other:
            other.execute(text("SET lock_timeout = '2s'"))
            try:
                other.execute(ROW_NAMING_THE_EXECUTION, {"pk": pk})
                inserted.append("free")
            except OperationalError as exc:
                if getattr(exc.orig, "sqlstate", None) != "55P03":  # lock_not_available: the timeout
                    raise
                inserted.append("waited")
            other.rollback()

    event.listen(engine, "after_cursor_execute", spool_meanwhile)
    try:
        turns.turn._complete(context, outcome)
    finally:
        event.remove(engine, "after_cursor_execute", spool_meanwhile)
    assert inserted == ["free"]
    assert turns.row(Message, context.message_pk).status == "answered"


@pytest.mark.parametrize("reply", [QUESTION, DRAFT], ids=["answer", "draft"])
def test_a_deletion_in_progress_still_holds_the_completion(turns, engine, reply):
    # What the lock is for: a deletion that commits first is seen, and the turn stores nothing.
    context, outcome = ready(turns, reply)
    deleting = "UPDATE user_task_execution SET status = 'deleted' WHERE user_task_execution_pk = :pk"
    with engine.connect() as other:
        other.execute(text(deleting), {"pk": context.user_task_execution_pk})
        thread, done = completing(turns, context, outcome)
        try:
            assert waiting_for_a_lock(engine, backend_pid(other)), f"the completion did not wait: {done}"
            assert done == []
        finally:
            other.commit()
    thread.join(10)
    assert len(done) == 1 and isinstance(done[0], TurnFailed) and "deleted" in str(done[0])
    assert turns.row(Message, context.message_pk).status == "processing"  # the caller marks it failed
    assert turns.row(UserTaskExecution, context.user_task_execution_pk).status == "deleted"


@pytest.mark.parametrize(("reply", "why"), [(QUESTION, "[DIRECT] WHY-Q"), (DRAFT, "[DIRECT] WHY-D")],
                         ids=["answer", "draft"])
def test_a_trace_written_on_its_own_meanwhile_and_a_completion_take_distinct_positions(turns, engine, reply, why):
    # A turn that stored no answer (a worker's, superseded after a lease takeover) writes its trace
    # in a transaction of its own while the session's next turn completes. The two serialise on the
    # execution's row lock, so the second reads the first's positions. (Before, the trace writer
    # took no lock and the completion's lock did not wait for its row: both took the same position,
    # and the unique index refused the draft's completion. An answer's one statement, refused by
    # the index too, falls back to the transaction.)
    context, outcome = ready(turns, reply)
    dropped = dataclasses.replace(context, trace=[("[DIRECT] WHY-DROPPED", "INSTRUCT_TASK")])
    inserted, release = threading.Event(), threading.Event()
    writer = threading.Thread(target=turns.turn._write_trace, args=(dropped,), daemon=True)
    writer_pid: list[int] = []

    def pause_the_writer(conn, _cursor, statement, *_rest) -> None:  # noqa: ANN001
        if threading.current_thread() is writer and statement.startswith("INSERT INTO reasoning_trace_entry"):
            writer_pid.append(backend_pid(conn))
            inserted.set()
            release.wait(30)  # its transaction open, its row written

    event.listen(engine, "after_cursor_execute", pause_the_writer)
    try:
        writer.start()
        assert inserted.wait(15)
        thread, done = completing(turns, context, outcome)
        assert waiting_for_a_lock(engine, writer_pid[0]), f"the completion did not meet the writer's lock: {done}"
    finally:
        release.set()
        writer.join(15)
        event.remove(engine, "after_cursor_execute", pause_the_writer)
    thread.join(15)
    assert done == ["stored"], done
    assert turns.row(Message, context.message_pk).status == "answered"
    trace = turns.trace(context.user_task_execution_pk)
    positions = [position for position, _text, _source in trace]
    assert len(positions) == len(set(positions))
    assert [text for _p, text, _s in trace][-2:] == ["[DIRECT] WHY-DROPPED", why]
