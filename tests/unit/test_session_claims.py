"""Distributed-mode building blocks on the suite's database (no Redis, no Celery): the session
lease and its fencing token, the drain loop, the sweep that re-runs a dead worker's turns."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import select

from background.distributed.drain import BUSY, DONE, MORE, Drainer, StopFlag
from background.distributed.sweep import sweep
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.models import Message, SessionEvent, SessionRunner
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.failures import record_failure
from mojodex_core.execution.intake import accept_user_message
from mojodex_core.execution.jobs import SessionJob, SessionJobs, TurnJob
from mojodex_core.execution.session_claims import (
    Superseded,
    check_fence,
    claim_session,
    holding,
    release,
    renew,
)
from tests.unit._rows import session_row


@pytest.fixture
def factory(database_url: str) -> Iterator:
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.fixture
def session_id(factory) -> str:  # noqa: ANN001
    with transaction(factory) as db:
        return session_row(db)


def _message(factory, session_id: str, text: str, status: str = "pending") -> int:  # noqa: ANN001
    with transaction(factory) as db:
        row = Message(session_id=session_id, sender="user", message_id=uuid.uuid4().hex, event_name="user_message",
                      text=text, status=status, data={})
        db.add(row)
        db.flush()
        return row.message_pk


def _answer(factory, job: TurnJob) -> None:  # noqa: ANN001
    with transaction(factory) as db:
        message = db.get(Message, job.message_pk)
        check_fence(db, job.session_id)
        message.status = "answered"


def test_one_holder_at_a_time_and_a_stale_lease_is_taken_over_with_a_new_fence(factory, session_id):
    first = claim_session(factory, session_id, "w1", lease_s=30)
    assert first is not None and first.fence == 1
    assert claim_session(factory, session_id, "w2", lease_s=30) is None
    assert renew(factory, first)
    time.sleep(0.3)
    second = claim_session(factory, session_id, "w2", lease_s=0.2)  # w1 stopped heart-beating
    assert second is not None and second.fence == 2
    assert not renew(factory, first), "the old holder must learn it lost the lease"
    release(factory, first)  # a stale release changes nothing
    assert claim_session(factory, session_id, "w3", lease_s=30) is None
    release(factory, second)
    assert claim_session(factory, session_id, "w3", lease_s=30).fence == 3


def test_a_completion_under_a_superseded_fence_stores_nothing(factory, session_id):
    message_pk = _message(factory, session_id, "hi", status="processing")
    old = claim_session(factory, session_id, "w1", lease_s=30)
    time.sleep(0.3)
    claim_session(factory, session_id, "w2", lease_s=0.2)
    with holding(old), pytest.raises(Superseded):
        _answer(factory, TurnJob(session_id=session_id, message_pk=message_pk))
    events = SessionEventLog(factory)
    with holding(old), pytest.raises(Superseded):
        record_failure(factory, events, session_id=session_id, message_pk=message_pk, message_id="x",
                       user_task_execution_pk=None, reason="late")
    with factory() as db:
        assert db.get(Message, message_pk).status == "processing"


def test_a_drain_answers_pending_messages_in_order_then_jobs_carried_first(factory, session_id):
    seen: list = []

    def handler(job, _cancel) -> None:  # noqa: ANN001
        seen.append(job)
        if isinstance(job, TurnJob):
            _answer(factory, job)

    pks = [_message(factory, session_id, f"m{i}") for i in range(3)]
    handlers = SessionJobs(handler)
    handlers.register("step", handler)
    drainer = Drainer(factory, handlers, owner="w1", lease_s=30)
    job = SessionJob(session_id=session_id, kind="step", payload={"n": 1})
    assert drainer.drain(session_id, [job]) == DONE
    assert seen == [job] + [TurnJob(session_id=session_id, message_pk=pk) for pk in pks]
    with factory() as db:
        assert db.get(SessionRunner, session_id).owner is None


def test_a_held_session_is_not_drained_and_a_stopping_worker_hands_back(factory, session_id):
    holder = claim_session(factory, session_id, "other", lease_s=30)
    _message(factory, session_id, "a")
    drainer = Drainer(factory, lambda job, _c: _answer(factory, job), owner="w1", lease_s=30)
    assert drainer.drain(session_id) == BUSY
    release(factory, holder)
    _message(factory, session_id, "b")
    stop = threading.Event()

    def handler(job, _cancel) -> None:  # noqa: ANN001
        _answer(factory, job)
        stop.set()  # SIGTERM arrives during the first turn

    drainer = Drainer(factory, handler, owner="w1", lease_s=30)
    assert drainer.drain(session_id, stopping=stop.is_set) == MORE
    with factory() as db:
        statuses = db.scalars(select(Message.status).where(Message.session_id == session_id)
                              .order_by(Message.message_pk)).all()
    assert statuses == ["answered", "pending"]


def test_the_sweep_reruns_a_dead_workers_turn_with_a_retrying_event(factory, session_id):
    message_pk = _message(factory, session_id, "hi", status="processing")
    dead = claim_session(factory, session_id, "dead", lease_s=30)
    submitted: list[str] = []
    events = SessionEventLog(factory)
    sweep(factory, events, submitted.append, lease_s=30, pending_grace_s=60)
    assert session_id not in submitted  # its holder is alive
    time.sleep(0.3)
    sweep(factory, events, submitted.append, lease_s=0.2, pending_grace_s=60)  # (other tests' leases too)
    assert submitted.count(session_id) == 1
    with factory() as db:
        assert db.get(Message, message_pk).status == "pending"
        retry = db.scalars(select(SessionEvent).where(SessionEvent.session_id == session_id)).all()
    assert [(e.event_name, e.payload) for e in retry] == [
        ("mojo_message_retrying", {"session_id": session_id, "message_pk": message_pk,
                                   "user_task_execution_pk": retry[0].payload["user_task_execution_pk"],
                                   "seq": retry[0].seq})
    ]
    with holding(dead), pytest.raises(Superseded):  # the dead worker, waking up, stores nothing
        _answer(factory, TurnJob(session_id=session_id, message_pk=message_pk))


def test_the_in_process_runner_runs_session_jobs_in_the_sessions_turn_order():
    from background.runner import ThreadTurnRunner

    seen: list = []
    gate = threading.Event()

    def turn(job, _cancel) -> None:  # noqa: ANN001
        gate.wait(5)
        seen.append(("turn", job.message_pk))

    handlers = SessionJobs(turn)
    handlers.register("step", lambda job, _c: seen.append(("step", job.payload["n"])))
    runner = ThreadTurnRunner(handlers)
    try:
        runner.submit(TurnJob(session_id="s", message_pk=1))
        runner.submit(SessionJob(session_id="s", kind="step", payload={"n": 1}))
        runner.submit(TurnJob(session_id="s", message_pk=2))
        gate.set()
        assert runner.wait_idle(5)
        assert seen == [("turn", 1), ("step", 1), ("turn", 2)]
        with pytest.raises(LookupError):
            handlers(SessionJob(session_id="s", kind="unknown"), threading.Event())
    finally:
        runner.shutdown()


def test_a_message_left_processing_by_a_failed_holder_is_rerun_by_the_next_drain(factory, session_id):
    # Its worker lost the database mid-turn: it could neither answer nor mark the failure, and
    # its lease was released or lapsed. Before the fix the message stayed "processing" for ever.
    message_pk = _message(factory, session_id, "hi", status="processing")
    events = SessionEventLog(factory)
    drainer = Drainer(factory, lambda job, _c: _answer(factory, job), owner="w2", lease_s=30, events=events)
    assert drainer.drain(session_id) == DONE
    with factory() as db:
        assert db.get(Message, message_pk).status == "answered"
        names = db.scalars(select(SessionEvent.event_name).where(SessionEvent.session_id == session_id)).all()
    assert names == ["mojo_message_retrying"]


def test_an_unreachable_database_answers_503_not_500():
    from sqlalchemy.exc import OperationalError

    from backend.errors import error_response

    body, status, headers = error_response(OperationalError("SELECT 1", {}, Exception("connection refused")))
    assert (status, body) == (503, {"error": "database unavailable"}) and headers["Retry-After"]


def test_jobs_cross_the_broker_unchanged():
    from background.distributed.runner import decode_job, encode_job

    for job in (TurnJob(session_id="s", message_pk=3, task_tool_execution_pk=7),
                SessionJob(session_id="s", kind="workflow_step", payload={"step_pk": 12})):
        assert decode_job("s", json.loads(json.dumps(encode_job(job)))) == job


def test_release_and_look_frees_the_lease_and_sees_a_message_accepted_while_held(factory, session_id):
    from mojodex_core.execution.session_claims import release_and_look

    claim = claim_session(factory, session_id, "w1", lease_s=30)
    assert not release_and_look(factory, claim), "nothing pending"
    claim = claim_session(factory, session_id, "w1", lease_s=30)
    assert claim is not None and claim.fence == 2
    _message(factory, session_id, "arrived while held")
    assert claim_session(factory, session_id, "w2", lease_s=30) is None  # its drain found the session held
    assert release_and_look(factory, claim), "the holder must see the message after its release"
    assert claim_session(factory, session_id, "w2", lease_s=30).fence == 3, "the lease must be free"


def test_a_drain_takes_one_message_per_claim_and_fails_one_its_turn_left_pending(factory, session_id):
    fences: list[int] = []
    runs: list[int] = []
    kinds: list[str | None] = []

    def handler(job, _cancel) -> None:  # noqa: ANN001
        runs.append(job.message_pk)
        kinds.append(job.event_name)
        with factory() as db:
            fences.append(db.get(SessionRunner, session_id).fence)
        if job.message_pk != stuck:
            _answer(factory, job)  # the stuck one is left pending by its turn

    first = _message(factory, session_id, "a")
    stuck = _message(factory, session_id, "b")
    last = _message(factory, session_id, "c")
    assert Drainer(factory, handler, owner="w1", lease_s=30).drain(session_id) == DONE
    assert runs == [first, stuck, last], "in order, the stuck message run once"
    assert kinds == ["user_message"] * 3, "each job carries its message's kind: the handler need not read it"
    assert fences == sorted(set(fences)) and len(fences) == 3, "the lease is released and claimed again per turn"
    with factory() as db:
        statuses = db.scalars(select(Message.status).where(Message.session_id == session_id)
                              .order_by(Message.message_pk)).all()
        assert db.get(SessionRunner, session_id).owner is None
    assert statuses == ["answered", "failed", "answered"]


def test_a_claim_reads_the_first_look_right_after_it(factory, session_id):
    from mojodex_core.execution.session_claims import Look, Waiting, claim_and_look

    claim, look = claim_and_look(factory, session_id, "w1", lease_s=30)
    assert claim.fence == 1 and look is None, "the first claim creates the lease row: the caller looks"
    release(factory, claim)
    first = _message(factory, session_id, "a")
    _message(factory, session_id, "b")
    claim, look = claim_and_look(factory, session_id, "w1", lease_s=30)
    assert claim.fence == 2 and look == Look(orphaned=None, pending=Waiting(first, "user_message"))
    assert claim_and_look(factory, session_id, "w2", lease_s=30) == (None, None), "held"
    release(factory, claim)
    left = _message(factory, session_id, "c", status="processing")
    claim, look = claim_and_look(factory, session_id, "w1", lease_s=30)
    assert look == Look(orphaned=left, pending=None)
    release(factory, claim)
    claim, look = claim_and_look(factory, session_id, "w1", lease_s=30, orphans=False)
    assert look == Look(orphaned=None, pending=Waiting(first, "user_message"))


def test_a_claim_of_a_held_session_tries_its_update_once(factory, session_id):
    from sqlalchemy import event

    from mojodex_core.execution.session_claims import claim_and_look

    claim, _look = claim_and_look(factory, session_id, "w1", lease_s=30)
    engine = factory.kw["bind"]
    sent: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        sent.append(statement.split()[0])

    event.listen(engine, "before_cursor_execute", record)
    try:
        assert claim_and_look(factory, session_id, "w2", lease_s=30) == (None, None)
        assert claim_session(factory, session_id, "w2", lease_s=30) is None
    finally:
        event.remove(engine, "before_cursor_execute", record)
    # Each: the conditional UPDATE, then the lease row's existence (held). It was UPDATE twice.
    assert [s for s in sent if s in ("UPDATE", "SELECT")] == ["UPDATE", "SELECT", "UPDATE", "SELECT"]
    release(factory, claim)


@pytest.mark.parametrize("statement", ["_NEXT_PENDING", "_PROCESSING"])
def test_sqlite_finds_a_session_s_waiting_messages_without_reading_the_others(statement):
    # Several times a distributed turn: reading every message of the session made a drain grow
    # with the conversation (~1.1 ms each at 6,000 messages on Postgres).
    from mojodex_core.execution import session_claims
    from tests.support.sqlite_plan import sqlite_plan

    plan = sqlite_plan(getattr(session_claims, statement), {"b_session": "s"})
    assert "ix_message_session_status (session_id=? AND status=?)" in plan, plan


class _Flags:
    """Cancel flags in memory (drain.CancelFlags), as a backend raises them in Redis."""

    def __init__(self) -> None:
        self.raised: dict[str, StopFlag] = {}

    def raise_now(self, session_id: str, first_pk: int | None = None, closed_by: int | None = None, *,
                  turn_read: bool = True) -> None:
        """A stop that read ``first_pk`` busy, its last turn closed by ``closed_by`` (``turn_read``
        False: as an earlier backend raised it, naming the message alone)."""
        read = turn_read and first_pk is not None
        self.raised[session_id] = StopFlag(time.time(), first_pk, closed_by, turn_read=read)

    def raised_at(self, session_id: str) -> StopFlag | None:
        return self.raised.get(session_id)

    def consume(self, session_id: str, flag: StopFlag) -> None:
        if self.raised.get(session_id) == flag:
            del self.raised[session_id]


class _Redis:
    """The backend's Redis, as far as ``CeleryTurnRunner.cancel`` uses it: the flag it sets lands in ``flags``."""

    def __init__(self, flags: _Flags, session_id: str) -> None:
        self._flags, self._session_id = flags, session_id

    def set(self, key: str, value: str, ex: int) -> None:  # noqa: ARG002
        from background.distributed.runner import decode_flag

        self._flags.raised[self._session_id] = decode_flag(value)


