"""What an instruct turn stores and sends: the claim (never answered twice), a deletion during
the stream, Core writes without ORM objects on question and approval turns, tool follow-ups,
the retry of a failed message, and events sent only once their rows are committed."""

from __future__ import annotations

import threading
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy
from sqlalchemy import event, select, update

import mojodex_core.execution.turn as turn_module
from mojodex_core.db import transaction
from mojodex_core.db.models import (
    Message,
    ProducedText,
    Session,
    TaskToolExecution,
    TaskToolQuery,
    UserTaskExecution,
)
from mojodex_core.execution.intake import accept_user_message
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.tool_loop import TurnOutcome
from mojodex_core.execution.tool_runs import decide
from mojodex_core.llm import LLMError
from mojodex_core.tags import TagStreamParser
from tests.turn._harness import DRAFT, QUESTION, Step, Transactions, Turns, tool_call


def parsed(text: str):  # noqa: ANN201
    parser = TagStreamParser()
    parser.feed(text)
    return parser.finish()[1]


def assistant_rows(turns: Turns, session_id: str) -> list[Message]:
    return [m for m in turns.messages(session_id) if m.sender == "assistant"]


def committed_before_sent(turns: Turns) -> None:
    """Every final event is sent only once the rows it announces are committed."""
    original = turns.sent.__call__

    def check(session_id: str, name: str, payload: dict[str, Any]) -> None:
        if name in ("mojo_message", "draft_message", "error"):
            with turns.factory() as db:
                row = db.get(Message, payload["message_pk"])
                assert row is not None and row.seq == payload["seq"], (name, payload)
                user_message = db.get(Message, payload["user_message_pk"])
                assert user_message.answer_message_fk == payload["message_pk"]
                assert user_message.status == ("failed" if name == "error" else "answered")
        original(session_id, name, payload)

    turns.events.set_transport(check)


def test_a_question_turn(turns, engine):
    committed_before_sent(turns)
    user = turns.user()
    pk, session_id = turns.execution(user, language=None)
    message_pk = turns.message(session_id, pk, "an email")
    turns.llm.script(QUESTION.replace(">en<", ">fr<"))
    turns.run(session_id, message_pk)
    (answer,) = assistant_rows(turns, session_id)
    assert (answer.text, answer.event_name, answer.status, answer.data) == ("Who is it for?", "mojo_message", "final",
                                                                           {})
    assert answer.text_with_tags == QUESTION.replace(">en<", ">fr<")
    user_message = turns.row(Message, message_pk)
    assert (user_message.status, user_message.answer_message_fk) == ("answered", answer.message_pk)
    assert turns.row(Session, session_id).language == "fr"
    (sent,) = turns.sent.named("mojo_message")
    assert sent == {"text": "Who is it for?", "message_pk": answer.message_pk, "session_id": session_id,
                    "user_task_execution_pk": pk, "user_message_pk": message_pk, "seq": answer.seq}
    assert [n for _s, n, _p in turns.sent.events if n != "mojo_token"] == ["user_task_execution_start", "mojo_message"]
    # The same language again: the session is left alone (the ORM wrote nothing either).
    turns.llm.script(QUESTION.replace(">en<", ">fr<"))
    with Transactions(engine) as transactions:
        turns.run(session_id, turns.message(session_id, pk, "Anna"))
    assert transactions.with_statement("INSERT INTO message (")
    assert not transactions.with_statement("UPDATE md_session")
    assert turns.row(Session, session_id).language == "fr"


def test_a_draft_turn_completes_the_execution(turns):
    committed_before_sent(turns)
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_pk = turns.message(session_id, pk, "write it")
    turns.llm.script(DRAFT)
    turns.run(session_id, message_pk)
    (answer,) = assistant_rows(turns, session_id)
    (sent,) = turns.sent.named("draft_message")
    assert answer.text == "Sync\n\nThe sync moves." and answer.event_name == "draft_message"
    assert answer.data == {"produced_text_version_pk": sent["produced_text_version_pk"]}
    assert (sent["produced_text"], sent["produced_text_title"], sent["message_pk"]) == ("The sync moves.", "Sync",
                                                                                       answer.message_pk)
    assert sent["produced_text_version_index"] == 1 and sent["text_type"] == "email"
    execution = turns.row(UserTaskExecution, pk)
    assert (execution.status, execution.title) == ("completed", "Sync") and execution.end_date is not None


