"""What the runner is asked to do."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class TurnJob:
    """Answer one user message (a chat message or a submitted form) of a session."""

    session_id: str
    message_pk: int
    # Set for the follow-up turn of a tool use the user approved or declined (same session queue).
    task_tool_execution_pk: int | None = None
    # The message's event_name when the submitter knows it (saves the runner a query); not part of
    # the job's identity.
    event_name: str | None = field(default=None, compare=False)
    # An audio message whose words are not transcribed yet: the runner transcribes it before its
    # turn (mojodex_core.audio.turn). Said by whoever submits the job (the audio upload, a look at
    # the stored message), so that any process running it knows, not only the one that accepted it.
    audio: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class SessionJob:
    """Any other work that must run in a session's turn order (e.g. a workflow step).

    ``kind`` names a handler registered with ``SessionJobs.register``; ``payload`` is JSON-able
    (it crosses the broker in distributed mode). The runner runs it in the session's queue, after
    the messages and jobs submitted before it, never beside a turn of the same session.
    """

    session_id: str
    kind: str
    payload: dict = field(default_factory=dict, hash=False, compare=True)


class JobRefused(RuntimeError):
    """The runner cannot take the job (shut down, no thread to start): nothing of it was queued or ran.

    Raised by ``TurnRunner.submit``. A message already stored for the job is left pending by the
    refusal: the submitter decides what becomes of it (``failures.fail_refused``)."""


class SessionJobs:
    """The runner's handler: turns go to the turn handler, session jobs to their kind's handler."""

    def __init__(self, turn_handler: Callable[[TurnJob, threading.Event], None]) -> None:
        self._turn = turn_handler
        self._kinds: dict[str, Callable[[SessionJob, threading.Event], None]] = {}

    def register(self, kind: str, handler: Callable[[SessionJob, threading.Event], None]) -> None:
        self._kinds[kind] = handler

    def handles(self, kind: str) -> bool:
        return kind in self._kinds

    def __call__(self, job: TurnJob | SessionJob, cancel: threading.Event) -> None:
        if isinstance(job, SessionJob):
            handler = self._kinds.get(job.kind)
            if handler is None:
                raise LookupError(f"no session job handler for kind {job.kind!r}")
            handler(job, cancel)
        else:
            self._turn(job, cancel)
