"""Runs background jobs (title and summary of an execution...) off the request and turn threads.

Same shape as the turn runner: a submit Protocol, threads in the embedded default, so a later
scale-out can move both to a distributed queue (Celery: one task per handler, autoretry with
the same bounded backoff). A job that raises is retried after a bounded exponential backoff;
after its last attempt the handler's ``give_up`` records the failure visibly.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from mojodex_core.execution.scheduler import DeadlineScheduler, scheduler

log = logging.getLogger("mojodex.jobs")


class Job(Protocol):
    """A frozen dataclass naming its work; ``attempt`` counts from 1."""

    attempt: int


class JobHandler(Protocol):
    """``run`` does the job; a job the process quits in the middle of must be left for the next
    start to resume (the title job stays "pending": ``resume_title_summaries``)."""

    def run(self, job: Any) -> None: ...

    def give_up(self, job: Any, error: BaseException) -> None: ...


class JobRunner(Protocol):
    def submit(self, job: Job) -> None: ...

    def shutdown(self, wait: bool = True) -> None: ...


def backoff_s(attempt: int, base_s: float, max_s: float) -> float:
    """Wait before attempt ``attempt + 1``: base, 2*base, 4*base... capped."""
    return min(base_s * (2 ** (attempt - 1)), max_s)


class ThreadJobRunner:
    """In-process runner: a small thread pool; retries are re-submitted by the deadline scheduler."""

    def __init__(
        self,
        handlers: dict[type, JobHandler],
        *,
        max_attempts: int = 3,
        backoff_base_s: float = 2.0,
        max_backoff_s: float = 60.0,
        max_workers: int = 4,
        deadlines: DeadlineScheduler | None = None,
    ) -> None:
        self._handlers = handlers
        self.max_attempts = max_attempts
        self._backoff_base_s = backoff_base_s
        self._max_backoff_s = max_backoff_s
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="job")
        self._deadlines = deadlines or scheduler
        self._lock = threading.Condition()
        self._in_flight = 0  # submitted or waiting for a retry, not finished
        self._closed = False

    def submit(self, job: Job) -> None:
        with self._lock:  # held while submitting: a shutdown in between would refuse the job
            if self._closed:
                log.warning("job runner closed; dropping %s", job)
                return
            self._in_flight += 1
            self._pool.submit(self._run, job)

    def _run(self, job: Job) -> None:
        handler = self._handlers[type(job)]
        try:
            handler.run(job)
        except Exception as exc:  # noqa: BLE001 - every failure is retried, then given up visibly
            if self._closed:
                # Quitting (its LLM call cancelled, say): not a failure of the job, which stays
                # claimed for the next start; giving it up would mark it failed for good.
                log.info("job %s interrupted by shutdown (%s); the next start runs it again", job, exc)
                self._done()
                return
            if job.attempt < self.max_attempts:
                delay = backoff_s(job.attempt, self._backoff_base_s, self._max_backoff_s)
                log.warning("job %s failed (attempt %d/%d): %s; retrying in %.2f s",
                            type(job).__name__, job.attempt, self.max_attempts, exc, delay)
                retry = dataclasses.replace(job, attempt=job.attempt + 1)
                self._deadlines.call_later(delay, lambda: self._retry(retry))
                return  # still in flight
            log.error("job %s gave up after %d attempt(s): %s", job, job.attempt, exc)
            try:
                handler.give_up(job, exc)
            except Exception:
                log.exception("recording the give-up of %s failed", job)
        self._done()

    def _retry(self, job: Job) -> None:
        with self._lock:
            if not self._closed:
                self._pool.submit(self._run, job)
                return
        self._done()

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def shutdown(self, wait: bool = True) -> None:
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=wait, cancel_futures=True)
