"""Under the gevent server, the turn's own bookkeeping never hands the one OS thread away.

A greenlet that yields on its way to the LLM call lets every other ready greenlet run first
(another request's response, a websocket's writes): its first token waits for them. And where
the turn must give way, it does: the route that submits it, the token it emits. Each case runs in
a new interpreter patched as gunicorn's gevent worker patches itself; most count the greenlet
switches of one call with ``greenlet.settrace``.
"""

from __future__ import annotations

from tests.support.gevent_child import run_patched

SWITCHES = """
    import greenlet
    def switches(fn):
        seen = []
        previous = greenlet.settrace(lambda event, args: seen.append(event))
        try:
            fn()
        finally:
            greenlet.settrace(previous)
        return len(seen)
"""


def test_arming_a_deadline_does_not_yield_once_the_scheduler_runs():
    # was: every call_later asked Thread.is_alive(), which gevent answers by yielding to the hub
    # (a failed non-blocking try of the thread's lock), while the scheduler's lock was held
    out = run_patched(SWITCHES + """
    import gevent
    from mojodex_core.execution.scheduler import DeadlineScheduler
    scheduler = DeadlineScheduler()
    first = scheduler.call_later(60, lambda: None)  # starts the thread
    gevent.sleep(0.01)  # it runs, and waits for the deadline
    counts = [switches(lambda: scheduler.call_later(30, lambda: None)) for _ in range(3)]
    counts.append(switches(first.cancel))
    print(counts)
    """).stdout.strip()
    assert out == "[0, 0, 0, 0]"


def test_watching_a_stream_for_cancellation_does_not_yield_once_the_watcher_runs():
    out = run_patched(SWITCHES + """
    import threading
    import gevent
    from mojodex_core.llm.streaming import _Watchlist

    class Stub:
        def __init__(self):
            self.cancel = threading.Event()
        def interrupt(self):
            pass

    watchlist = _Watchlist()
    watchlist.add(Stub())  # starts the thread
    gevent.sleep(0.01)
    print([switches(lambda: watchlist.add(Stub())) for _ in range(3)])
    """).stdout.strip()
    assert out == "[0, 0, 0]"


def test_a_session_whose_queue_is_drained_lets_go_of_the_runner_without_yielding():
    # was: Condition's ownership check on a plain Lock yields under gevent, so the end of every
    # session's drain handed the thread away with the runner's lock held (a submit meanwhile waited)
    out = run_patched(SWITCHES + """
    import threading
    from background.runner import ThreadTurnRunner
    runner = ThreadTurnRunner(lambda job, cancel: None, max_workers=2)
    cancel = threading.Event()
    runner._running["s"] = (None, cancel)  # as submit leaves it for _drain
    print(switches(lambda: runner._drain("s", cancel)), runner.busy_sessions())
    """).stdout.strip()
    assert out == "0 []"


def test_recording_an_llm_call_does_not_yield():
    # was: the recorder's Condition sat on a plain Lock, so waking its writer yielded, lock held
    out = run_patched(SWITCHES + """
    import tempfile
    from sqlalchemy import create_engine
    from mojodex_core.execution.llm_calls import SpooledLLMCallRecorder
    recorder = SpooledLLMCallRecorder(create_engine("sqlite://"), tempfile.mkdtemp(), start=False)
    row = {"label": "TEST", "llm_call_pk": None}
    print(switches(lambda: recorder.record_row(dict(row))), recorder.pending)
    """).stdout.strip()
    assert out == "0 1"


def test_a_flushed_token_reaches_the_websocket_writer_before_the_stream_is_read_on():
    # was: with the LLM's chunks already buffered, the turn read its whole stream without waiting,
    # and the first token event sat in the writer's queue until the turn's end (2 ms in the bench)
    out = run_patched("""
    import gevent
    from gevent.queue import Queue
    from mojodex_core.execution.coalescer import TokenCoalescer
    outbox, sent = Queue(), []
    def writer():  # as a websocket's writer greenlet sends what emit queued
        while True:
            sent.append(outbox.get())
    gevent.spawn(writer)
    gevent.sleep(0)
    coalescer = TokenCoalescer(lambda channel, text: outbox.put(text), interval_ms=30)
    coalescer.add("mojo", "Hello")  # the window is open: sent at once
    first = list(sent)
    coalescer.add("mojo", " world")  # within the window: held back, nothing to send yet
    print(first, list(sent))
    """).stdout.strip()
    assert out == "['Hello'] ['Hello']"


def test_a_submitted_turn_starts_before_the_submitting_route_goes_on():
    # was: the turn's greenlet started only once the route had written its response (0.7 ms of
    # the first-token time in the bench); the route now gives way as it submits
    out = run_patched("""
    import gevent
    from background.runner import ThreadTurnRunner
    from mojodex_core.execution.jobs import TurnJob
    started = []
    def handler(job, cancel):
        started.append(job.message_pk)
        gevent.sleep(0.01)  # its first wait: the LLM request is out
    runner = ThreadTurnRunner(handler, max_workers=4)
    # A warm pool, as in a serving process: a fresh one yields by itself while it starts a thread.
    runner.submit(TurnJob(session_id="warm-up", message_pk=0))
    assert runner.wait_idle(5)
    gevent.sleep(0.05)
    del started[:]
    runner.submit(TurnJob(session_id="s1", message_pk=1))
    at_return = list(started)
    runner.submit(TurnJob(session_id="s1", message_pk=2))  # queued behind the first: not started
    print(at_return, list(started), runner.wait_idle(5), started)
    """).stdout.strip()
    assert out == "[1] [1] True [1, 2]"
