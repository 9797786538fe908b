"""Merges token deltas so a session gets at most one token event per interval."""

from __future__ import annotations

import threading
import time
from typing import Callable

from mojodex_core.concurrency import give_way
from mojodex_core.execution.scheduler import DeadlineScheduler
from mojodex_core.execution.scheduler import scheduler as default_scheduler

Flush = Callable[[str, str], None]  # (channel, text)


class TokenCoalescer:
    """Text arriving within an interval of the last event is merged into the next one.

    Held-back text is sent at the end of its window even when no further token comes.
    """

    def __init__(self, flush: Flush, interval_ms: int = 30, scheduler: DeadlineScheduler | None = None) -> None:
        self._flush = flush
        self._interval = interval_ms / 1000.0
        self._scheduler = scheduler or default_scheduler
        self._lock = threading.Lock()
        self._channel: str | None = None
        self._pending: list[str] = []
        self._last_flush = 0.0
        self._deadline_set = False
        self._closed = False

    def add(self, channel: str, text: str) -> None:
        if not text:
            return
        with self._lock:
            if self._closed:
                return
            flushed = False
            if self._channel is not None and channel != self._channel:
                flushed = self._flush_locked()  # never merge across channels: order between them matters
            self._channel = channel
            self._pending.append(text)
            elapsed = time.monotonic() - self._last_flush
            if elapsed >= self._interval:
                flushed = self._flush_locked() or flushed
            elif not self._deadline_set:
                self._deadline_set = True
                self._scheduler.call_later(self._interval - elapsed, self._on_deadline)
        if flushed:
            give_way()  # the event goes out now, not when the caller next waits (see concurrency)

    def _on_deadline(self) -> None:
        with self._lock:
            self._deadline_set = False
            if self._closed or not self._pending:
                return
            elapsed = time.monotonic() - self._last_flush
            if elapsed >= self._interval:
                self._flush_locked()
            else:  # a channel switch flushed since this deadline was set: wait for the new window
                self._deadline_set = True
                self._scheduler.call_later(self._interval - elapsed, self._on_deadline)

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        """Sends what is held back; nothing is sent after this."""
        with self._lock:
            self._flush_locked()
            self._closed = True

    def discard(self) -> None:
        """Drops what is held back (the turn failed); nothing is sent after this."""
        with self._lock:
            self._pending = []
            self._closed = True

    def _flush_locked(self) -> bool:
        """Sends what is held back; True when there was something to send."""
        if self._pending and self._channel is not None:
            text = "".join(self._pending)
            self._pending = []
            self._last_flush = time.monotonic()
            self._flush(self._channel, text)
            return True
        return False
