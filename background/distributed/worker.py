"""Celery worker and beat entry point: ``celery -A background.distributed.worker worker|beat``.

Reads the same environment as the backend (MOJODEX_RUNNER=celery, REDIS_URL, DATABASE_URL,
the LLM settings). Each worker process builds the platform once, on its first task (after any
fork), with a write-only Socket.IO emitter on the backends' Redis message queue; it pushes the
final replies it publishes to users no backend holds a socket of (mojodex_core/push/redis_presence.py).

Tasks:
- ``mojodex.drain_session(session_id, jobs)``: answers the session's pending messages in order
  under its lease (drain.py); jobs carried by the task (a tool follow-up, a session job) first.
- ``mojodex.run_job(kind, fields)``: a background job (title and summary), retried with backoff.
- ``mojodex.sweep()``: re-runs turns of dead workers, re-sends lost drains (sweep.py), on beat.
- ``mojodex.resume()``: sent once by the beat when it starts (there is one beat per deployment):
  title jobs claimed but never finished are submitted again and unfinished POS ticket
  deliveries are run again, as a single process does at start-up (backend/app.py). Both are
  idempotent: a title job only rewrites the same fields, a ticket is skipped once delivered and
  every delivery attempt carries the ticket's Idempotency-Key. Then the uploaded audio files no
  message names (a process killed mid-upload), older than the grace, are deleted from the shared
  folder (mojodex_core/audio/orphans.py).

SIGTERM: Celery's warm shutdown lets the running task finish; the drain stops after the turn it
is running and hands the session's remaining messages back to the queue.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

import redis
from celery.signals import beat_init, worker_process_shutdown, worker_shutting_down
from sqlalchemy.exc import OperationalError

from background.distributed.celery_app import DRAIN_TASK, RESUME_TASK, RUN_JOB_TASK, SWEEP_TASK, make_celery
from background.distributed.drain import BUSY, MORE, Drainer
from background.distributed.events import SocketQueue, socketio_channel
from background.distributed.runner import RedisCancelFlags, decode_job, send_drain
from background.distributed.sweep import sweep
from background.jobs import backoff_s
from mojodex_core.config import load_settings

log = logging.getLogger("mojodex.worker")

settings = load_settings()
app = make_celery(settings)
STOPPING = threading.Event()

_lock = threading.Lock()
_state: dict[str, object] = {}


@worker_shutting_down.connect
def _on_shutdown(**_kwargs: object) -> None:
    log.info("worker shutting down: running turns finish, queued ones are handed back")
    STOPPING.set()


@worker_process_shutdown.connect
def _on_process_shutdown(**_kwargs: object) -> None:
    # A pool process leaves through os._exit (no atexit): the llm_call rows it still queues are
    # stored now; those it cannot store stay in its spool, replayed by the next process to start.
    platform = _state.get("platform") if _state.get("pid") == os.getpid() else None
    llm_calls = getattr(platform, "llm_calls", None)
    if llm_calls is not None:
        llm_calls.close()


@beat_init.connect
def _on_beat_start(**_kwargs: object) -> None:
    try:
        app.send_task(RESUME_TASK)
    except Exception as exc:  # noqa: BLE001 - the beat must still start; the next start resumes
        log.error("could not send the start-up resume task: %s", exc)
    else:
        log.info("beat started: sent the resume of unfinished title jobs and ticket deliveries (and the audio sweep)")


def worker_platform():  # noqa: ANN201
    """This process's platform and drainer, built on first use."""
    with _lock:
        if "platform" not in _state or _state.get("pid") != os.getpid():
            from backend.context import build_platform
            from backend.server import configure_logging, settle_heap

            configure_logging(settings.log_level)
            platform = build_platform(settings)
            platform.start_workflow_watch()  # renews the heartbeat of the workflow steps this worker runs
            # The worker publishes the final replies: it decides their push notifications too, from
            # the presence the backends share through Redis.
            queue = SocketQueue(settings.redis_url, socketio_channel(settings.redis_url))
            platform.events.set_transport(platform.push.wrap(queue) if platform.push is not None else queue)
            owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
            _state.update(
                pid=os.getpid(),
                platform=platform,
                drainer=Drainer(platform.session_factory, platform.turn_handler, owner=owner,
                                lease_s=settings.turn_lease_s,
                                cancel_flags=RedisCancelFlags.from_url(settings.redis_url), events=platform.events),
            )
            settle_heap()
            log.info("worker %s ready: database=%s", owner, settings.database_url.split("@")[-1])
        return _state["platform"], _state["drainer"]


