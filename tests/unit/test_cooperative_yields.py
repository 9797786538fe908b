"""Under the gevent server, the turn's own bookkeeping never hands the one OS thread away.

A greenlet that yields on its way to the LLM call lets every other ready greenlet run first
(another request's response, a websocket's writes): its first token waits for them. Each case
runs in a new interpreter patched as gunicorn's gevent worker patches itself, and counts the
greenlet switches of one call with ``greenlet.settrace``.
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
