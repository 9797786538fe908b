"""How a turn that cannot answer ends: the user message failed, an error message and event beside it.

Shared by every task type's turn, so a failure looks the same to clients whatever ran the turn:
the message is retryable with the same message_id, even when its event says ``retryable`` false (a
client should not retry it on its own). Only a ``final`` failure is not: sent again, the message is
answered as stored, like a message that was answered.
"""

from __future__ import annotations

import logging

from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import MESSAGE_UNANSWERED, Message
from mojodex_core.execution.events import EventPublisher, Publication
from mojodex_core.execution.session_claims import Superseded, check_fence
from mojodex_core.llm import LLMCancelled, LLMError, LLMNotConfigured

log = logging.getLogger("mojodex.turn")


def record_failure(
    factory: sessionmaker[DbSession],
    events: EventPublisher,
    *,
    session_id: str,
    message_pk: int,
    message_id: str | None,
    user_task_execution_pk: int,
    reason: str,
    retryable: bool = True,
    final: bool = False,
) -> None:
    """``final``: a run of this message, whenever it is sent again, could only act where it no longer belongs
    (a review message whose review closed): its ``data.retryable`` becomes false and the event's ``retryable``
    too. Any other failure, ``retryable`` false included, runs again when the message is sent again."""
    with events.publishing(session_id) as publication, transaction(factory) as db:
        check_fence(db, session_id)  # a worker that lost its lease leaves the message to the new one
        add_failure(db, publication, db.get(Message, message_pk), message_id=message_id,
                     user_task_execution_pk=user_task_execution_pk, reason=reason, retryable=retryable, final=final)
    log.warning("turn failed session=%s message_pk=%s: %s", session_id, message_pk, reason)


def add_failure(
    db: DbSession, publication: Publication, user_message: Message, *, message_id: str | None,
    user_task_execution_pk: int, reason: str, retryable: bool, final: bool = False,
    extra: dict | None = None,
) -> None:
    """The message failed: its error message and ``error`` event, in the caller's transaction. ``extra``:
    more fields of the event (a text edit's ``kind`` and ``text_edit_action_pk``)."""
    session_id = publication.session_id
    error = Message(
        session_id=session_id,
        user_task_execution_fk=user_task_execution_pk,
        sender="system",
        event_name="error",
        text=reason,
        status="error",
        data={"user_message_pk": user_message.message_pk},
    )
    db.add(error)
    db.flush()
    user_message.status = "failed"
    user_message.error = reason
    user_message.answer_message_fk = error.message_pk
    if final:
        user_message.data = failed_for_good(user_message.data)
    error.seq = publication.add(
        db,
        "error",
        {
            "error": reason,
            "message_pk": error.message_pk,
            "user_message_pk": user_message.message_pk,
            "message_id": message_id,
            "session_id": session_id,
            "user_task_execution_pk": user_task_execution_pk,
            "retryable": retryable and not final,
            **(extra or {}),
        },
    )


def failed_for_good(data: dict | None) -> dict:
    """A failed message's ``data`` once no retry can answer it: sent again with its message_id, it is
    answered as stored (``intake.runs_again``), not run again."""
    return {**(data or {}), "retryable": False}


def mark_failed(
    factory: sessionmaker[DbSession], message_pk: int, reason: str, final: bool = False,
    statuses: tuple[str, ...] = MESSAGE_UNANSWERED,
) -> bool | None:
    """Last resort, without an event: the client sees the failure in GET /message and can retry. Only while
    the message is in one of ``statuses`` (a conditional UPDATE: what another run claimed meanwhile stays its).
    True when it failed the message, False when it did not (no longer in ``statuses``, gone, or its session
    taken over), None when the database could not tell (an error, logged)."""
    try:
        with transaction(factory) as db:
            session_id = db.scalar(select(Message.session_id).where(Message.message_pk == message_pk))
            if session_id is None:
                return False
            check_fence(db, session_id)
            failed = db.execute(
                update(Message).where(Message.message_pk == message_pk, Message.status.in_(statuses))
                .values(status="failed", error=reason).execution_options(synchronize_session=False)
            ).rowcount
            if failed and final:  # the row is this transaction's now
                message = db.get(Message, message_pk)
                message.data = failed_for_good(message.data)
    except Superseded as exc:
        log.warning("not marking message_pk=%s failed: %s", message_pk, exc)
        return False
    except Exception:
        log.exception("could not mark message_pk=%s as failed", message_pk)
        return None
    return bool(failed)