@app.task(name=DRAIN_TASK, bind=True, max_retries=None)
def drain_session(self, session_id: str, jobs: list | None = None) -> str:  # noqa: ANN001
    platform, drainer = worker_platform()
    decoded = [decode_job(session_id, j) for j in jobs or []]
    try:
        outcome = drainer.drain(session_id, decoded, stopping=STOPPING.is_set)
    except (OperationalError, redis.RedisError) as exc:  # Postgres or Redis unreachable: retry, backing off
        raise self.retry(exc=exc, countdown=min(2 ** min(self.request.retries, 5), 30)) from exc
    if outcome == BUSY and decoded:
        # Another worker holds the session: these jobs must still run, after its turns.
        raise self.retry(countdown=0.25, max_retries=None)
    if outcome == MORE:
        send_drain(app, session_id)  # shutting down: hand the session's remaining messages back
    return outcome


@app.task(name=RUN_JOB_TASK, bind=True, max_retries=None)
def run_job(self, kind: str, fields: dict) -> None:  # noqa: ANN001
    platform, _drainer = worker_platform()
    handlers = {cls.__name__: (cls, handler) for cls, handler in platform.job_handlers.items()}
    if kind not in handlers:
        log.error("unknown job kind %r", kind)
        return
    cls, handler = handlers[kind]
    job = cls(**fields)
    try:
        handler.run(job)
    except Exception as exc:  # noqa: BLE001 - retried, then given up visibly (as in-process)
        max_attempts = settings.extra.get("job_max_attempts", 3)
        if job.attempt < max_attempts:
            delay = backoff_s(job.attempt, settings.extra.get("job_backoff_s", 2.0), 60.0)
            log.warning("job %s failed (attempt %d/%d): %s; retrying in %.2f s", kind, job.attempt,
                        max_attempts, exc, delay)
            raise self.retry(args=[kind, {**fields, "attempt": job.attempt + 1}], countdown=delay) from exc
        log.error("job %s gave up after %d attempt(s): %s", job, job.attempt, exc)
        handler.give_up(job, exc)


@app.task(name=SWEEP_TASK)
def sweep_task() -> dict:
    platform, _drainer = worker_platform()
    return sweep(
        platform.session_factory, platform.events, lambda session_id: send_drain(app, session_id),
        lease_s=settings.turn_lease_s, pending_grace_s=max(settings.turn_lease_s * 3, 10.0),
    )


@app.task(name=RESUME_TASK, bind=True, max_retries=None)
def resume_task(self) -> dict:  # noqa: ANN001
    platform, _drainer = worker_platform()
    try:
        titles = platform.resume_title_summaries()
        tickets = platform.tickets.resume() if platform.tickets is not None else 0
    except (OperationalError, redis.RedisError) as exc:  # Postgres or Redis unreachable: retry, backing off
        raise self.retry(exc=exc, countdown=min(2 ** min(self.request.retries, 5), 30)) from exc
    if tickets:
        log.info("resumed the delivery of %d ticket(s)", tickets)
    audio_orphans = platform.sweep_audio_orphans()  # never raises; a failure is logged
    return {"title_jobs": titles, "tickets": tickets, "audio_orphans": audio_orphans}