# The forms of a stop's flag: naming the turn it read (this version's backend), naming its message alone
# (the previous version's), naming nothing (a backend whose read of the session failed, or of the eighth
# round): the first is judged by the turn it names, the others by time (drain.py).
FLAG_FORMS = pytest.mark.parametrize("form", ["turn", "message", "time"],
                                     ids=["flag", "earlier_backend_s_flag", "flag_naming_no_turn"])


def _stop(factory, flags: _Flags, session_id: str, form: str) -> None:  # noqa: ANN001
    """The user presses stop: the backend raises the session's flag (``CeleryTurnRunner.cancel``), in ``form``."""
    from background.distributed.runner import CeleryTurnRunner

    CeleryTurnRunner(None, _Redis(flags, session_id), factory).cancel(session_id)  # type: ignore[arg-type]
    flag = flags.raised[session_id]
    assert flag.turn_read and flag.first_pk is not None  # it read a message waiting or running
    if form != "turn":
        flags.raised[session_id] = StopFlag(flag.raised, flag.first_pk if form == "message" else None)


def _drained(factory, session_id: str, flags: _Flags, wait_s: float) -> dict[int, bool]:  # noqa: ANN001
    """Drains the session with turns that each wait up to ``wait_s`` for a stop (the heartbeat
    looks every 0.5 s) and answer: whether each turn, by message_pk, was stopped."""
    stopped: dict[int, bool] = {}

    def handler(job, cancel) -> None:  # noqa: ANN001
        stopped[job.message_pk] = cancel.wait(wait_s)
        _answer(factory, job)

    assert Drainer(factory, handler, owner="w1", lease_s=30, cancel_flags=flags).drain(session_id) == DONE
    return stopped


