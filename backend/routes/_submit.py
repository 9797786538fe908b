"""Handing a stored message's job (or a tool decision's follow-up) to the runner, from a route: what a
refusal answers."""

from __future__ import annotations

import logging

from backend.context import Platform
from backend.errors import unavailable
from mojodex_core.execution.failures import NOT_STARTED, fail_refused
from mojodex_core.execution.jobs import JobRefused, TurnJob
from mojodex_core.execution.tool_runs import Decision, undo_decision

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


def submit_follow_up(current: Platform, decision: Decision) -> None:
    """Submits the follow-up turn of a tool decision the route has just committed. When the runner refuses
    it, nothing would run it (not even a restart: the message it answers was answered), so the decision is
    taken back (``undo_decision``: the use awaits approval again) and the route answers 503 with a
    Retry-After: the decision sent again runs it. A decision no longer untouched (its follow-up started or
    ran meanwhile, in another process) is kept, and the route answers it as accepted."""
    pk = decision.task_tool_execution_pk
    try:
        current.runner.submit(TurnJob(session_id=decision.session_id, message_pk=decision.message_pk,
                                      task_tool_execution_pk=pk))
    except JobRefused as exc:
        with current.db() as db:
            undone = undo_decision(db, pk)
        if not undone:
            log.info("%s; the follow-up of task_tool_execution %s started meanwhile: answered as accepted", exc, pk)
            return
        log.warning("%s; the decision on task_tool_execution %s is taken back", exc, pk)
        raise unavailable(NOT_STARTED) from exc
