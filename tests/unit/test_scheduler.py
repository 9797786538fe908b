"""The process-wide deadline scheduler: order, cancellation, and no pile-up of cancelled calls."""

from __future__ import annotations

import threading
import time

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
    done = threading.Event()
    thread = ProcessThread(lambda: (runs.append(threading.current_thread().name), done.set()), "test-once")
    assert thread.ensure_started() is True
    assert done.wait(5)
    deadline = time.monotonic() + 5
    while thread.ensure_started() is False:  # its flag is cleared as its target returns
        assert time.monotonic() < deadline, "never seen as stopped"
        time.sleep(0.01)
    assert runs[0] == "test-once"


def test_a_forked_child_starts_its_own_scheduler_thread() -> None:
    import os

    scheduler = DeadlineScheduler()
    scheduler.call_later(60, lambda: None)  # the parent's thread runs
    time.sleep(0.2)  # and sleeps, its lock released (a lock held at the fork stays held in the child)
    pid = os.fork()
    if pid == 0:  # the child has no thread: the parent's did not survive the fork
        import signal

        signal.alarm(10)  # never a hung child
        fired = threading.Event()
        scheduler.call_later(0, fired.set)
        os._exit(0 if fired.wait(5) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
