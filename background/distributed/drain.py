"""A worker drains one session: claim its lease, answer its pending messages in order, release.

Run by the Celery task ``mojodex.drain_session`` (background/distributed/worker.py). Kept free of
Celery so it can be tested against a database alone.

- Order: messages are answered oldest first (message_pk), one at a time, under the session's
  lease; two workers never run one session because the claim is one conditional UPDATE.
- One message per claim: the release is followed by a look for the next message (after the
  release has committed: session_claims.release_and_look); a message found there is answered
  under a new claim, followed at once by the first look (orphans, oldest pending) in one read.
- A drain task that finds the session held returns: the holder answers the new message too,
  because after releasing it checks for messages that arrived meanwhile and claims again.
- Heartbeat: a thread renews the lease every third of it and watches the session's cancel flag;
  a renewal refused (the lease was taken over after a stall) cancels the turn, whose completion
  is then refused by the fence check (session_claims.check_fence).
- Stop: a stop is for the first job in the session's line, as in-process. A cancel flag is read
  when a job starts, at each beat and when it ends. It names the turn it is for: the first message
  waiting or running when the stop was sent (``StopFlag.first_pk``) and what had closed that
  message's last turn then (``StopFlag.closed_by``, its answer_message_fk). While that turn is
  open, the flag stops it (even one that waited for a worker) and is consumed, also when the turn
  ended before seeing it, so the turns queued behind still run; a turn of an older message (one
  sent again, after a failure) leaves it to that turn. Once that turn closed with an answer or an
  error row (``failures.record_failure``: a failed message sent again keeps its error as
  answer_message_fk), the flag is stale (it applied, or came too late) and dropped; no clock
  decides it. A failure through ``failures.mark_failed`` (the last resort: no error row) leaves
  answer_message_fk as it was: a flag for that turn, if not consumed by it (set after its end),
  still applies to that message when it is sent again, until consumed or expired (300 s). A flag
  that names no turn (raised by a backend that could not read the session, or by an earlier one)
  is its turn's if raised since the message was first sent (the flag's time and the message's
  ``created_at``, by the clocks of the backends that took them, assumed in sync:
  ``Drainer.sent_at``), stale and dropped if before. For a job with no message of its own (a tool
  follow-up, a session job), only a flag raised since the job started is its own.
- Shutdown: between turns, ``stopping()`` ends the drain; the caller hands the rest back.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC
from typing import Callable, Protocol

from sqlalchemy import Row, bindparam, select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from background.distributed.sweep import requeue_orphans
from mojodex_core.db import transaction
from mojodex_core.db.models import MESSAGE_UNANSWERED, Message
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import mark_failed
from mojodex_core.execution.jobs import SessionJob, TurnJob
from mojodex_core.execution.session_claims import (
    Claim,
    Look,
    Waiting,
    check_fence,
    claim_and_look,
    first_look,
    holding,
    next_pending,
    processing_message,
    release,
    release_and_look,
    renew,
)

log = logging.getLogger("mojodex.drain")

Handler = Callable[[TurnJob | SessionJob, threading.Event], None]

# Read only when a flag is raised: the turn it names, whether it is still open (Drainer.last_turn).
_LAST_TURN = select(Message.status, Message.answer_message_fk.label("closed_by")).where(
    Message.message_pk == bindparam("b_pk")
)


@dataclass(frozen=True)
class StopFlag:
    """A raised cancel flag: when (epoch seconds, by the raising backend's clock), and the turn it
    is for: the first message of the session waiting for or getting an answer then (None: not
    known) and what had closed that message's last turn when the stop read it (``closed_by``: its
    answer_message_fk, None while none had). ``turn_read`` False: the turn was not read, the flag is
    judged by its time: a flag of an earlier backend (naming the message alone, or nothing), or one
    whose backend could not read the session (``first_pk`` None)."""

    raised: float
    first_pk: int | None = None
    closed_by: int | None = None
    turn_read: bool = False


class CancelFlags(Protocol):
    """The sessions' cancel flags (distributed/runner.py: in Redis, raised by a backend)."""

    def raised_at(self, session_id: str) -> StopFlag | None:
        """The session's raised flag, or None."""

    def consume(self, session_id: str, flag: StopFlag) -> None:
        """Lowers ``flag``, unless a newer stop raised the session's flag again."""

