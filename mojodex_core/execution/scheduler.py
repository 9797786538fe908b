"""One process-wide thread that runs small callbacks at a deadline.

Token coalescers use it to flush text held back at the end of a window, so a model that
stalls mid-stream does not hold the last words back until its next token. One thread for
all sessions, instead of one timer thread per window.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

log = logging.getLogger("mojodex.scheduler")


class DeadlineScheduler:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> None:
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + max(delay_s, 0.0), next(self._ids), callback))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="deadline-scheduler", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, _, callback = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
            try:
                callback()
            except Exception:  # one failing callback must not stop the others
                log.exception("scheduled callback failed")


scheduler = DeadlineScheduler()
