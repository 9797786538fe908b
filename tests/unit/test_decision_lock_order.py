"""A tool decision taken back (``undo_decision``) and its follow-up (``ToolRuns``): they lock the rows of a use
in one order (its task_tool_execution row, then its task_tool_query rows), and a follow-up whose decision was
taken back after its claim answers nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import event, update

from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.models import Message, TaskToolExecution, TaskToolQuery, UserTaskExecution
from mojodex_core.execution.tool_runs import DecisionTakenBack, ToolRuns, undo_decision
from tests.unit._rows import execution_pk


@pytest.fixture
def engine(database_url: str) -> Iterator:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def _decided_use(factory, status: str = "approved") -> tuple[int, int]:  # noqa: ANN001
    with transaction(factory) as db:
        pk = execution_pk(db)
        message = Message(
            session_id=db.get(UserTaskExecution, pk).session_id,
            user_task_execution_fk=pk,
            sender="user",
            message_id=uuid.uuid4().hex,
            event_name="user_message",
            text="hi",
            status="answered",
            data={},
        )
        db.add(message)
        db.flush()
        execution = TaskToolExecution(
            user_task_execution_fk=pk,
            tool_name="echo",
            status=status,
            requires_approval=True,
            approved=status == "approved",
            message_fk=message.message_pk,
        )
        db.add(execution)
        db.flush()
        query = TaskToolQuery(task_tool_execution_fk=execution.task_tool_execution_pk, query={"q": 1})
        db.add(query)
        db.flush()
        return execution.task_tool_execution_pk, query.task_tool_query_pk


def _tables_in_order(engine, run) -> list[str]:  # noqa: ANN001
    """The table each statement ``run`` sends reads or writes first (select/update/insert), in order."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001, PLR0913
        sql = " ".join(statement.lower().split())
        for table in ("task_tool_execution", "task_tool_query"):
            if f"from {table} " in f"{sql} " or sql.startswith(f"update {table} "):
                seen.append(table)
                return

    event.listen(engine, "before_cursor_execute", record)
    try:
        run()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return seen


def test_undo_decision_locks_the_execution_before_its_queries_as_the_follow_up_does(engine):
    # was: undo_decision locked the task_tool_query rows first (SELECT ... FOR UPDATE), then updated the
    # task_tool_execution row, while a follow-up recording its result (ToolRuns._finish) updates the
    # execution row first, then the query row: opposite lock orders, a deadlock on Postgres.
    factory = make_session_factory(engine)
    tool_pk, query_pk = _decided_use(factory)

    def undo() -> None:
        with transaction(factory) as db:
            undo_decision(db, tool_pk)

    def finish() -> None:
        ToolRuns(factory)._finish(tool_pk, query_pk, {"ok": True}, None)

    undo_order = _tables_in_order(engine, undo)
    finish_order = _tables_in_order(engine, finish)
    assert undo_order[0] == "task_tool_execution", undo_order
    assert finish_order[0] == "task_tool_execution", finish_order


def test_a_follow_up_whose_decision_was_taken_back_after_its_claim_answers_nothing(engine):
    # was: the turn checked the decision when it claimed its message (resumable), and resume read it again
    # later; a refused follow-up's undo_decision committing in between left approved=None, which resume read as
    # a decline: a DECLINED result recorded for a use the user was asked about again, and answered as declined.
    factory = make_session_factory(engine)
    tool_pk, _query_pk = _decided_use(factory)
    with transaction(factory) as db:  # the follow-up's claim (turn._claim: resumable, then processing)
        message_pk = db.get(TaskToolExecution, tool_pk).message_fk
        db.execute(update(Message).where(Message.message_pk == message_pk).values(status="processing"))
    with transaction(factory) as db:  # another process's follow-up of the same decision was refused
        assert undo_decision(db, tool_pk) is True
    with pytest.raises(DecisionTakenBack):
        ToolRuns(factory).resume(tool_pk, {"echo": {"name": "echo"}}, "u")
    with factory() as db:
        execution = db.get(TaskToolExecution, tool_pk)
        assert (execution.status, execution.approved) == ("awaiting_approval", None)
        assert [q.result for q in db.query(TaskToolQuery).filter_by(task_tool_execution_fk=tool_pk)] == [None]
        assert db.get(Message, message_pk).status == "answered", "the message is given back as it was"


def test_a_declined_follow_up_records_its_result_with_the_decision_taken(engine):
    factory = make_session_factory(engine)
    tool_pk, _query_pk = _decided_use(factory, status="declined")
    request, result = ToolRuns(factory).resume(tool_pk, {}, "u")
    assert request.name == "echo" and "declined" in result["error"]
    with factory() as db:
        assert db.get(TaskToolExecution, tool_pk).status == "declined"
        assert [q.result for q in db.query(TaskToolQuery).filter_by(task_tool_execution_fk=tool_pk)] == [result]
    with transaction(factory) as db:
        assert undo_decision(db, tool_pk) is False
