"""ThreadTurnRunner: FIFO per session, no overlap within a session, parallel across sessions,
duplicates ignored, cancel."""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator

import pytest

from background.runner import JobRefused, ThreadTurnRunner, TurnJob

Handler = Callable[[TurnJob, threading.Event], None]


@pytest.fixture
def make_runner() -> Iterator[Callable[..., ThreadTurnRunner]]:
    runners: list[ThreadTurnRunner] = []

    def make(handler: Handler, max_workers: int = 8) -> ThreadTurnRunner:
        runner = ThreadTurnRunner(handler, max_workers=max_workers)
        runners.append(runner)
        return runner

    yield make
    for runner in runners:
        runner.shutdown(wait=True)


def test_fifo_per_session_without_overlap(make_runner):
    lock = threading.Lock()
    active: dict[str, int] = defaultdict(int)
    overlaps: list[str] = []
    done: dict[str, list[int]] = defaultdict(list)

    def handler(job: TurnJob, _cancel: threading.Event) -> None:
        with lock:
            active[job.session_id] += 1
            if active[job.session_id] > 1:
                overlaps.append(job.session_id)
        time.sleep(0.005)
        with lock:
            active[job.session_id] -= 1
            done[job.session_id].append(job.message_pk)

    runner = make_runner(handler)
    for pk in range(1, 21):
        for session in ("a", "b", "c"):
            runner.submit(TurnJob(session, pk))
    assert runner.wait_idle(10)
    assert overlaps == []
    assert dict(done) == {s: list(range(1, 21)) for s in ("a", "b", "c")}


def test_sessions_run_in_parallel(make_runner):
    barrier = threading.Barrier(3, timeout=5)
    passed: list[str] = []

    def handler(job: TurnJob, _cancel: threading.Event) -> None:
        barrier.wait()  # breaks (and raises) unless all three sessions run at the same time
        passed.append(job.session_id)

    runner = make_runner(handler)
    for session in ("a", "b", "c"):
        runner.submit(TurnJob(session, 1))
    assert runner.wait_idle(10)
    assert sorted(passed) == ["a", "b", "c"]


def test_duplicate_submits_are_ignored_while_queued_and_requeued_while_running(make_runner):
    # A submit equal to the running job is a retry of a message whose turn is failing: before
    # the fix it was dropped, and the retried message stayed "pending" with no turn to answer it.
    # (The turn's own status check makes a real duplicate a no-op.)
    release = threading.Event()
    started = threading.Event()
    calls: list[int] = []

    def handler(job: TurnJob, _cancel: threading.Event) -> None:
        calls.append(job.message_pk)
        if job.message_pk == 1 and not started.is_set():
            started.set()
            release.wait(5)

    runner = make_runner(handler)
    runner.submit(TurnJob("s", 1))
    assert started.wait(5)
    runner.submit(TurnJob("s", 1))  # running: queued again
    runner.submit(TurnJob("s", 2))
    runner.submit(TurnJob("s", 2))  # queued already: ignored
    release.set()
    assert runner.wait_idle(5)
    assert calls == [1, 1, 2]
    runner.submit(TurnJob("s", 1))  # done: a resubmit (a retry) runs again
    assert runner.wait_idle(5)
    assert calls == [1, 1, 2, 1]


def test_cancel_stops_the_running_turn_and_keeps_the_queue(make_runner):
    # Dropping the queue (before the fix) left the queued messages "pending" with no error.
    started = threading.Event()
    calls: list[tuple[str, int, bool]] = []

    def handler(job: TurnJob, cancel: threading.Event) -> None:
        if job.message_pk == 1:
            started.set()
            calls.append((job.session_id, 1, cancel.wait(5)))
        else:
            calls.append((job.session_id, job.message_pk, cancel.is_set()))

    runner = make_runner(handler)
    runner.submit(TurnJob("a", 1))
    assert started.wait(5)
    runner.submit(TurnJob("a", 2))
    runner.submit(TurnJob("b", 2))
    runner.cancel("a")
    assert runner.wait_idle(5)
    assert sorted(calls) == [("a", 1, True), ("a", 2, False), ("b", 2, False)]
    runner.submit(TurnJob("a", 3))  # the session is usable again, with a fresh cancel event
    assert runner.wait_idle(5)
    assert calls[-1] == ("a", 3, False)


def test_cancel_before_the_turn_starts_reaches_it_and_it_still_runs(make_runner):
    """With every worker busy, a cancelled session's turn still runs (and fails itself, visibly),
    with its cancel set: the stop was for it (before the fix a new event replaced it, so the
    stop was lost and the turn answered). The turn queued behind it gets a fresh event."""
    release = threading.Event()
    calls: list[tuple[str, int, bool]] = []

    def handler(job: TurnJob, cancel: threading.Event) -> None:
        calls.append((job.session_id, job.message_pk, cancel.is_set()))
        if job.session_id == "busy":
            release.wait(5)

    runner = make_runner(handler, max_workers=1)
    runner.submit(TurnJob("busy", 1))
    runner.submit(TurnJob("later", 1))
    runner.cancel("later")
    runner.submit(TurnJob("later", 2))
    release.set()
    assert runner.wait_idle(5)
    assert calls == [("busy", 1, False), ("later", 1, True), ("later", 2, False)]