@FLAG_FORMS
def test_a_stop_sent_while_the_turn_waits_for_a_worker_stops_it(factory, session_id, form):
    # Before the fix the flag counted only when raised after the job started: a stop sent while
    # every worker was busy was ignored, and the turn answered anyway.
    message_pk = _message(factory, session_id, "hi")
    flags = _Flags()
    time.sleep(0.01)
    _stop(factory, flags, session_id, form)  # the user pressed stop; no worker has the session yet
    # The turn looks at once (wait 0): a short one would be over before the heartbeat's next look.
    assert _drained(factory, session_id, flags, wait_s=0) == {message_pk: True}
    assert flags.raised == {}  # consumed by the turn it stopped


@FLAG_FORMS
def test_a_stop_is_consumed_by_one_turn_and_the_ones_queued_behind_run(factory, session_id, form):
    first, second = _message(factory, session_id, "a"), _message(factory, session_id, "b")
    flags = _Flags()
    time.sleep(0.01)
    _stop(factory, flags, session_id, form)
    # as the in-process runner does
    assert _drained(factory, session_id, flags, wait_s=1.2) == {first: True, second: False}
    assert flags.raised == {}


@FLAG_FORMS
def test_a_stop_while_a_turn_runs_stops_it_at_a_beat_and_not_the_ones_waiting_behind(factory, session_id, form):
    # The stop is for the running turn alone (the first in the session's line), as in-process.
    first, second, third = (_message(factory, session_id, text) for text in ("a", "b", "c"))
    flags = _Flags()
    stopped: dict[int, bool] = {}

    def handler(job, cancel) -> None:  # noqa: ANN001
        if job.message_pk == first:
            with transaction(factory) as db:
                db.get(Message, first).status = "processing"  # the turn runs
            _stop(factory, flags, session_id, form)  # the user presses stop: the next beat sees it
            stopped[first] = cancel.wait(1.2)
        else:
            stopped[job.message_pk] = cancel.wait(0.6)  # a beat's look, besides the start's
        _answer(factory, job)

    assert Drainer(factory, handler, owner="w1", lease_s=30, cancel_flags=flags).drain(session_id) == DONE
    assert stopped == {first: True, second: False, third: False}
    assert flags.raised == {}  # consumed by the turn it stopped


