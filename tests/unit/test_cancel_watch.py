"""The LLM cancel watcher: one thread for every watched stream, never touching a stopped one."""

from __future__ import annotations

import threading
import time

from mojodex_core.llm.streaming import CancelWatcher, _Watchlist


class FakeStream:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


def watcher_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "llm-cancel-watch")


def test_one_thread_watches_every_stream_and_interrupts_only_the_cancelled_one():
    streams = [FakeStream() for _ in range(20)]
    cancels = [threading.Event() for _ in streams]
    watchers = [CancelWatcher(c, s) for c, s in zip(cancels, streams, strict=True)]
    try:
        assert watcher_threads() == 1
        cancels[7].set()
        assert streams[7].closed.wait(2.0)
        time.sleep(0.15)  # a few more polls
        assert [i for i, s in enumerate(streams) if s.closed.is_set()] == [7]
    finally:
        for w in watchers:
            w.stop()


def test_a_stopped_watcher_never_interrupts_its_stream():
    stream, cancel = FakeStream(), threading.Event()
    CancelWatcher(cancel, stream).stop()
    cancel.set()  # the stream finished, its connection may serve another call by now
    assert not stream.closed.wait(0.3)


def test_a_watcher_added_with_cancel_already_set_interrupts_at_once():
    stream, cancel = FakeStream(), threading.Event()
    cancel.set()
    watcher = CancelWatcher(cancel, stream)
    try:
        assert stream.closed.wait(2.0)
    finally:
        watcher.stop()


class CountingCondition(threading.Condition):
    notified = 0

    def notify(self, n: int = 1) -> None:
        type(self).notified += 1
        super().notify(n)


class StubWatcher:
    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.interrupted = threading.Event()

    def interrupt(self) -> None:
        self.interrupted.set()


def test_the_watcher_thread_is_woken_only_when_it_had_nothing_to_watch():
    # A watched list's thread polls every CANCEL_POLL_S: waking it at every new stream cost one
    # more thread switch per LLM call, for nothing.
    watchlist = _Watchlist()
    watchlist._cond = CountingCondition()
    watchlist._thread.name = "test-cancel-watch"  # not the process's watcher, which another test counts
    stubs = [StubWatcher() for _ in range(3)]
    watchlist.add(stubs[0])  # starts the thread
    woken = CountingCondition.notified
    for stub in stubs[1:]:
        watchlist.add(stub)
    assert CountingCondition.notified == woken
    stubs[2].cancel.set()  # still seen within a poll
    assert stubs[2].interrupted.wait(2.0)
    for stub in stubs[:2]:
        watchlist.remove(stub)
    late = StubWatcher()
    late.cancel.set()
    watchlist.add(late)  # the list was empty again: the sleeping thread is woken
    assert late.interrupted.wait(2.0)
    assert CountingCondition.notified == woken + 1
