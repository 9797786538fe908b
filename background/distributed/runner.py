"""The Celery side seen from a backend: runners that send tasks instead of starting threads.

Both implement the same Protocols as the in-process runners (background/runner.py,
background/jobs.py), so routes submit the same way in both modes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import redis
from celery import Celery
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from background.distributed.celery_app import DRAIN_TASK, RUN_JOB_TASK
from background.distributed.drain import StopFlag
from background.distributed.events import KEY_PREFIX
from mojodex_core.db.models import MESSAGE_UNANSWERED, Message
from mojodex_core.execution.jobs import JobRefused, SessionJob, TurnJob
from mojodex_core.execution.session_claims import answered_by_runner

log = logging.getLogger("mojodex.runner")

CANCEL_FLAG_TTL_S = 300


def cancel_key(session_id: str) -> str:
    return f"{KEY_PREFIX}:cancel:{session_id}"


def encode_job(job: TurnJob | SessionJob) -> dict[str, Any]:
    if isinstance(job, SessionJob):
        return {"type": "session_job", "kind": job.kind, "payload": job.payload}
    return {"type": "turn", "message_pk": job.message_pk, "task_tool_execution_pk": job.task_tool_execution_pk,
            **({"audio": True} if job.audio else {})}


def decode_job(session_id: str, data: dict[str, Any]) -> TurnJob | SessionJob:
    if data.get("type") == "session_job":
        return SessionJob(session_id=session_id, kind=data["kind"], payload=data.get("payload") or {})
    return TurnJob(session_id=session_id, message_pk=data["message_pk"],
                   task_tool_execution_pk=data.get("task_tool_execution_pk"), audio=bool(data.get("audio")))


def send_drain(celery: Celery, session_id: str, jobs: list[dict[str, Any]] | None = None) -> bool:
    """Sends the session's drain task; False (logged) when the broker is unreachable: its pending
    messages stay pending and the sweep sends the drain again once the broker is back. The ``jobs``
    travelling with it are lost with it: its submitter refuses them (``CeleryTurnRunner.submit``)."""
    try:
        celery.send_task(DRAIN_TASK, args=[session_id, jobs or []])
        return True
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds of connection errors
        then = (f"its {len(jobs)} travelling job(s) are refused" if jobs
                else "the sweep will send it again for its pending messages")
        log.error("could not queue session %s (%s: %s); %s", session_id, type(exc).__name__, exc, then)
        return False


# The session's first message waiting for or getting an answer from the runner, and what had closed
# its last turn (StopFlag.closed_by).
_BUSY = (
    select(Message.message_pk, Message.answer_message_fk)
    .where(Message.session_id == bindparam("b_session"), answered_by_runner(),
           Message.status.in_(MESSAGE_UNANSWERED))
    .order_by(Message.message_pk)
    .limit(1)
)


def encode_flag(flag: StopFlag) -> str:
    """A flag's Redis value: its time, then ``/`` and its first message's pk when known, then ``/`` and
    what had closed that message's last turn when it was read (empty: nothing had)."""
    if flag.first_pk is None:
        return repr(flag.raised)
    if not flag.turn_read:  # the form of a backend that did not read it
        return f"{flag.raised!r}/{flag.first_pk}"
    return f"{flag.raised!r}/{flag.first_pk}/{'' if flag.closed_by is None else flag.closed_by}"


def decode_flag(value: bytes | str) -> StopFlag:
    """Also the earlier forms, a bare time or a time and a first message (``encode_flag`` gives them
    back as read, so ``RedisCancelFlags.consume`` lowers them)."""
    text = value.decode() if isinstance(value, bytes) else value
    raised, *read = text.split("/")
    if not read:
        return StopFlag(float(raised))
    if len(read) == 1:
        return StopFlag(float(raised), int(read[0]))
    return StopFlag(float(raised), int(read[0]), int(read[1]) if read[1] else None, turn_read=True)