def fail_or_mark(factory: sessionmaker[DbSession], events: EventPublisher, **kwargs: object) -> None:
    try:
        record_failure(factory, events, **kwargs)  # type: ignore[arg-type]
    except Superseded as exc:
        log.warning("turn failure of message_pk=%s not recorded: %s", kwargs.get("message_pk"), exc)
    except Exception:  # storing the error failed too: at least never leave the message "processing"
        log.exception("could not record the failure of message_pk=%s", kwargs.get("message_pk"))
        mark_failed(factory, kwargs["message_pk"], str(kwargs["reason"]),  # type: ignore[arg-type]
                    final=bool(kwargs.get("final", False)))


INTERNAL_ERROR = "The assistant failed to answer because of an internal error. Please retry."
# Why a message fails when the runner refused its job (jobs.JobRefused): sent again, it runs.
NOT_STARTED = "The assistant could not start answering: the server is restarting or too busy. Please retry."
# Why a turn, a step or an edit of a deleted execution ends (never retryable: the execution is gone).
EXECUTION_DELETED = "The task execution was deleted."


def fail_refused(
    factory: sessionmaker[DbSession], events: EventPublisher, session_id: str, message_pk: int, *,
    reason: str = NOT_STARTED, retryable: bool = True,
) -> bool:
    """A message stored for the runner whose job the runner refused (``JobRefused``): nothing would run it
    before the process restarted, so it fails visibly now, as a turn that could not answer does (an error
    message and event, ``retryable`` for the client). Sent again with its message_id, it runs.

    Only a message still ``pending``: the change to failed is a conditional UPDATE, in the transaction of
    its error message and event, so a run that claimed it meanwhile (another process's start-up resume)
    keeps it. False when it was no longer pending (it is being answered) or is gone: nothing was written.
    A database error is no half-done state: that transaction rolls back, and the pending-only last resort
    (``mark_failed``) is tried: what it did is returned (False when the message was no longer pending), and
    True, never the error, when the database could not be written at all (it was refused)."""
    try:
        with events.publishing(session_id) as publication, transaction(factory) as db:
            claimed = db.execute(
                update(Message).where(Message.message_pk == message_pk, Message.status == "pending")
                .values(status="failed").execution_options(synchronize_session=False)
            ).rowcount
            if not claimed:
                return False
            message = db.get(Message, message_pk)
            add_failure(db, publication, message, message_id=message.message_id,
                         user_task_execution_pk=message.user_task_execution_fk, reason=reason, retryable=retryable)
    except Exception:
        log.exception("could not record the refusal of message_pk=%s", message_pk)
        return mark_failed(factory, message_pk, reason, statuses=("pending",)) is not False
    log.warning("refused session=%s message_pk=%s: %s", session_id, message_pk, reason)
    return True


def failure_reason(
    exc: BaseException,
    *,
    shown: tuple[type[BaseException], ...] = (),
    cancelled: str = "The turn was cancelled.",
    no_llm: str | None = None,
    crashed: str = INTERNAL_ERROR,
    what: str = "turn",
    where: str = "",
) -> str:
    """The sentence a user sees for a turn that failed with ``exc``, the same way for every kind of
    turn: LLM errors and the turn's own ``shown`` errors say themselves; anything else is a crash,
    logged with its traceback and shown as ``crashed``."""
    if isinstance(exc, LLMCancelled):
        return cancelled
    if isinstance(exc, LLMNotConfigured) and no_llm is not None:
        return no_llm
    if isinstance(exc, (LLMError, *shown)):
        return str(exc)
    log.error("%s crashed %s", what, where, exc_info=exc)
    return crashed
