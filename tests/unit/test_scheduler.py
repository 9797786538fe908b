"""The process-wide deadline scheduler: order, cancellation, and no pile-up of cancelled calls."""

from __future__ import annotations

import threading
import time

import pytest

from mojodex_core.execution import scheduler as scheduler_module
from mojodex_core.execution.scheduler import DeadlineScheduler


def test_callbacks_run_in_deadline_order_on_one_thread() -> None:
    scheduler = DeadlineScheduler()
    ran: list[tuple[str, str]] = []
    done = threading.Event()
    scheduler.call_later(0.06, lambda: (ran.append(("late", threading.current_thread().name)), done.set()))
    scheduler.call_later(0.02, lambda: ran.append(("early", threading.current_thread().name)))
    assert done.wait(5)
    assert [name for name, _ in ran] == ["early", "late"]
    assert {thread for _, thread in ran} == {"deadline-scheduler"}


def test_an_earlier_deadline_added_later_wakes_the_sleeping_thread() -> None:
    scheduler = DeadlineScheduler()
    scheduler.call_later(30, lambda: None)  # the thread now sleeps for 30 s
    fired = threading.Event()
    started = time.monotonic()
    scheduler.call_later(0.01, fired.set)
    assert fired.wait(5)
    assert time.monotonic() - started < 5


def test_a_cancelled_call_never_runs_and_drops_its_callback() -> None:
    scheduler = DeadlineScheduler()
    fired = threading.Event()
    handle = scheduler.call_later(0.05, fired.set)
    handle.cancel()
    handle.cancel()  # twice is harmless
    assert handle.cancelled and handle.callback is None  # what the callback held is freed at once
    assert scheduler.pending() == 0
    marker = threading.Event()
    scheduler.call_later(0.1, marker.set)
    assert marker.wait(5)
    assert not fired.is_set()


def test_cancelling_after_the_call_ran_is_harmless() -> None:
    scheduler = DeadlineScheduler()
    fired = threading.Event()
    handle = scheduler.call_later(0, fired.set)
    assert fired.wait(5)
    handle.cancel()
    assert scheduler.pending() == 0


def test_cancelled_watchdogs_do_not_pile_up(monkeypatch) -> None:  # noqa: ANN001
    # A turn arms a long watchdog and cancels it when it ends: thousands of turns a minute must
    # not leave thousands of entries in the heap until their deadlines, minutes later.
    monkeypatch.setattr(scheduler_module, "_COMPACT_AT", 50)
    scheduler = DeadlineScheduler()
    for _ in range(1000):
        scheduler.call_later(120, lambda: None).cancel()
    live = scheduler.call_later(120, lambda: None)
    assert scheduler.pending() == 1
    assert len(scheduler._heap) < 100
    live.cancel()


def test_a_failing_callback_does_not_stop_the_others() -> None:
    scheduler = DeadlineScheduler()
    fired = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    scheduler.call_later(0, boom)
    scheduler.call_later(0.01, fired.set)
    assert fired.wait(5)


def test_the_process_thread_starts_once_and_again_after_its_target_returned() -> None:
    from mojodex_core.concurrency import ProcessThread

    runs: list[str] = []
    running, release = threading.Event(), threading.Event()

    def target() -> None:
        runs.append(threading.current_thread().name)
        running.set()
        release.wait(5)

    thread = ProcessThread(target, "test-once")
    assert thread.ensure_started() is True
    assert running.wait(5)
    assert thread.ensure_started() is False  # running: not started twice
    release.set()
    deadline = time.monotonic() + 5
    while thread.ensure_started() is False:  # its flag is cleared as its target returns
        assert time.monotonic() < deadline, "never seen as stopped"
        time.sleep(0.01)
    assert runs[0] == "test-once"
    assert len(runs) in (1, 2)  # the restart's run may not have begun yet


def test_a_process_thread_that_failed_to_start_is_started_at_the_next_use(monkeypatch) -> None:  # noqa: ANN001
    # was: the flag was set before Thread.start(), so one failed start (no thread left to start)
    # left the scheduler without a thread for good: no watchdog or token deadline ever fired again
    from mojodex_core.concurrency import ProcessThread

    ran = threading.Event()
    thread = ProcessThread(ran.set, "test-retry")
    real_start = threading.Thread.start

    def failing_start(self) -> None:  # noqa: ANN001
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", failing_start)
    with pytest.raises(RuntimeError):
        thread.ensure_started()
    monkeypatch.setattr(threading.Thread, "start", real_start)
    assert thread.ensure_started() is True
    assert ran.wait(5)


def test_a_forked_child_starts_its_own_scheduler_thread() -> None:
    import os
    import signal

    scheduler = DeadlineScheduler()
    scheduler.call_later(60, lambda: None)  # the parent's thread runs
    time.sleep(0.2)  # and sleeps, its lock released (a lock held at the fork stays held in the child)
    pid = os.fork()
    if pid == 0:  # the child has no thread: the parent's did not survive the fork
        code = 1
        try:
            # Killed, never unwound into pytest (whose timeout handler the child inherits).
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(10)
            fired = threading.Event()
            scheduler.call_later(0, fired.set)
            code = 0 if fired.wait(5) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