def test_a_message_answered_by_another_run_while_streaming_is_not_answered_twice(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_pk = turns.message(session_id, pk, "hello")
    other: dict[str, int] = {}

    def answered_elsewhere() -> None:
        with transaction(turns.factory) as db:  # the other run commits its answer first
            answer = Message(session_id=session_id, user_task_execution_fk=pk, sender="assistant",
                             event_name="mojo_message", text="theirs", status="final", data={})
            db.add(answer)
            db.flush()
            db.execute(update(Message).where(Message.message_pk == message_pk)
                       .values(status="answered", answer_message_fk=answer.message_pk))
            other["pk"] = answer.message_pk

    turns.llm.script(Step(QUESTION, during=answered_elsewhere))
    turns.run(session_id, message_pk)
    assert [a.text for a in assistant_rows(turns, session_id)] == ["theirs"]
    user_message = turns.row(Message, message_pk)
    assert (user_message.status, user_message.answer_message_fk) == ("answered", other["pk"])
    assert not turns.sent.named("mojo_message") and not turns.sent.named("error")
    assert [m for m in turns.messages(session_id) if m.sender == "system"] == []


def test_a_message_reset_for_a_retry_while_streaming_stores_nothing(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_pk = turns.message(session_id, pk, "hello")

    def reset() -> None:
        with transaction(turns.factory) as db:
            db.execute(update(Message).where(Message.message_pk == message_pk).values(status="pending"))

    turns.llm.script(Step(QUESTION, during=reset))
    turns.run(session_id, message_pk)
    assert assistant_rows(turns, session_id) == [] and turns.row(Message, message_pk).status == "pending"
    assert not turns.sent.named("mojo_message") and not turns.sent.named("error")


def test_an_execution_deleted_while_streaming_stores_nothing(turns):
    for reply in (QUESTION, DRAFT):
        turns.sent.events.clear()
        user = turns.user()
        pk, session_id = turns.execution(user)
        message_pk = turns.message(session_id, pk, "hello")

        def delete(pk: int = pk) -> None:
            with transaction(turns.factory) as db:
                db.execute(update(UserTaskExecution).where(UserTaskExecution.user_task_execution_pk == pk)
                           .values(status="deleted"))

        turns.llm.script(Step(reply, during=delete))
        turns.run(session_id, message_pk)
        assert assistant_rows(turns, session_id) == []
        assert turns.row(UserTaskExecution, pk).status == "deleted"
        with turns.factory() as db:
            assert db.scalar(select(ProducedText).where(ProducedText.user_task_execution_fk == pk)) is None
        user_message = turns.row(Message, message_pk)
        assert user_message.status == "failed" and "deleted" in user_message.error
        (error,) = turns.sent.named("error")
        assert error["user_message_pk"] == message_pk and "deleted" in error["error"]
        assert not turns.sent.named("mojo_message") and not turns.sent.named("draft_message")


@contextmanager
def orm_objects(turns: Turns) -> Iterator[list[Any]]:
    """ORM objects loaded or made persistent by the sessions of the turn's factory."""
    seen: list[Any] = []

    def made(_session, instance) -> None:  # noqa: ANN001
        seen.append(instance)

    event.listen(turns.factory, "pending_to_persistent", made)
    event.listen(turns.factory, "loaded_as_persistent", made)
    try:
        yield seen
    finally:
        event.remove(turns.factory, "pending_to_persistent", made)
        event.remove(turns.factory, "loaded_as_persistent", made)


def test_question_and_approval_turns_make_no_orm_objects(turns):
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    for text, reply in (("hello", QUESTION), ("echo it", tool_call("turn_guarded", "hi"))):
        message_pk = turns.message(session_id, pk, text)
        with orm_objects(turns) as seen:
            context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk))
        turns.llm.script(reply)
        outcome = turns.turn._generate(context, threading.Event())
        with orm_objects(turns) as completing:
            turns.turn._complete(context, outcome)
        assert seen == [] and completing == [], [type(o).__name__ for o in seen + completing]
    asked = turns.sent.named("mojo_message")[-1]
    assert asked["text"] == "Echoing." and asked["tool_name"] == "turn_guarded"
    tool = turns.row(TaskToolExecution, asked["task_tool_execution_pk"])
    assert (tool.status, tool.requires_approval, tool.message_fk, tool.explanation) == (
        "awaiting_approval", True, message_pk, "Echoing.")
    with turns.factory() as db:
        (query,) = db.scalars(select(TaskToolQuery)
                              .where(TaskToolQuery.task_tool_execution_fk == tool.task_tool_execution_pk))
        assert query.query == {"text": "hi"} and query.result is None
    answer = turns.row(Message, asked["message_pk"])
    assert answer.data == {"task_tool_execution_pk": tool.task_tool_execution_pk, "tool_name": "turn_guarded"}