def test_a_crashing_turn_does_not_stop_the_session(make_runner):
    calls: list[int] = []

    def handler(job: TurnJob, _cancel: threading.Event) -> None:
        calls.append(job.message_pk)
        if job.message_pk == 1:
            raise RuntimeError("boom")

    runner = make_runner(handler)
    runner.submit(TurnJob("s", 1))
    runner.submit(TurnJob("s", 2))
    assert runner.wait_idle(5)
    assert calls == [1, 2]


def test_shutdown_cancels_running_turns(make_runner):
    started = threading.Event()
    seen: list[bool] = []

    def handler(_job: TurnJob, cancel: threading.Event) -> None:
        started.set()
        seen.append(cancel.wait(5))

    runner = make_runner(handler)
    runner.submit(TurnJob("s", 1))
    assert started.wait(5)
    runner.shutdown(wait=True)
    assert seen == [True]


def test_a_live_server_s_teardown_cancels_a_turn_that_outlives_its_test(make_runner):
    from types import SimpleNamespace

    from tests.support.live import LiveServer

    started = threading.Event()

    def lingering(_job: TurnJob, cancel: threading.Event) -> None:
        started.set()
        cancel.wait(30)  # a turn that would run on into the next test

    runner = make_runner(lingering)
    runner.submit(TurnJob(session_id="s1", message_pk=1))
    assert started.wait(2)
    assert runner.busy_sessions() == ["s1"]
    server = SimpleNamespace(platform=SimpleNamespace(runner=runner))
    with pytest.raises(AssertionError, match=r"sessions \['s1'\], their running turn cancelled$"):
        LiveServer.wait_idle(server, 0.1)  # type: ignore[arg-type]
    assert runner.busy_sessions() == [] and runner.wait_idle(0)


def test_the_distributed_runner_names_the_sessions_it_still_answers(database_url):
    from sqlalchemy import update
    from sqlalchemy.orm import sessionmaker

    from background.distributed.runner import CeleryTurnRunner
    from mojodex_core.db import make_engine
    from mojodex_core.db.models import Message
    from tests.unit._rows import session_row

    engine = make_engine(database_url)
    factory = sessionmaker(engine)
    with factory.begin() as db:
        sessions = [session_row(db) for _ in range(4)]
        db.flush()
        for session_id, sender, status in zip(sessions, ("user", "user", "user", "assistant"),
                                              ("pending", "processing", "answered", "processing"), strict=True):
            db.add(Message(session_id=session_id, sender=sender, event_name="user_message", text="t", status=status,
                           message_id=uuid.uuid4().hex, data={}))
    runner = CeleryTurnRunner(None, None, factory)  # type: ignore[arg-type]  # only the database is read
    try:
        assert set(sessions[:2]) <= set(runner.busy_sessions())
        assert not set(sessions[2:]) & set(runner.busy_sessions())
    finally:  # no message left waiting in the suite's database for the distributed tests' sweeps
        with factory.begin() as db:
            db.execute(update(Message).where(Message.session_id.in_(sessions)).values(status="answered"))
        engine.dispose()


def test_a_submit_refused_by_a_shut_down_runner_leaves_no_session_busy() -> None:
    # was: the session's placeholder stayed in the running map for good: every later submit of
    # the session was queued behind a drain that never came, and wait_idle timed out
    runner = ThreadTurnRunner(lambda job, cancel: None, max_workers=1)
    runner.shutdown()
    with pytest.raises(JobRefused):  # named, for the submitter to settle its message (failures.fail_refused)
        runner.submit(TurnJob(session_id="s", message_pk=1))
    assert runner.busy_sessions() == []
    assert runner.wait_idle(0.1)


def test_a_drain_the_broker_cannot_take_logs_what_becomes_of_it(caplog):
    # was: "the sweep will retry" for every drain, even one carrying a job its submitter now refuses
    # (the sweep finds pending messages, never a travelling job)
    import logging

    from background.distributed.runner import send_drain

    class Down:
        def send_task(self, name: str, args: list) -> None:
            raise ConnectionError("broker unreachable")

    with caplog.at_level(logging.ERROR, logger="mojodex.runner"):
        assert send_drain(Down(), "s") is False
        assert send_drain(Down(), "s", [{"type": "session_job", "kind": "step", "payload": {}}]) is False
    plain, travelling = [record.getMessage() for record in caplog.records]
    assert "the sweep will send it again" in plain
    assert "its 1 travelling job(s) are refused" in travelling and "sweep" not in travelling
