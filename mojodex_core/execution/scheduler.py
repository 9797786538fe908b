"""One process-wide thread that runs small callbacks at a deadline.

Token coalescers use it to flush text held back at the end of a window, so a model that
stalls mid-stream does not hold the last words back until its next token; turns use it for
their watchdog (the turn timeout), which almost every turn cancels. One thread for all
sessions, instead of one timer thread per window or per turn (a `threading.Timer` costs a
thread start per turn, on the path to the first token).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

from mojodex_core.concurrency import ProcessThread

log = logging.getLogger("mojodex.scheduler")

# Cancelled entries stay in the heap until popped; it is rebuilt without them once they are
# this many and at least half of it (a 120 s watchdog per turn would otherwise pile up).
_COMPACT_AT = 256


class Scheduled:
    """A pending call; `cancel()` makes sure it does not run (if it has not started)."""

    __slots__ = ("_scheduler", "callback")

    def __init__(self, scheduler: DeadlineScheduler, callback: Callable[[], None]) -> None:
        self._scheduler = scheduler
        self.callback: Callable[[], None] | None = callback

    def cancel(self) -> None:
        self._scheduler._cancel(self)

    @property
    def cancelled(self) -> bool:
        return self.callback is None


class DeadlineScheduler:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Scheduled]] = []
        self._ids = itertools.count()
        self._cancelled = 0
        self._thread = ProcessThread(self._run, "deadline-scheduler")

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> Scheduled:
        handle = Scheduled(self, callback)
        deadline = time.monotonic() + max(delay_s, 0.0)
        with self._cond:
            wake = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, next(self._ids), handle))
            self._thread.ensure_started()
            if wake:  # only a new earliest deadline changes how long the thread sleeps
                self._cond.notify()
        return handle

    def pending(self) -> int:
        """Calls still to run (cancelled ones not counted)."""
        with self._cond:
            return len(self._heap) - self._cancelled

    def _cancel(self, handle: Scheduled) -> None:
        with self._cond:
            if handle.callback is None:
                return
            handle.callback = None  # frees what the callback holds now, not at its deadline
            self._cancelled += 1
            if self._cancelled >= _COMPACT_AT and self._cancelled * 2 >= len(self._heap):
                self._heap = [entry for entry in self._heap if entry[2].callback is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, _, handle = self._heap[0]
                if handle.callback is None:
                    heapq.heappop(self._heap)
                    self._cancelled -= 1
                    continue
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                callback, handle.callback = handle.callback, None
            try:
                callback()
            except Exception:  # one failing callback must not stop the others
                log.exception("scheduled callback failed")


scheduler = DeadlineScheduler()
