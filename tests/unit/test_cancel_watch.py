"""The LLM cancel watcher: one thread for every watched stream, never touching a stopped one."""

from __future__ import annotations

import threading
import time

from mojodex_core.llm.streaming import CancelWatcher


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
