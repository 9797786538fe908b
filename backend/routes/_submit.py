"""Handing a stored message's job to the runner, from a route: what a refusal answers."""

from __future__ import annotations

import logging

from backend.context import Platform
from backend.errors import unavailable
from mojodex_core.execution.failures import NOT_STARTED, fail_refused
from mojodex_core.execution.jobs import JobRefused, TurnJob

log = logging.getLogger("mojodex.api")


def submit_turn(current: Platform, job: TurnJob, *, reason: str = NOT_STARTED, retryable: bool = True) -> None:
    """Submits the job of a message the route has just stored (committed). When the runner refuses it
    (``JobRefused``: shut down, no thread to start), nothing would run the message before the process
    restarted: it fails visibly with ``reason`` (``fail_refused``: an error message and event) and the
    route answers 503 with a Retry-After. Sent again with its message_id, a failed message runs. A message
    no longer pending (a run of another process claimed it meanwhile) is being answered: the route answers
    as it does for an accepted one."""
    try:
        current.runner.submit(job)
    except JobRefused as exc:
        if not fail_refused(current.session_factory, current.events, job.session_id, job.message_pk, reason=reason,
                            retryable=retryable):
            log.info("%s; message %s was claimed meanwhile: answered as accepted", exc, job.message_pk)
            return
        log.warning("%s; message %s fails (%s)", exc, job.message_pk, reason)
        raise unavailable(reason) from exc