def test_a_stop_raised_before_the_message_was_sent_is_dropped(factory, session_id):
    flags = _Flags()
    flags.raise_now(session_id)  # a stop with nothing to stop (the session was idle)
    time.sleep(0.01)
    message_pk = _message(factory, session_id, "hi")
    assert _drained(factory, session_id, flags, wait_s=1.2) == {message_pk: False}
    assert flags.raised == {}  # stale for every later turn too


def test_a_stop_during_a_job_with_no_message_stops_it_and_one_before_does_not(factory, session_id):
    flags = _Flags()
    stopped: list[bool] = []

    def step(job, cancel) -> None:  # noqa: ANN001
        if job.payload["raise"]:
            flags.raise_now(session_id)
        stopped.append(cancel.wait(1.2))

    handlers = SessionJobs(step)
    handlers.register("step", step)
    drainer = Drainer(factory, handlers, owner="w1", lease_s=30, cancel_flags=flags)
    assert drainer.drain(session_id, [SessionJob(session_id=session_id, kind="step", payload={"raise": True})]) == DONE
    flags.raise_now(session_id)
    time.sleep(0.01)
    assert drainer.drain(session_id, [SessionJob(session_id=session_id, kind="step", payload={"raise": False})]) == DONE
    assert stopped == [True, False]


@FLAG_FORMS
def test_a_stop_that_comes_as_a_short_turn_ends_is_its_own_not_the_next_one_s(factory, session_id, form):
    # The turn ended before any beat saw the flag: its end consumes it. Before, the turn queued
    # behind (sent before the stop) was stopped instead, which the in-process runner never does.
    first, second = _message(factory, session_id, "a"), _message(factory, session_id, "b")
    flags = _Flags()
    stopped: dict[int, bool] = {}

    def handler(job, cancel) -> None:  # noqa: ANN001
        if job.message_pk == first:
            _stop(factory, flags, session_id, form)  # the user pressed stop (twice) as the first turn ended
            _stop(factory, flags, session_id, form)
            stopped[first] = cancel.is_set()
        else:
            stopped[second] = cancel.wait(1.2)
        _answer(factory, job)

    drainer = Drainer(factory, handler, owner="w1", lease_s=30, cancel_flags=flags)
    assert drainer.drain(session_id) == DONE
    assert stopped == {first: False, second: False} and flags.raised == {}