DONE, BUSY, MORE = "done", "busy", "more"


class _Heartbeat(threading.Thread):
    def __init__(self, drainer: Drainer, claim: Claim) -> None:
        super().__init__(name=f"heartbeat-{claim.session_id[:8]}", daemon=True)
        self._drainer = drainer
        self._claim = claim
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._cancel: threading.Event | None = None
        self._job: TurnJob | SessionJob | None = None
        self._job_started = 0.0
        self._sent: tuple[TurnJob | SessionJob, float | None] | None = None  # the job, when its message was sent
        self.lost = False

    def current(self, cancel: threading.Event | None, job: TurnJob | SessionJob | None = None) -> None:
        with self._lock:
            self._cancel = cancel
            self._job = job
            self._job_started = time.time()

    def run(self) -> None:
        interval = max(self._drainer.lease_s / 3.0, 0.2)
        next_renewal = time.monotonic() + interval
        while not self._stop_event.wait(min(0.5, interval)):
            if time.monotonic() >= next_renewal:
                next_renewal = time.monotonic() + interval
                try:
                    if not renew(self._drainer.factory, self._claim):
                        log.warning("session %s: lease taken over (fence %d); stopping its turn",
                                    self._claim.session_id, self._claim.fence)
                        self.lost = True
                        self._cancel_current()
                        return
                except Exception as exc:  # the database blinked: try again; the lease may lapse
                    log.warning("session %s: heartbeat failed (%s)", self._claim.session_id, type(exc).__name__)
            self.look_at_flag()

    def look_at_flag(self, *, ended: bool = False) -> None:
        """``_watch_flag`` at each beat and when a job starts (a stop sent while it waited for a
        worker must not wait for a beat: a short turn would be over by then); with ``ended``,
        once it ended, to consume a stop that was its own but came too late to stop it (it must
        not stop the turn queued behind)."""
        try:
            self._watch_flag(ended)
        except Exception as exc:  # Redis or the database blinked: look again at the next beat
            log.warning("session %s: cancel flag not read (%s)", self._claim.session_id, type(exc).__name__)

    def _watch_flag(self, ended: bool) -> None:
        """Stops the current job if the session's cancel flag is for it (module docstring)."""
        flags, session_id = self._drainer.cancel_flags, self._claim.session_id
        if flags is None:
            return
        with self._lock:
            cancel, job, started = self._cancel, self._job, self._job_started
        if cancel is None or job is None:
            return
        flag = flags.raised_at(session_id)
        if flag is None:
            return
        ours = self._is_for(job, started, flag)
        if ours is None:
            return  # not for it, left raised: raised before this job (with no message) started, or
            # for another message's turn still waiting or running (this job's is an older message's)
        if not ours:
            log.info("session %s: dropping a stop not for message_pk=%s (for message_pk=%s's turn, closed since, "
                     "or raised before it was sent)", session_id, getattr(job, "message_pk", None), flag.first_pk)
        elif not ended:
            with self._lock:
                if self._cancel is not cancel:
                    return  # that job ended meanwhile: its end looks again
                cancel.set()
            log.info("session %s: stopping %s", session_id, job)
        flags.consume(session_id, flag)

    def _is_for(self, job: TurnJob | SessionJob, started: float, flag: StopFlag) -> bool | None:
        """Whether ``flag`` is for ``job`` (module docstring): True: it is; False: stale, dropped; None:
        not this job's, left raised. For a message's turn, by the turn the flag names: stale once that
        turn closed (its message's answer_message_fk is no longer the one the stop read: the stop
        applied to it or came too late; a failure by ``mark_failed`` changes none, so the flag still
        stops that message sent again); while it is open, its message's turn's, and left by a turn
        of another message (an older one sent again after the stop). A flag naming no turn is judged
        by time: stale if raised before the message was sent (``sent_at``), else its turn's unless
        it names a newer message. For a job with no message of its own, one raised since it started
        (the worker's clock)."""
        message_pk = _message_of(job)
        if message_pk is None:
            return True if flag.raised >= started else None
        if not flag.turn_read:
            if self._sent is None or self._sent[0] is not job:
                self._sent = (job, self._drainer.sent_at(message_pk))
            if self._sent[1] is not None and flag.raised < self._sent[1]:
                return False
            if flag.first_pk is None or message_pk >= flag.first_pk:
                return True
        turn = self._drainer.last_turn(flag.first_pk)
        if turn is None or (flag.turn_read and turn.closed_by != flag.closed_by):
            return False
        if message_pk == flag.first_pk:
            return True
        return None if turn.status in MESSAGE_UNANSWERED else False

    def _cancel_current(self) -> None:
        with self._lock:
            if self._cancel is not None:
                self._cancel.set()

    def stop(self) -> None:
        self._stop_event.set()


