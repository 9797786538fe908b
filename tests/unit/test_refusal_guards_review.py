"""Reviewer's tests (rev_run), adjusted to the fixes: guards of what a refused job settles."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import select, update

from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.models import Message, TaskToolExecution, TaskToolQuery, UserTaskExecution
from mojodex_core.execution import failures
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.tool_runs import undo_decision
from tests.unit._rows import execution_pk


@pytest.fixture
def factory(database_url: str) -> Iterator:
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


def _execution(factory) -> tuple[int, str]:  # noqa: ANN001
    with transaction(factory) as db:
        pk = execution_pk(db)
        return pk, db.get(UserTaskExecution, pk).session_id


def _message(factory, session_id: str, pk: int, status: str = "pending") -> int:  # noqa: ANN001
    with transaction(factory) as db:
        row = Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id=uuid.uuid4().hex,
                      event_name="user_message", text="hi", status=status, data={})
        db.add(row)
        db.flush()
        return row.message_pk


def _errors(factory, session_id: str) -> list[str]:  # noqa: ANN001
    with factory() as db:
        return list(db.scalars(select(Message.text).where(Message.session_id == session_id,
                                                          Message.event_name == "error")))


def test_fail_refused_never_overwrites_a_message_another_run_claimed_after_its_look(factory):
    # was: fail_refused read status "pending" in one session, then record_failure set "failed" unconditionally:
    # a run that claimed the message in between (another process's start-up resume) answered a message that
    # was now failed, with an error event beside its answer. The claim lands here once fail_refused has begun
    # (as it opens the session's stream), where the old look had already seen "pending".
    pk, session_id = _execution(factory)
    message_pk = _message(factory, session_id, pk)
    events = SessionEventLog(factory)
    opened = events.publishing

    @contextmanager
    def claimed_meanwhile(sid: str):  # noqa: ANN202
        with transaction(factory) as db:
            db.execute(update(Message).where(Message.message_pk == message_pk, Message.status == "pending")
                       .values(status="processing"))
        with opened(sid) as publication:
            yield publication

    events.publishing = claimed_meanwhile
    assert failures.fail_refused(factory, events, session_id, message_pk) is False
    with factory() as db:
        assert db.get(Message, message_pk).status == "processing", "a claimed message must not be failed"
    assert _errors(factory, session_id) == []


def test_a_refusal_whose_recording_fails_is_all_or_nothing_and_marks_only_a_pending_message(factory, monkeypatch):
    # Storing the error message fails: nothing of that transaction stays, and the last resort fails the
    # message (no event) only while it is still pending; a database error never escapes to the route.
    pk, session_id = _execution(factory)
    failed_pk, claimed_pk = _message(factory, session_id, pk), _message(factory, session_id, pk)

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("the error message could not be stored")

    last_resort = failures.mark_failed

    def claimed_before_the_last_resort(factory_, message_pk, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if message_pk == claimed_pk:
            with transaction(factory) as db:
                db.execute(update(Message).where(Message.message_pk == claimed_pk).values(status="processing"))
        return last_resort(factory_, message_pk, *args, **kwargs)

    monkeypatch.setattr(failures, "_add_failure", broken)
    monkeypatch.setattr(failures, "mark_failed", claimed_before_the_last_resort)
    events = SessionEventLog(factory)
    assert failures.fail_refused(factory, events, session_id, failed_pk) is True
    assert failures.fail_refused(factory, events, session_id, claimed_pk) is True
    with factory() as db:
        failed, claimed = db.get(Message, failed_pk), db.get(Message, claimed_pk)
        assert (failed.status, failed.error, failed.answer_message_fk) == ("failed", failures.NOT_STARTED, None)
        assert (claimed.status, claimed.error) == ("processing", None)
    assert _errors(factory, session_id) == []


def test_a_refusal_the_database_cannot_record_is_still_a_refusal(tmp_path):
    # was: the status look ran outside any guard, so a database error escaped fail_refused (and the route
    # answered "database unavailable" with the message left pending)
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")  # no tables: every statement fails
    try:
        factory = make_session_factory(engine)
        assert failures.fail_refused(factory, SessionEventLog(factory), "s", 1) is True
    finally:
        engine.dispose()


def test_undo_decision_never_takes_back_a_declined_decision_whose_follow_up_ran(factory):
    # The docstring: "False when it is no longer decided and untouched (its follow-up started meanwhile)". A
    # declined follow-up keeps status "declined" (ToolRunner._finish(status="declined")) and records its result:
    # the guard on status alone takes it back anyway.
    pk, session_id = _execution(factory)
    message_pk = _message(factory, session_id, pk, status="answered")
    with transaction(factory) as db:
        execution = TaskToolExecution(user_task_execution_fk=pk, tool_name="echo", status="declined",
                                      requires_approval=True, approved=False, message_fk=message_pk)
        db.add(execution)
        db.flush()
        db.add(TaskToolQuery(task_tool_execution_fk=execution.task_tool_execution_pk, query={"q": 1},
                             result={"declined": True}))
        tool_pk = execution.task_tool_execution_pk
    with transaction(factory) as db:
        assert undo_decision(db, tool_pk) is False
    with factory() as db:
        assert db.get(TaskToolExecution, tool_pk).status == "declined"


def test_undo_decision_takes_back_a_decision_whose_follow_up_never_ran(factory):
    pk, session_id = _execution(factory)
    message_pk = _message(factory, session_id, pk, status="answered")
    with transaction(factory) as db:
        execution = TaskToolExecution(user_task_execution_fk=pk, tool_name="echo", status="approved",
                                      requires_approval=True, approved=True, message_fk=message_pk)
        db.add(execution)
        db.flush()
        db.add(TaskToolQuery(task_tool_execution_fk=execution.task_tool_execution_pk, query={"q": 1}, result=None))
        tool_pk = execution.task_tool_execution_pk
    with transaction(factory) as db:
        assert undo_decision(db, tool_pk) is True
    with factory() as db:
        row = db.get(TaskToolExecution, tool_pk)
        assert (row.status, row.approved, row.decided_at) == ("awaiting_approval", None, None)