def test_a_stop_for_a_message_answered_before_its_flag_was_set_does_not_stop_an_older_one_sent_again(
    factory, session_id
):
    # was: the stop's flag, set just after the turn it was for ended, stopped the next turn whose
    # message was sent before the flag: an older failed message sent again keeps its created_at.
    older = _message(factory, session_id, "failed once", status="failed")
    time.sleep(0.01)
    answered = _message(factory, session_id, "answered", status="answered")
    time.sleep(0.01)
    flags = _Flags()
    flags.raise_now(session_id, first_pk=answered)  # read busy, then the turn ended, then the SET
    with transaction(factory) as db:
        db.get(Message, older).status = "pending"  # the user retries the failed message
    assert _drained(factory, session_id, flags, wait_s=1.2) == {older: False}
    assert flags.raised == {}  # stale: dropped


@pytest.mark.parametrize("turn_read", [True, False], ids=["flag", "earlier_backend_s_flag"])
def test_an_older_message_sent_again_after_a_stop_leaves_it_to_the_message_it_was_for(
    factory, session_id, turn_read
):
    # The drain answers the older message first: it must neither take the stop nor drop it while
    # the message the stop was for still waits (the in-process runner stops that one).
    older = _message(factory, session_id, "failed once", status="failed")
    waiting = _message(factory, session_id, "waiting for a worker")
    time.sleep(0.01)
    flags = _Flags()
    flags.raise_now(session_id, first_pk=waiting, turn_read=turn_read)
    with transaction(factory) as db:
        db.get(Message, older).status = "pending"  # sent again after the stop
    assert _drained(factory, session_id, flags, wait_s=1.2) == {older: False, waiting: True}
    assert flags.raised == {}


def _send(factory, events, session_id: str, message_id: str) -> int:  # noqa: ANN001
    """The user sends a message (again, with the same message_id: a failed one runs again)."""
    accepted = accept_user_message(factory, events, session_id=session_id, user_task_execution_pk=None,
                                   text="hi", message_id=message_id)
    assert accepted.run
    return accepted.message_pk


def _fail(factory, events, job: TurnJob) -> None:  # noqa: ANN001
    """What a turn does once stopped: the message fails, retryable (an error message and event)."""
    record_failure(factory, events, session_id=job.session_id, message_pk=job.message_pk, message_id="m1",
                   user_task_execution_pk=None, reason="The turn was cancelled.")


def _statuses(factory, session_id: str) -> list[tuple[str, str]]:  # noqa: ANN001
    with factory() as db:
        return [(m.sender, m.status) for m in db.scalars(
            select(Message).where(Message.session_id == session_id).order_by(Message.message_pk))]


def test_a_stopped_message_sent_again_before_its_drain_released_the_session_is_answered(factory, session_id):
    # was: the drain took the message, pending again when it looked for the next one, for one its
    # turn had left pending, and failed it ("The assistant failed to answer") without running it:
    # the user sent it again as the stopped turn ended, before the drain released the session.
    events = SessionEventLog(factory)
    message_pk = _send(factory, events, session_id, "m1")
    flags = _Flags()
    time.sleep(0.01)
    flags.raise_now(session_id, first_pk=message_pk)  # the user pressed stop; no worker has it yet
    stopped: list[bool] = []

    def handler(job, cancel) -> None:  # noqa: ANN001
        stopped.append(cancel.wait(1.2))
        if stopped[-1]:
            _fail(factory, events, job)
            assert _send(factory, events, session_id, "m1") == message_pk  # sent again at once
        else:
            _answer(factory, job)

    assert Drainer(factory, handler, owner="w1", lease_s=30, cancel_flags=flags).drain(session_id) == DONE
    assert stopped == [True, False], "stopped once, then the message sent again ran"
    assert _statuses(factory, session_id) == [("user", "answered"), ("system", "error")]
    assert flags.raised == {}


class _BlinkingFlags(_Flags):
    """Flags whose Redis times out on every consume while ``blinking`` (reads still answer)."""

    blinking = True

    def consume(self, session_id: str, flag: StopFlag) -> None:
        if self.blinking:
            raise TimeoutError("Timeout reading from socket")
        super().consume(session_id, flag)


