"""Running steps renew a heartbeat; a step whose heartbeat lapsed (its process died) is re-run once.

One thread per process: every ``interval_s`` it renews the heartbeat of the steps this process
runs, then looks for running steps of any process whose heartbeat is older than ``lapse_s``. Such
a step is marked ``lapsed`` (its slot is then re-run once, by whichever process takes the
``workflow_run`` message) or, when it was already the re-run, ``failed`` (visible, relaunchable).
The change is a conditional UPDATE, so two processes sweeping at once act once; it commits with
its event and its re-run message (``on_lapsed``), so a failure leaves the step running for the
next sweep rather than lapsed with nothing to run its slot again.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Callable, Iterator

from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import UserTaskExecution, UserWorkflowStepExecution

log = logging.getLogger("mojodex.workflow")

LAPSED = ("The step stopped: the process running it stopped renewing its heartbeat "
          "(it was probably restarted). It is run again once.")
LAPSED_TWICE = ("The step stopped twice: the process running it stopped renewing its heartbeat. "
                "Relaunch it to retry.")

# (session_id, user_task_execution_pk, step execution pk, re-run?, cutoff) -> marks the step with
# ``mark_lapsed`` in the transaction that publishes its event and stores its re-run message, then
# submits it; False when another sweep marked it first.
OnLapsed = Callable[[str, int, int, bool, datetime], bool]


def mark_lapsed(db: DbSession, step_pk: int, rerun: bool, cutoff: datetime) -> bool:
    """Marks a running step whose heartbeat is older than ``cutoff`` lapsed (``rerun``) or failed;
    False when it is no longer such a step (another sweep took it, or it ended)."""
    return db.execute(
        update(UserWorkflowStepExecution)
        .where(UserWorkflowStepExecution.user_workflow_step_execution_pk == step_pk,
               UserWorkflowStepExecution.status == "running",
               UserWorkflowStepExecution.heartbeat_at < cutoff)
        .values(status="lapsed" if rerun else "failed", error=LAPSED if rerun else LAPSED_TWICE,
                end_date=datetime.now(UTC))
    ).rowcount == 1


class Heartbeat:
    def __init__(self, factory: sessionmaker[DbSession], *, interval_s: float = 5.0, lapse_s: float = 30.0) -> None:
        if lapse_s <= interval_s:
            raise ValueError("the heartbeat lapse must be longer than its interval")
        self._factory = factory
        self.interval_s = interval_s
        self.lapse_s = lapse_s
        self._mine: dict[int, int] = {}  # step execution pk -> how many runners hold it
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_lapsed: OnLapsed | None = None

    def start(self, on_lapsed: OnLapsed) -> None:
        self._on_lapsed = on_lapsed
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="workflow-heartbeat", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def stopping(self) -> bool:
        """Whether ``stop`` was called: the process is shutting down (its runner next)."""
        return self._stop.is_set()

    @contextmanager
    def beating(self, step_execution_pk: int) -> Iterator[None]:
        with self._lock:
            self._mine[step_execution_pk] = self._mine.get(step_execution_pk, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._mine.pop(step_execution_pk, 1) - 1
                if left > 0:
                    self._mine[step_execution_pk] = left

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
                self.sweep()
            except Exception:  # a database hiccup must not stop the heartbeat for good
                log.exception("workflow heartbeat failed")

    def beat(self) -> int:
        with self._lock:
            pks = list(self._mine)
        if not pks:
            return 0
        with transaction(self._factory) as db:
            return db.execute(
                update(UserWorkflowStepExecution)
                .where(UserWorkflowStepExecution.user_workflow_step_execution_pk.in_(pks),
                       UserWorkflowStepExecution.status == "running")
                .values(heartbeat_at=datetime.now(UTC))
            ).rowcount

    def sweep(self) -> list[int]:
        """Marks the running steps whose heartbeat lapsed; returns their pks."""
        cutoff = datetime.now(UTC) - timedelta(seconds=self.lapse_s)
        with self._lock:
            mine = set(self._mine)
        with self._factory() as db:
            stale = db.execute(
                select(UserWorkflowStepExecution.user_workflow_step_execution_pk, UserWorkflowStepExecution.attempt,
                       UserTaskExecution.session_id, UserTaskExecution.user_task_execution_pk)
                .join(UserTaskExecution,
                      UserTaskExecution.user_task_execution_pk == UserWorkflowStepExecution.user_task_execution_fk)
                .where(UserWorkflowStepExecution.status == "running", UserWorkflowStepExecution.heartbeat_at < cutoff)
            ).all()
        lapsed = []
        for pk, attempt, session_id, execution_pk in stale:
            if pk in mine:
                continue  # this process runs it: alive, whatever the clock says
            rerun = attempt <= 1
            try:
                if self._on_lapsed is not None:
                    changed = self._on_lapsed(session_id, execution_pk, pk, rerun, cutoff)
                else:
                    with transaction(self._factory) as db:
                        changed = mark_lapsed(db, pk, rerun, cutoff)
            except Exception:  # nothing was committed: the step is still running, the next sweep retries
                log.exception("could not mark step execution %s (execution %s) lapsed", pk, execution_pk)
                continue
            if not changed:
                continue
            log.warning("step execution %s (execution %s) lapsed: %s", pk, execution_pk,
                        "re-running it" if rerun else "failed (it was the re-run)")
            lapsed.append(pk)
        return lapsed