@contextmanager
def orm_sessions(turns: Turns) -> Iterator[list[str]]:
    """The ORM sessions of the turn's factory that began a transaction (where they began it)."""
    began: list[str] = []

    def after_begin(_session, _transaction, _connection) -> None:  # noqa: ANN001
        began.append(next((f"{f.filename}:{f.lineno}" for f in reversed(traceback.extract_stack())
                           if "mojodex_core" in f.filename), "?"))

    event.listen(turns.factory, "after_begin", after_begin)
    try:
        yield began
    finally:
        event.remove(turns.factory, "after_begin", after_begin)


def test_a_running_execution_s_turns_open_no_orm_session(turns):
    # The turn's reads and writes are Core: an ORM Session costs ~2x a Core connection per
    # statement. Only an execution's first turn opens one (it publishes the execution's start);
    # so do running a tool and resuming after an approval (tool_runs: rarer, and not measured).
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    turns.llm.script(QUESTION)
    turns.run(session_id, turns.message(session_id, pk, "first"))
    paths = {}
    for name, text, reply in (("question", "hello", QUESTION), ("draft", "write it", DRAFT),
                              ("approval", "echo it", tool_call("turn_guarded", "hi"))):
        message_pk = turns.message(session_id, pk, text)
        turns.llm.script(reply)
        with orm_sessions(turns) as paths[name]:
            turns.run(session_id, message_pk)
    assert paths == {"question": [], "draft": [], "approval": []}, paths


def test_an_approved_tool_resumes_the_turn_once(turns):
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    message_pk = turns.message(session_id, pk, "echo it")
    turns.llm.script(tool_call("turn_guarded", "hi", why="WHY-ASK"))
    turns.run(session_id, message_pk)
    asked = turns.sent.named("mojo_message")[-1]
    tool_pk = asked["task_tool_execution_pk"]
    with transaction(turns.factory) as db:
        decide(db, user, tool_pk, True)
    turns.llm.script(QUESTION.replace("WHY-Q", "WHY-AFTER"))
    turns.run(session_id, message_pk, task_tool_execution_pk=tool_pk)
    final = turns.sent.named("mojo_message")[-1]
    assert final["text"] == "Who is it for?" and final["user_message_pk"] == message_pk
    assert "echo" in str(turns.llm.requests[-1]["messages"][-1])
    user_message = turns.row(Message, message_pk)
    assert (user_message.status, user_message.answer_message_fk) == ("answered", final["message_pk"])
    assert turns.row(TaskToolExecution, tool_pk).status == "done"
    calls = len(turns.llm.requests)
    turns.run(session_id, message_pk, task_tool_execution_pk=tool_pk)  # replayed: followed up already
    assert len(turns.llm.requests) == calls and len(assistant_rows(turns, session_id)) == 2
    assert [(p, t) for p, t, _s in turns.trace(pk)] == [(1, "[TOOL_CALL] turn_guarded: WHY-ASK"),
                                                        (2, "[DIRECT] WHY-AFTER")]