def test_a_stop_its_turn_could_not_consume_does_not_stop_the_message_sent_again_after_it(factory, session_id):
    # was: a stop still raised (Redis timed out at each consume) stopped the message sent again after
    # the stop was answered: dated by its first sending, it looked sent before the stop.
    events = SessionEventLog(factory)
    message_pk = _send(factory, events, session_id, "m1")
    flags = _BlinkingFlags()
    time.sleep(0.01)
    flags.raise_now(session_id, first_pk=message_pk)
    stopped: list[bool] = []

    def handler(job, cancel) -> None:  # noqa: ANN001
        stopped.append(cancel.wait(1.2))
        if stopped[-1]:
            _fail(factory, events, job)
        else:
            _answer(factory, job)

    drainer = Drainer(factory, handler, owner="w1", lease_s=30, cancel_flags=flags)
    assert drainer.drain(session_id) == DONE
    assert stopped == [True] and session_id in flags.raised  # the turn was stopped; its flag stayed raised
    flags.blinking = False
    assert _send(factory, events, session_id, "m1") == message_pk  # the user sends it again
    assert drainer.drain(session_id) == DONE
    assert stopped == [True, False], "the message sent again after the stop was answered is answered"
    assert _statuses(factory, session_id) == [("user", "answered"), ("system", "error")]
    assert flags.raised == {}  # stale: dropped


def test_a_stop_whose_turn_ended_before_its_flag_was_set_does_not_stop_the_message_sent_again(factory, session_id):
    # was: the backend read the message busy, its turn failed it, then the backend took the flag's
    # time and set it: the flag looked raised after the failure, and stopped the message sent again.
    from background.distributed.runner import CeleryTurnRunner

    events = SessionEventLog(factory)
    message_pk = _send(factory, events, session_id, "m1")
    flags = _Flags()

    @contextmanager
    def read_then_the_turn_fails() -> Iterator:  # the backend's sessions
        with factory() as db:
            yield db  # the stop reads the message busy
        _fail(factory, events, TurnJob(session_id=session_id, message_pk=message_pk))  # then its turn fails it

    CeleryTurnRunner(None, _Redis(flags, session_id), read_then_the_turn_fails).cancel(session_id)  # type: ignore[arg-type]
    assert flags.raised[session_id].first_pk == message_pk  # raised for the message's turn, now ended
    assert _send(factory, events, session_id, "m1") == message_pk  # the user sends it again
    stopped = _drained(factory, session_id, flags, wait_s=1.2)
    assert stopped == {message_pk: False}
    assert _statuses(factory, session_id) == [("user", "answered"), ("system", "error")]
    assert flags.raised == {}


def test_a_stop_read_as_the_error_ending_its_turn_commits_does_not_stop_the_message_sent_again(
    factory, session_id
):
    # was: the error row is dated when inserted and committed later (after the error event's Redis
    # increment, up to 2 s): a stop read in between saw the message busy, its flag was dated after the
    # error, and it stopped the message the user sent again after the failure.
    from sqlalchemy import event

    from background.distributed.runner import CeleryTurnRunner

    events = SessionEventLog(factory)
    message_pk = _send(factory, events, session_id, "m1")
    flags = _Flags()
    backend = CeleryTurnRunner(None, _Redis(flags, session_id), factory)  # type: ignore[arg-type]
    stops: list[int] = []

    def stop_now(db, flush_context) -> None:  # noqa: ANN001, ARG001
        if not stops:  # the error row is inserted (dated), not committed: the user presses stop
            stops.append(1)
            time.sleep(0.01)
            backend.cancel(session_id)

    event.listen(factory, "after_flush", stop_now)
    try:
        _fail(factory, events, TurnJob(session_id=session_id, message_pk=message_pk))
    finally:
        event.remove(factory, "after_flush", stop_now)
    assert flags.raised[session_id].first_pk == message_pk  # the stop read the message busy
    assert _send(factory, events, session_id, "m1") == message_pk  # the user sends it again
    assert _drained(factory, session_id, flags, wait_s=1.2) == {message_pk: False}
    assert _statuses(factory, session_id) == [("user", "answered"), ("system", "error")]
    assert flags.raised == {}


def test_a_flag_s_redis_value_round_trips():
    from background.distributed.runner import decode_flag, encode_flag

    for flag in (StopFlag(1764331234.123456, 42, 40, turn_read=True), StopFlag(time.time(), 7, None, turn_read=True),
                 StopFlag(1764331234.123456, 42), StopFlag(time.time(), None), StopFlag(0.1 + 0.2, 7)):
        assert decode_flag(encode_flag(flag).encode()) == flag
    assert encode_flag(StopFlag(1764331234.5, 42, None, turn_read=True)) == "1764331234.5/42/"  # its turn open
    # The earlier forms, read and written back as they were (a flag is lowered only if its value is the same).
    assert encode_flag(StopFlag(1764331234.5, None)) == "1764331234.5"  # a bare time
    assert encode_flag(decode_flag(b"1764331234.5/42")) == "1764331234.5/42"  # a time and the first message


def test_redis_cancel_flags_name_the_first_waiting_message_and_read_legacy_values(factory, session_id):
    from background.distributed.runner import CeleryTurnRunner, RedisCancelFlags, cancel_key

    client = _redis_client()
    runner, flags = CeleryTurnRunner(None, client, factory), RedisCancelFlags(client)  # type: ignore[arg-type]
    answered = _message(factory, session_id, "answered", status="answered")
    # The running one first: without the ORDER BY, a scan of (session, status) could give the pending one.
    first, _second = _message(factory, session_id, "a", status="processing"), _message(factory, session_id, "b")
    with transaction(factory) as db:
        db.get(Message, first).answer_message_fk = answered  # its last turn's close (a message sent again)
    runner.cancel(session_id)
    flag = flags.raised_at(session_id)
    assert (flag.first_pk, flag.closed_by, flag.turn_read) == (first, answered, True)
    for value, legacy in ((1764331234.5, StopFlag(1764331234.5, None)),  # as a backend of the eighth round raised it
                          ("1764331234.5/42", StopFlag(1764331234.5, 42))):  # of the round before this one
        client.set(cancel_key(session_id), value)
        assert flags.raised_at(session_id) == legacy
        flags.consume(session_id, legacy)
        assert flags.raised_at(session_id) is None


