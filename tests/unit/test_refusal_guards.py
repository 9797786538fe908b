"""Guards of what a refused job settles: a refusal fails only a pending message, all or nothing; a tool decision
whose follow-up ran is never taken back; a job queued behind a refused drain is refused too."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import select, update

from background.runner import ThreadTurnRunner
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.models import Message, TaskToolExecution, TaskToolQuery, UserTaskExecution
from mojodex_core.execution import failures
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.jobs import JobRefused, TurnJob
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
    # message (no event) only while it is still pending, saying whether it did; a database error never
    # escapes to the route.
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

    monkeypatch.setattr(failures, "add_failure", broken)
    monkeypatch.setattr(failures, "mark_failed", claimed_before_the_last_resort)
    events = SessionEventLog(factory)
    assert failures.fail_refused(factory, events, session_id, failed_pk) is True
    # was True: the route answered 503 for a message another run was answering (it failed nothing)
    assert failures.fail_refused(factory, events, session_id, claimed_pk) is False
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


def _decided_tool(factory, status: str, approved: bool, result: dict | None) -> int:  # noqa: ANN001
    """A tool execution decided on an answered message, with its one query: its pk. ``result`` None: its
    follow-up never ran."""
    pk, session_id = _execution(factory)
    message_pk = _message(factory, session_id, pk, status="answered")
    with transaction(factory) as db:
        execution = TaskToolExecution(user_task_execution_fk=pk, tool_name="echo", status=status,
                                      requires_approval=True, approved=approved, message_fk=message_pk)
        db.add(execution)
        db.flush()
        db.add(TaskToolQuery(task_tool_execution_fk=execution.task_tool_execution_pk, query={"q": 1}, result=result))
        return execution.task_tool_execution_pk


def test_undo_decision_never_takes_back_a_declined_decision_whose_follow_up_ran(factory):
    # The docstring: "False when it is no longer decided and untouched (its follow-up started meanwhile)". A
    # declined follow-up keeps status "declined" (ToolRunner._finish(status="declined")) and records its result:
    # the guard on status alone takes it back anyway.
    tool_pk = _decided_tool(factory, "declined", approved=False, result={"declined": True})
    with transaction(factory) as db:
        assert undo_decision(db, tool_pk) is False
    with factory() as db:
        assert db.get(TaskToolExecution, tool_pk).status == "declined"


def test_undo_decision_takes_back_a_decision_whose_follow_up_never_ran(factory):
    tool_pk = _decided_tool(factory, "approved", approved=True, result=None)
    with transaction(factory) as db:
        assert undo_decision(db, tool_pk) is True
    with factory() as db:
        row = db.get(TaskToolExecution, tool_pk)
        assert (row.status, row.approved, row.decided_at) == ("awaiting_approval", None, None)


def _held_pool(runner: ThreadTurnRunner, monkeypatch, refusals: int) -> tuple[threading.Event, threading.Event]:  # noqa: ANN001
    """The runner's pool holds each drain handed to it until ``go_on``, refusing the first ``refusals``."""
    entered, go_on = threading.Event(), threading.Event()
    take = runner._pool.submit
    calls = []

    def held(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args)
        entered.set()
        go_on.wait(5)
        if len(calls) <= refusals:
            raise RuntimeError("can't start new thread")
        return take(*args, **kwargs)

    monkeypatch.setattr(runner._pool, "submit", held)
    return entered, go_on


def _submit_in_thread(runner: ThreadTurnRunner, job: TurnJob, outcome: dict[int, object]) -> threading.Thread:
    def submit() -> None:
        try:
            runner.submit(job)
            outcome[job.message_pk] = "accepted"
        except JobRefused as exc:
            outcome[job.message_pk] = exc

    thread = threading.Thread(target=submit)
    thread.start()
    return thread


def _waits_in_submit(thread: threading.Thread) -> bool:
    """The thread is blocked on a condition (a wait) somewhere inside ThreadTurnRunner.submit."""
    frame = sys._current_frames().get(thread.ident)
    codes = []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    return bool(codes) and codes[0].co_name == "wait" and ThreadTurnRunner.submit.__code__ in codes


def _a_then_b_while_a_is_handed_over(runner: ThreadTurnRunner, monkeypatch, refusals: int) -> dict[int, object]:  # noqa: ANN001
    """Submits A (message 1), then B (message 2) of the same session while the pool holds A's drain, and lets the
    pool go on (refusing the first ``refusals`` drains) once B is done or waits in its submit. What each submit
    did: "accepted" or its JobRefused."""
    entered, go_on = _held_pool(runner, monkeypatch, refusals)
    outcome: dict[int, object] = {}
    a = _submit_in_thread(runner, TurnJob(session_id="s", message_pk=1), outcome)
    assert entered.wait(5)
    b = _submit_in_thread(runner, TurnJob(session_id="s", message_pk=2), outcome)
    deadline = time.monotonic() + 5
    while b.is_alive() and not _waits_in_submit(b):  # B reaches its submit while A's drain is being handed over
        assert time.monotonic() < deadline, "B never got through or stopped in its submit"
        time.sleep(0.001)
    go_on.set()
    a.join(5)
    b.join(5)
    return outcome


def test_a_job_queued_behind_a_refused_one_is_refused_too(monkeypatch):
    # was: ThreadTurnRunner.submit: A registers the session as running, then the pool refuses it; a submit B of
    # the same session in between was queued behind A and returned (its route answered 200 pending); A's
    # refusal then dropped the session's queue, B with it: nothing ran B and nobody was told. B now waits for
    # A's drain to be taken or refused, then tries its own.
    ran: list[int] = []
    runner = ThreadTurnRunner(lambda job, cancel: ran.append(job.message_pk), max_workers=1)
    runner.shutdown()
    outcome = _a_then_b_while_a_is_handed_over(runner, monkeypatch, refusals=0)
    assert isinstance(outcome[1], JobRefused)
    assert isinstance(outcome[2], JobRefused), "B was accepted, then dropped with A's queue"
    assert runner.busy_sessions() == [] and ran == []


def test_a_job_behind_a_refused_one_runs_when_the_pool_takes_it(monkeypatch):
    # The pool could not start a thread for A, then could for B: B runs, A alone is refused.
    ran: list[int] = []
    runner = ThreadTurnRunner(lambda job, cancel: ran.append(job.message_pk), max_workers=1)
    try:
        outcome = _a_then_b_while_a_is_handed_over(runner, monkeypatch, refusals=1)
        assert isinstance(outcome[1], JobRefused) and outcome[2] == "accepted"
        assert runner.wait_idle(5) and ran == [2]
    finally:
        runner.shutdown()
