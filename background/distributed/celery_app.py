"""The Celery application: Redis broker, late acknowledgement, the periodic sweep.

Backends only send tasks by name (``make_celery``); workers and beat import
background/distributed/worker.py, which registers the tasks on the same configuration.
"""

from __future__ import annotations

from celery import Celery

from mojodex_core.config import Settings

DRAIN_TASK = "mojodex.drain_session"
RUN_JOB_TASK = "mojodex.run_job"
SWEEP_TASK = "mojodex.sweep"
RESUME_TASK = "mojodex.resume"
QUEUE = "mojodex"


def make_celery(settings: Settings) -> Celery:
    if not settings.redis_url:
        raise ValueError("the Celery runner needs REDIS_URL")
    app = Celery("mojodex", broker=settings.redis_url, set_as_current=False)
    app.conf.update(
        # kombu's Redis transport, except that a failed ack (Redis down) frees its prefetch slot:
        # without it a worker can stop consuming for good after a Redis restart (broker.py).
        broker_transport="background.distributed.broker:Transport",
        # A task is acknowledged once it returned: a worker that dies mid-turn leaves it in the
        # broker, and a pool process that dies makes its worker reject it back to the queue.
        task_acks_late=True,
        task_acks_on_failure_or_timeout=False,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue=QUEUE,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        # The broker redelivers an unacknowledged task after this; turns do not depend on it (the
        # sweep re-runs a dead worker's turn after MOJODEX_TURN_LEASE_S), jobs carried by a task do.
        broker_transport_options={"visibility_timeout": 3600},
        # Pub/sub (remote control) ignores Redis database numbers: keep deployments sharing a Redis apart.
        worker_enable_remote_control=False,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        beat_schedule={
            "mojodex-sweep": {"task": SWEEP_TASK, "schedule": settings.sweep_interval_s,
                              "options": {"expires": max(settings.sweep_interval_s * 2, 1.0)}},
        },
    )
    return app