def _redis_client():  # noqa: ANN202
    import os

    import redis

    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("needs TEST_REDIS_URL")
    return redis.Redis.from_url(url)


def test_a_stop_with_nothing_to_stop_raises_no_flag(factory, session_id):
    # Its flag would be stale: a turn of a message sent before it (a retry of a failed one,
    # whose created_at is old) would be stopped by it up to the flag's TTL later.
    from background.distributed.runner import CeleryTurnRunner, RedisCancelFlags, cancel_key

    client = _redis_client()
    runner, flags = CeleryTurnRunner(None, client, factory), RedisCancelFlags(client)  # type: ignore[arg-type]
    failed = _message(factory, session_id, "hi", status="failed")
    runner.cancel(session_id)
    assert flags.raised_at(session_id) is None
    with transaction(factory) as db:
        db.get(Message, failed).status = "pending"  # sent again
    runner.cancel(session_id)
    assert flags.raised_at(session_id) is not None
    client.delete(cancel_key(session_id))


def test_redis_cancel_flags_lower_only_the_stop_that_was_read(factory, session_id):
    from background.distributed.runner import CeleryTurnRunner, RedisCancelFlags

    client = _redis_client()
    runner = CeleryTurnRunner(None, client, factory)  # type: ignore[arg-type]
    flags = RedisCancelFlags(client)
    message_pk = _message(factory, session_id, "hi")  # a message waits: there is something to stop
    runner.cancel(session_id)
    first = flags.raised_at(session_id)
    assert first is not None and abs(first.raised - time.time()) < 5 and first.first_pk == message_pk
    time.sleep(0.01)
    runner.cancel(session_id)  # a newer stop, raised since the first was read
    flags.consume(session_id, first)
    assert flags.raised_at(session_id) not in (None, first)
    flags.consume(session_id, flags.raised_at(session_id))
    assert flags.raised_at(session_id) is None