def _message_of(job: TurnJob | SessionJob) -> int | None:
    """The message whose turn ``job`` is (None: a job with no message of its own)."""
    return job.message_pk if isinstance(job, TurnJob) and job.task_tool_execution_pk is None else None


def _left_pending(waiting: Waiting, attempted: dict[int, int | None]) -> bool:
    """Whether this drain ran a turn of ``waiting`` (``attempted``: by message_pk, what had closed it
    then) that left it pending: nothing closed it since. A message a turn failed (its error closed
    it) and the user sent again as the turn ended, before the drain released the session, is not:
    it runs again, as it would under the next drain."""
    return waiting.message_pk in attempted and attempted[waiting.message_pk] == waiting.closed_by


class Drainer:
    def __init__(
        self,
        factory: sessionmaker[DbSession],
        handler: Handler,
        *,
        owner: str,
        lease_s: float,
        cancel_flags: CancelFlags | None = None,
        events: EventPublisher | None = None,
    ) -> None:
        self.events = events
        self.factory = factory
        self.handler = handler
        self.owner = owner
        self.lease_s = lease_s
        self.cancel_flags = cancel_flags

    def last_turn(self, message_pk: int) -> Row | None:
        """The message's ``status`` and what closed its last turn (``closed_by``: answer_message_fk,
        None until one did); None when it is gone."""
        with self.factory() as db:
            return db.execute(_LAST_TURN, {"b_pk": message_pk}).first()

    def sent_at(self, message_pk: int) -> float | None:
        """When the message was first sent (its ``created_at``, epoch seconds, as the cancel flag's;
        None: gone), for a flag naming no turn. A failed message sent again keeps it: such a flag,
        raised before the failure, still stops it (one naming its turn does not: ``_Heartbeat._is_for``)."""
        with self.factory() as db:
            created = db.scalar(select(Message.created_at).where(Message.message_pk == message_pk))
        if created is None:
            return None
        return (created if created.tzinfo else created.replace(tzinfo=UTC)).timestamp()

    def has_pending(self, session_id: str) -> bool:
        with self.factory() as db:
            return next_pending(db, session_id) is not None

    def drain(
        self, session_id: str, jobs: list[TurnJob | SessionJob] | None = None, stopping: Callable[[], bool] = bool
    ) -> str:
        """DONE: nothing left; BUSY: another worker holds the session (``jobs`` not run);
        MORE: stopped by ``stopping`` with messages left (hand them back)."""
        jobs = list(jobs or [])
        attempted: dict[int, int | None] = {}  # messages whose turn ran: see _left_pending
        while True:
            claim, look = claim_and_look(self.factory, session_id, self.owner, self.lease_s,
                                         orphans=self.events is not None)
            if claim is None:
                return BUSY
            try:
                self._run_claimed(claim, jobs, stopping, attempted, look)
                jobs = []
            except BaseException:
                self._release(claim)
                raise
            if not self._release_and_look(claim):
                return DONE
            if stopping():
                return MORE
            # A message accepted after our last look and before the release: its own drain task
            # may have found the session held, so answer it now.

    def _release(self, claim: Claim) -> None:
        try:
            release(self.factory, claim)
        except Exception:  # the lease lapses by itself; the sweep then re-runs what is left
            log.exception("session %s: releasing the lease failed", claim.session_id)

    def _release_and_look(self, claim: Claim) -> bool:
        """Releases the lease; True when a message still waits (looked for once it is released)."""
        try:
            return release_and_look(self.factory, claim)
        except Exception:  # the lease lapses by itself; the sweep then re-runs what is left
            log.exception("session %s: releasing the lease failed", claim.session_id)
        return self.has_pending(claim.session_id)

    def _run_claimed(
        self, claim: Claim, jobs: list[TurnJob | SessionJob], stopping: Callable[[], bool],
        attempted: dict[int, int | None],
        look: Look | None = None,
    ) -> None:
        """Runs the carried jobs, then the session's oldest pending message: one per claim, as
        the release that follows looks for the next one anyway (once it has committed), and a
        look between turns under the lease would be a second one."""
        heartbeat = _Heartbeat(self, claim)
        heartbeat.start()
        try:
            with holding(claim):
                if jobs:
                    if self.events is not None:
                        self._requeue_orphans(claim, self._processing(claim))
                    for job in jobs:
                        self._run(job, heartbeat)
                    waiting = self._next_pending(claim)
                else:
                    waiting = self._first_look(claim, look)
                while waiting is not None and _left_pending(waiting, attempted):  # never spin on it
                    log.error("session %s: message_pk=%s still pending after its turn; failing it",
                              claim.session_id, waiting.message_pk)
                    mark_failed(self.factory, waiting.message_pk, "The assistant failed to answer. Please retry.")
                    waiting = self._next_pending(claim)
                if waiting is None or stopping() or heartbeat.lost:
                    return
                attempted[waiting.message_pk] = waiting.closed_by
                self._run(TurnJob(session_id=claim.session_id, message_pk=waiting.message_pk,
                                  event_name=waiting.event_name, audio=waiting.audio), heartbeat)
        finally:
            heartbeat.stop()

    def _next_pending(self, claim: Claim) -> Waiting | None:
        with self.factory() as db:
            return next_pending(db, claim.session_id)

    def _processing(self, claim: Claim) -> int | None:
        with self.factory() as db:
            return processing_message(db, claim.session_id)

    def _first_look(self, claim: Claim, look: Look | None) -> Waiting | None:
        """After a claim: re-queues the messages a failed holder left processing, then returns the
        oldest pending one; both read right after the claim when it could (``look``)."""
        if look is None:
            with self.factory() as db:
                look = first_look(db, claim.session_id, orphans=self.events is not None)
        if look.orphaned is None:
            return look.pending
        self._requeue_orphans(claim, look.orphaned)
        return self._next_pending(claim)

    def _requeue_orphans(self, claim: Claim, orphaned: int | None) -> None:
        """A message still ``processing`` when we take the session was left by a holder that
        failed to finish it (its database went away mid-turn): it is answered again."""
        if orphaned is None:
            return
        with holding(claim), self.events.publishing(claim.session_id) as publication, transaction(self.factory) as db:
            check_fence(db, claim.session_id)
            retried = requeue_orphans(db, publication, claim.session_id)
        log.warning("session %s: re-running message(s) %s left processing", claim.session_id, retried)

    def _run(self, job: TurnJob | SessionJob, heartbeat: _Heartbeat) -> None:
        cancel = threading.Event()
        heartbeat.current(cancel, job)
        heartbeat.look_at_flag()
        started = time.monotonic()
        try:
            self.handler(job, cancel)
        except Exception:  # handlers record their own failures; this is the last net
            log.exception("job crashed: %s", job)
        finally:
            heartbeat.look_at_flag(ended=True)
            heartbeat.current(None)
        log.debug("ran %s in %.0f ms", job, (time.monotonic() - started) * 1000)