class CeleryTurnRunner:
    """Turns and session jobs as Celery tasks; a session's messages are found by its drain."""

    def __init__(self, celery: Celery, redis_client: redis.Redis, session_factory: sessionmaker[DbSession]) -> None:
        self._celery = celery
        self._redis = redis_client
        self._factory = session_factory

    def submit(self, job: TurnJob | SessionJob) -> None:
        """Sends the session's drain. When the broker cannot take it, a plain message is left pending for
        the sweep to send its drain again (``sessions_waiting``); a job that travels with the drain (a tool
        follow-up, a session job) has nothing to find it again: JobRefused, for its submitter to settle."""
        # A plain message is found by the drain (oldest pending first); anything else travels.
        plain = isinstance(job, TurnJob) and job.task_tool_execution_pk is None
        if not send_drain(self._celery, job.session_id, [] if plain else [encode_job(job)]) and not plain:
            raise JobRefused(f"could not queue session {job.session_id}'s job (the broker is unreachable)")

    def cancel(self, session_id: str) -> None:
        """Raises the session's cancel flag, read by the worker that runs (or next starts) its
        turn (drain.py), when the session has a message waiting for or getting an answer: a stop
        with nothing to stop raises nothing, as in-process (its flag would be stale). The flag
        names that message's turn as the read saw it: what had closed its last turn then
        (answer_message_fk). A close the read did not see (committed after it, even one begun
        before it: an error row is dated when inserted, committed later) changes it, so the flag
        is stale for the message sent again after (drain.py), whatever the clocks say. Not a
        failure through ``failures.mark_failed`` alone (the last resort: no error row, the
        answer_message_fk unchanged): the flag still applies to that message sent again. When the
        read fails, the flag names no turn (``turn_read`` False) and is judged by its time."""
        raised = time.time()
        first: int | None
        closed_by: int | None = None
        try:
            with self._factory() as db:
                busy = db.execute(_BUSY, {"b_session": session_id}).first()
            if busy is None:
                log.info("session %s: nothing to stop", session_id)
                return
            first, closed_by = busy
        except Exception as exc:  # noqa: BLE001 - better a flag for nothing than a stop lost
            log.warning("session %s: could not tell whether a turn runs (%s); stopping anyway", session_id, exc)
            first = None
        try:
            # The first message names the turn the stop is for, should it end before the flag is
            # set: an older message sent again later must not take the stop (drain.py).
            flag = StopFlag(raised, first, closed_by, turn_read=first is not None)
            self._redis.set(cancel_key(session_id), encode_flag(flag), ex=CANCEL_FLAG_TTL_S)
        except redis.RedisError as exc:
            log.error("could not cancel session %s (%s)", session_id, exc)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once no message waits for or is getting an answer (for tests and scripts)."""
        deadline = time.monotonic() + (timeout if timeout is not None else 3600)
        while time.monotonic() < deadline:
            if not self.busy_sessions():
                return True
            time.sleep(0.1)
        return False

    def busy_sessions(self) -> list[str]:
        """The sessions with a message waiting for or getting an answer."""
        with self._factory() as db:
            return list(db.scalars(
                select(Message.session_id)
                .where(answered_by_runner(), Message.status.in_(MESSAGE_UNANSWERED))
                .distinct()
            ))

    def shutdown(self, wait: bool = True) -> None:
        pass  # the workers own the running turns


# Deletes the flag only if it still holds the stop that was read (a newer stop stays raised).
_CONSUME = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


# A flag is read on the drain's thread before and after each job: an unreachable Redis must cost
# the turn this long at most, not a TCP timeout (minutes).
FLAG_TIMEOUT_S = 2.0


class RedisCancelFlags:
    """The worker's view of the cancel flags ``CeleryTurnRunner.cancel`` raises (drain.CancelFlags)."""

    def __init__(self, redis_client: redis.Redis) -> None:
        self._redis = redis_client
        self._consume = redis_client.register_script(_CONSUME)

    @classmethod
    def from_url(cls, url: str) -> RedisCancelFlags:
        """On a client of their own, whose reads give up after ``FLAG_TIMEOUT_S``."""
        return cls(redis.Redis.from_url(url, socket_timeout=FLAG_TIMEOUT_S, socket_connect_timeout=FLAG_TIMEOUT_S))

    def raised_at(self, session_id: str) -> StopFlag | None:
        value = self._redis.get(cancel_key(session_id))
        return decode_flag(value) if value is not None else None

    def consume(self, session_id: str, flag: StopFlag) -> None:
        self._consume(keys=[cancel_key(session_id)], args=[encode_flag(flag)])


class CeleryJobRunner:
    """Background jobs (title and summary...) as Celery tasks, retried with the same backoff."""

    def __init__(self, celery: Celery) -> None:
        self._celery = celery

    def submit(self, job: Any) -> None:
        try:
            self._celery.send_task(RUN_JOB_TASK, args=[type(job).__name__, dataclasses.asdict(job)])
        except Exception as exc:  # noqa: BLE001
            log.error("could not queue job %s (%s)", job, exc)

    def shutdown(self, wait: bool = True) -> None:
        pass