def test_an_unreachable_redis_delays_a_turn_by_the_flag_timeout_not_for_good(factory, session_id):
    # The flag is read on the drain's thread before and after each job: a Redis that accepts and
    # never answers (a partition) hung the turn for a TCP timeout before the flags had their own.
    import socket

    from background.distributed import runner as runner_module

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        flags = runner_module.RedisCancelFlags.from_url(f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        message_pk = _message(factory, session_id, "hi")
        ran: list[int] = []
        drainer = Drainer(factory, lambda job, _c: (ran.append(job.message_pk), _answer(factory, job)),
                          owner="w1", lease_s=30, cancel_flags=flags)
        draining = threading.Thread(target=lambda: drainer.drain(session_id), daemon=True)
        started = time.monotonic()
        draining.start()
        draining.join(4 * runner_module.FLAG_TIMEOUT_S + 5)
        assert not draining.is_alive(), "the drain hangs on the unreachable Redis"
        assert ran == [message_pk] and time.monotonic() - started < 4 * runner_module.FLAG_TIMEOUT_S + 5
    finally:
        silent.close()


def test_a_message_accepted_as_the_holder_releases_is_never_left_to_the_sweep(factory, session_id, is_postgres):
    """The holder's look for a next message and another drain's claim both happen as it releases.

    Read inside the release's transaction, the look could miss a message committed after its
    snapshot whose own drain, before that commit, still found the session held: both gave up, and
    the message waited for the sweep (at least 10 s). Postgres only: SQLite's write lock makes the
    other drain wait for the release."""
    if not is_postgres:
        pytest.skip("Postgres: an UPDATE skips a row whose new version is not committed, SQLite waits")
    from sqlalchemy import event

    from mojodex_core.db import factory_engine
    from mojodex_core.execution.session_claims import release_and_look

    claim = claim_session(factory, session_id, "w1", lease_s=30)
    other: list = []
    fired: list[bool] = []

    def meanwhile(conn, cursor, statement, *_args) -> None:  # noqa: ANN001
        if fired or not statement.lstrip().upper().startswith("SELECT") or "FROM message" not in statement:
            return
        fired.append(True)  # once: the other drain's own statements come through here too
        _message(factory, session_id, "sent as the holder looked")  # its drain task then claims
        other.append(claim_session(factory, session_id, "w2", lease_s=30))

    engine = factory_engine(factory)
    event.listen(engine, "after_cursor_execute", meanwhile)
    try:
        looked = release_and_look(factory, claim)
    finally:
        event.remove(engine, "after_cursor_execute", meanwhile)
    assert other, "the look ran"
    assert looked or other[0] is not None, "the holder saw the message, or its own drain took the session"


def test_the_first_look_finds_a_left_processing_message_before_the_oldest_pending_one(factory, session_id):
    from mojodex_core.execution.session_claims import Look, Waiting, claim_and_look

    with transaction(factory) as db:  # a system message the runner does not answer
        db.add(Message(session_id=session_id, sender="system", message_id=uuid.uuid4().hex, event_name="note",
                       text="", status="pending", data={}))
    pending = _message(factory, session_id, "waits")
    assert claim_session(factory, session_id, "w1", lease_s=30) is not None  # the lease row exists
    with transaction(factory) as db:
        db.execute(SessionRunner.__table__.update().values(owner=None))
    claim, look = claim_and_look(factory, session_id, "w2", lease_s=30)
    assert claim is not None and look == Look(None, Waiting(pending, "user_message"))
    release(factory, claim)
    left = [_message(factory, session_id, text, status="processing") for text in ("left", "left too")]
    claim, look = claim_and_look(factory, session_id, "w3", lease_s=30)
    assert look == Look(left[0], None), "the oldest message left processing, before any pending one"
    release(factory, claim)
    claim, look = claim_and_look(factory, session_id, "w4", lease_s=30, orphans=False)
    assert look == Look(None, Waiting(pending, "user_message")), "without orphans, the oldest pending one"


def test_a_claim_whose_look_fails_leaves_the_session_free(factory, session_id, monkeypatch):
    """On Postgres the claim commits before its look: a look that fails (the connection reset, a
    statement timeout) must not leave the lease held until it lapses (30 s and a sweep)."""
    from mojodex_core.execution import session_claims

    first = claim_session(factory, session_id, "w1", lease_s=30)  # the lease row exists
    release(factory, first)
    _message(factory, session_id, "waits")

    def failing(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
        raise ConnectionResetError("the look failed")

    monkeypatch.setattr(session_claims, "first_look", failing)
    with pytest.raises(ConnectionResetError):
        session_claims.claim_and_look(factory, session_id, "w2", lease_s=30)
    monkeypatch.undo()
    claim = claim_session(factory, session_id, "w3", lease_s=30)
    assert claim is not None, "the failed claim was released"


def test_a_failed_look_never_releases_a_lease_another_worker_took_since(factory, session_id, monkeypatch):
    """SQLite rolls the failed claim back, fence included: a worker claiming before the release
    gets the same fence, so releasing by fence would free that worker's lease."""
    from mojodex_core.execution import session_claims

    release(factory, claim_session(factory, session_id, "w1", lease_s=30))
    between: list = []
    release_after_failure = session_claims._release_after_failure

    def another_worker_first(factory_, claim) -> None:  # noqa: ANN001
        between.append(claim_session(factory, session_id, "w3", lease_s=30))
        release_after_failure(factory_, claim)

    def failing(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
        raise ConnectionResetError("the look failed")

    monkeypatch.setattr(session_claims, "_release_after_failure", another_worker_first)
    monkeypatch.setattr(session_claims, "first_look", failing)
    with pytest.raises(ConnectionResetError):
        session_claims.claim_and_look(factory, session_id, "w2", lease_s=30)
    with factory() as db:
        owner = db.get(SessionRunner, session_id).owner
    taken = [claim for claim in between if claim is not None]
    assert owner == (taken[0].owner if taken else None), "a lease taken since is kept, the failed one freed"


def test_a_drain_the_broker_cannot_take_is_sent_again_by_the_sweep_and_a_travelling_job_is_refused(
        factory, session_id):
    # The distributed runner's refusals: a plain message whose drain could not be sent stays pending and the
    # route answers as accepted, since the sweep sends its drain again; a job that travels with its drain (a
    # tool follow-up, a session job) has nothing to find it again, so its submitter is told (JobRefused).
    from background.distributed.runner import CeleryTurnRunner
    from mojodex_core.execution.jobs import JobRefused

    class Broker:
        def __init__(self, up: bool) -> None:
            self.up, self.sent = up, []

        def send_task(self, name: str, args: list) -> None:
            if not self.up:
                raise ConnectionError("broker unreachable")
            self.sent.append((name, args))

    message_pk = _message(factory, session_id, "hi")
    try:
        broker = Broker(up=True)
        CeleryTurnRunner(broker, None, factory).submit(TurnJob(session_id=session_id, message_pk=message_pk))
        assert [args for _name, args in broker.sent] == [[session_id, []]]

        down = CeleryTurnRunner(Broker(up=False), None, factory)
        down.submit(TurnJob(session_id=session_id, message_pk=message_pk))  # not refused: the sweep re-sends it
        for travelling in (TurnJob(session_id=session_id, message_pk=message_pk, task_tool_execution_pk=1),
                           SessionJob(session_id=session_id, kind="step")):
            with pytest.raises(JobRefused):
                down.submit(travelling)
        submitted: list[str] = []
        sweep(factory, SessionEventLog(factory), submitted.append, lease_s=3600, pending_grace_s=0)
        assert session_id in submitted
    finally:  # no message left waiting in the suite's database for the distributed tests' sweeps
        with transaction(factory) as db:
            db.get(Message, message_pk).status = "answered"