def test_a_failed_message_retried_is_answered(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_id = uuid.uuid4().hex
    accepted = accept_user_message(turns.factory, turns.events, session_id=session_id, user_task_execution_pk=pk,
                                   text="hello", message_id=message_id)
    turns.llm.script(Step(LLMError("the LLM is down")))
    turns.run(session_id, accepted.message_pk)
    assert turns.row(Message, accepted.message_pk).status == "failed"
    assert turns.sent.named("error")[-1]["error"] == "the LLM is down"
    again = accept_user_message(turns.factory, turns.events, session_id=session_id, user_task_execution_pk=pk,
                                text="hello", message_id=message_id)
    assert (again.message_pk, again.status, again.run) == (accepted.message_pk, "pending", True)
    turns.llm.script(QUESTION)
    turns.run(session_id, accepted.message_pk)
    user_message = turns.row(Message, accepted.message_pk)
    assert user_message.status == "answered"
    assert turns.row(Message, user_message.answer_message_fk).text == "Who is it for?"


def test_a_deleted_execution_fails_the_turn_visibly_before_any_call(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    with transaction(turns.factory) as db:
        db.get(UserTaskExecution, pk).status = "deleted"
    message_pk = turns.message(session_id, pk, "hello")
    turns.run(session_id, message_pk)
    assert turns.llm.requests == []
    assert turns.row(Message, message_pk).status == "failed"
    assert "deleted" in turns.sent.named("error")[0]["error"]
    assert not turns.sent.named("user_task_execution_start")


def test_a_message_of_a_vanished_execution_is_marked_failed(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_pk = turns.message(session_id, pk, "hello")
    with transaction(turns.factory) as db:
        db.execute(update(Message).where(Message.message_pk == message_pk).values(user_task_execution_fk=None))
    turns.run(session_id, message_pk)
    row = turns.row(Message, message_pk)
    assert (row.status, row.error) == ("failed", "the task execution does not exist")
    assert turns.llm.requests == []


def test_an_empty_outcome_is_not_stored(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_pk = turns.message(session_id, pk, "hello")
    context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk))
    try:
        turns.turn._complete(context, TurnOutcome(parsed("<user_language>en</user_language>")))
    except Exception as exc:  # noqa: BLE001
        assert "empty answer" in str(exc)
    else:
        raise AssertionError("an empty answer was stored")
    assert assistant_rows(turns, session_id) == [] and turns.row(Message, message_pk).status == "processing"


def test_on_postgres_the_set_up_opens_no_transaction(turns, engine, is_postgres):
    # The set-up's reads and its guarded claim each stand alone: a transaction around them would
    # only add BEGIN and COMMIT, two round trips before the LLM request.
    if not is_postgres:
        pytest.skip("SQLite sends no BEGIN over a network: its set-up keeps its transaction")
    import psycopg

    user = turns.user()
    pk, session_id = turns.execution(user)
    turns.llm.script(QUESTION)
    turns.run(session_id, turns.message(session_id, pk, "first"))  # the execution is started
    message_pk = turns.message(session_id, pk, "hello")
    statuses: list[tuple[str, object]] = []

    def after(conn, _cursor, statement, *_args) -> None:  # noqa: ANN001, ANN002
        statuses.append((statement.split()[0], conn.connection.dbapi_connection.info.transaction_status))

    event.listen(engine, "after_cursor_execute", after)
    try:
        context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk))
    finally:
        event.remove(engine, "after_cursor_execute", after)
    assert context is not None and turns.row(Message, message_pk).status == "processing"
    # The claim is made by the context read (a data-modifying CTE): no UPDATE of its own.
    assert [name for name, _ in statuses] == ["WITH", "SELECT"], statuses  # the context, the history
    assert {status for _, status in statuses} == {psycopg.pq.TransactionStatus.IDLE}, statuses
    assert turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk)) is None  # claimed once


def test_on_postgres_a_message_claimed_since_the_read_s_snapshot_is_not_ours(turns, engine, is_postgres):
    if not is_postgres:
        pytest.skip("SQLite claims after its read, in its transaction")
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_pk = turns.message(session_id, pk, "hello")
    found: list[Any] = []
    with engine.connect() as other:  # another run's claim, not committed yet: it holds the row
        other.execute(update(Message).where(Message.message_pk == message_pk).values(status="processing"))
        begin = threading.Thread(
            target=lambda: found.append(turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk))))
        begin.start()
        begin.join(0.5)
        assert begin.is_alive()  # the read's snapshot says "pending"; its claim waits for the row
        other.commit()
    begin.join(10)
    assert found == [None] and turns.llm.requests == []  # the claim found it taken: not ours


def test_a_set_up_failing_after_its_claim_leaves_the_message_failed(turns, monkeypatch):
    # On Postgres the claim commits on its own: a statement failing after it must not leave the
    # message "processing" with nothing to answer it.
    user = turns.user()
    pk, session_id = turns.execution(user)  # not started yet: the set-up starts it after the claim
    message_pk = turns.message(session_id, pk, "hello")
    monkeypatch.setattr(turn_module, "_START_EXECUTION", sqlalchemy.text("UPDATE no_such_table SET x = 1"))
    turns.run(session_id, message_pk)
    row = turns.row(Message, message_pk)
    assert row.status == "failed" and "internal error" in row.error
    assert turns.llm.requests == []
