"""Runs assistant turns off the request thread, one turn at a time per session.

The interface is two calls, submit and cancel, so that a distributed worker queue can
replace the in-process threads without touching the routes.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Protocol

from mojodex_core.concurrency import give_way
from mojodex_core.execution.jobs import JobRefused, SessionJob, TurnJob

log = logging.getLogger("mojodex.runner")

__all__ = ["JobRefused", "SessionJob", "ThreadTurnRunner", "TurnJob", "TurnRunner"]


TurnHandler = Callable[[TurnJob | SessionJob, threading.Event], None]


class TurnRunner(Protocol):
    """Runs a session's jobs one at a time, in the order submitted (per session).

    ThreadTurnRunner here (embedded); CeleryTurnRunner in background/distributed/runner.py."""

    def submit(self, job: TurnJob | SessionJob) -> None:
        """Queues the job; raises JobRefused when it cannot (the caller's message is then its to settle)."""
        ...

    def cancel(self, session_id: str) -> None: ...

    def shutdown(self, wait: bool = True) -> None: ...


class ThreadTurnRunner:
    """In-process runner: a thread pool, with a FIFO per session so turns never overlap."""

    # How long a submit waits for another submit's drain of its session to be handed to the pool
    # (it takes microseconds): past it, something went wrong, and the job is refused, never left waiting.
    start_wait_s = 30.0

    def __init__(self, handler: TurnHandler, max_workers: int = 64) -> None:
        self._handler = handler
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="turn")
        # Re-entrant for what Condition does with it: on a plain Lock, Condition's ownership check
        # tries it without blocking, and under gevent a failed try yields to the hub, so every
        # notify_all (a session's queue drained) handed the thread away with the lock held.
        self._lock = threading.RLock()
        self._queues: dict[str, deque[TurnJob | SessionJob]] = {}
        self._running: dict[str, tuple[TurnJob | SessionJob, threading.Event]] = {}
        self._idle = threading.Condition(self._lock)
        # Sessions whose drain is being handed to the pool (outside the lock), and their waiters.
        self._starting: set[str] = set()
        self._started = threading.Condition(self._lock)

    def submit(self, job: TurnJob | SessionJob) -> None:
        with self._lock:
            # A drain being handed to the pool: its outcome first. Queued behind it, this job would be
            # dropped with the session's queue if the pool refused it, once its caller was told it was
            # taken. After a refusal the session is free: this job tries a drain of its own (refused too,
            # or run should the pool take it).
            if not self._started.wait_for(lambda: job.session_id not in self._starting, self.start_wait_s):
                raise JobRefused(f"the runner refused session {job.session_id}'s job: its drain never started")
            queue = self._queues.setdefault(job.session_id, deque())
            if job in queue:
                return  # already waiting: the turn's own status check stops any other duplicate
            # A job equal to the running one is queued again on purpose: it is a retry of a
            # message whose turn failed, sent while that turn was still winding down.
            queue.append(job)
            if job.session_id in self._running:
                return  # its drain takes this job in turn
            # The first job's cancel event, from now on: a stop sent before a worker is free (every
            # worker busy) is for this turn, and must not be lost.
            cancel = threading.Event()
            self._running[job.session_id] = (job, cancel)
            self._starting.add(job.session_id)
        # Outside the lock: under gevent the executor's own bookkeeping may yield, and another
        # submit would then wait for this one's lock.
        try:
            self._pool.submit(self._drain, job.session_id, cancel)
        except BaseException as exc:  # shut down, or no thread to start: the session must not stay busy
            with self._lock:
                self._running.pop(job.session_id, None)
                self._queues.pop(job.session_id, None)  # this job alone: any other waited (above)
                self._idle.notify_all()
            if isinstance(exc, Exception):  # the executor's RuntimeError (shut down, interpreter exiting, no thread)
                raise JobRefused(f"the runner refused session {job.session_id}'s job: {exc}") from exc
            raise
        finally:  # whatever ends the hand-over, the submits waiting for it go on
            with self._lock:
                self._started_with(job.session_id)
        # Under gevent, the turn starts now and runs up to its first wait (its LLM request sent)
        # before the caller goes on: a route writes its response after that, not before it.
        give_way()

    def _started_with(self, session_id: str) -> None:
        """The session's drain is taken or refused: the submits waiting for it go on (under the lock)."""
        self._starting.discard(session_id)
        self._started.notify_all()

    def _drain(self, session_id: str, cancel: threading.Event) -> None:
        while True:
            with self._lock:
                queue = self._queues.get(session_id)
                if not queue:
                    self._queues.pop(session_id, None)
                    self._running.pop(session_id, None)
                    self._idle.notify_all()
                    return
                job = queue.popleft()
                self._running[session_id] = (job, cancel)
            try:
                self._handler(job, cancel)
            except Exception:  # the handler records its own failures; this is the last net
                log.exception("turn crashed: session=%s job=%s", job.session_id, job)
            cancel = threading.Event()  # each queued job after the first gets its own

    def cancel(self, session_id: str) -> None:
        """Stops the session's running turn, or, when none runs yet (every worker busy), the
        turn submitted first, which then starts cancelled. Per session: in a home chat session
        shared by several executions, that is whichever turn runs. Turns queued behind it still
        run: each then sees why it cannot answer (e.g. its execution was deleted) and fails
        visibly, with an error event, instead of staying pending forever."""
        with self._lock:
            current = self._running.get(session_id)
            if current is not None:
                current[1].set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._lock:
            return self._idle.wait_for(lambda: not self._running, timeout=timeout)

    def busy_sessions(self) -> list[str]:
        """The sessions with a turn running or queued."""
        with self._lock:
            return list(self._running)

    def shutdown(self, wait: bool = True) -> None:
        with self._lock:
            for _job, cancel in self._running.values():
                cancel.set()
            self._queues.clear()
        self._pool.shutdown(wait=wait, cancel_futures=True)
