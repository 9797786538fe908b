"""Accepting what the user sends: form inputs and chat messages, idempotent by message_id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import autocommit_connection, core_transaction, factory_engine
from mojodex_core.db.models import Message, SessionEvent, UserTaskExecution, utcnow
from mojodex_core.execution.events import EventPublisher, Publication, announcing

MAX_TEXT_CHARS = 50_000
# The message_id of the user message that carries a submitted form (reserved for it).
FORM_MESSAGE_ID = "form_start"
MEDIA_TYPES = ("image", "multiple_images", "audio_file", "video")


class InputError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def validate_inputs(json_input: list[dict[str, Any]], inputs: Any) -> dict[str, Any]:
    """Checks form values against the task's json_input; returns the values to store."""
    if not isinstance(inputs, dict):
        raise InputError("inputs", "must be an object mapping input_name to value")
    declared = {i["input_name"]: i for i in json_input}
    for name in inputs:
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise InputError(f"inputs.{name}", f"unknown input (known inputs: {known})")
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        value = inputs.get(name)
        kind = spec.get("type")
        empty = value is None or (isinstance(value, str) and not value.strip()) or value == []
        if empty:
            # Media inputs are attachments the web form may not send; text inputs are the task.
            if kind in MEDIA_TYPES or spec.get("optional"):
                continue
            raise InputError(f"inputs.{name}", "is required")
        if kind == "drop_down_list":
            allowed = [v["value"] for v in spec.get("possible_values", [])]
            if value not in allowed:
                raise InputError(f"inputs.{name}", f"must be one of: {', '.join(map(str, allowed))}")
        elif kind == "multiple_images":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(f"inputs.{name}", "must be a list of strings")
        elif not isinstance(value, str):
            raise InputError(f"inputs.{name}", "must be a string")
        elif len(value) > MAX_TEXT_CHARS:
            raise InputError(f"inputs.{name}", f"must be at most {MAX_TEXT_CHARS} characters")
        values[name] = value
    return values


def inputs_settled(db: DbSession, execution: UserTaskExecution) -> bool:
    """Whether the execution's inputs may no longer change: it has started (from chat, or by its
    form), or its form is on its way to the runner (the form message stored and not failed). A
    form start with other inputs is then refused rather than changing them under its turn."""
    if execution.start_date is not None:
        return True
    form = db.scalar(select(Message.status).where(
        Message.session_id == execution.session_id, Message.message_id == FORM_MESSAGE_ID))
    return form not in (None, "failed")


def runs_again(status: str | None, data: dict[str, Any] | None) -> bool:
    """Whether a stored message sent again with its message_id runs again: only when it failed and a retry
    may answer it. Any other is answered as stored, a message that failed for good included (``data.retryable``
    false, set by a ``final`` failure: its review or result chat closed before it was answered, and running it
    again could only act where it no longer belongs, e.g. in a later review)."""
    return status == "failed" and (data or {}).get("retryable") is not False


def would_run(status: str | None, data: dict[str, Any] | None) -> bool:
    """Whether a message sent with its message_id would run: a new one (``status`` None, none stored) or
    one that ``runs_again``. The routes' checks before storing anything (an Idle order's 409, a workflow's
    chat closed) apply to these only: any other is answered as stored."""
    return status is None or runs_again(status, data)


@dataclass(frozen=True)
class Accepted:
    message_pk: int
    status: str
    run: bool  # whether a turn must be started for it
    # The stored message is audio not transcribed yet (no text): its job says so (TurnJob.audio).
    # Read from the row, not the request: a failed audio message may be sent again as text.
    audio: bool = False
    # A failed message not transcribed yet, sent again with a new recording: the ``data.audio`` the row
    # named before (its file is no message's once this is committed).
    replaced_audio: dict[str, Any] | None = None


class MessageIdTaken(ValueError):
    """The message_id is already used by another kind of message of the session."""

    def __init__(self, message_id: str) -> None:
        super().__init__(f"message_id {message_id!r} is already used by another kind of message of this session")


_message = Message.__table__
_EXISTING = select(_message.c.message_pk, _message.c.event_name, _message.c.status, _message.c.text,
                   _message.c.data).where(
    _message.c.session_id == bindparam("b_session"), _message.c.message_id == bindparam("b_message_id")
)
_RETRY_FAILED = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"), _message.c.status == "failed")
    .values(status="pending", error=None)
)
# The same, for a failed message not transcribed yet sent again with a new recording: it takes it.
_RETRY_FAILED_WITH = _RETRY_FAILED.values(data=bindparam("b_data", type_=_message.c.data.type))
_INSERT_MESSAGE = insert(_message)


def _store_and_announce():  # noqa: ANN202
    """Postgres: a new user message and its reception event in one statement (two data-modifying
    CTEs), the event's payload completed with the message's new pk. Atomic on its own, so it runs
    in autocommit: one round trip where BEGIN, two INSERTs and COMMIT made four."""
    event = SessionEvent.__table__
    stored = insert(_message).values(
        session_id=bindparam("session_id"), user_task_execution_fk=bindparam("user_task_execution_fk"),
        sender="user", message_id=bindparam("message_id"), event_name=bindparam("event_name"),
        text=bindparam("text"), status="pending", data=bindparam("data", type_=_message.c.data.type),
        created_at=bindparam("created_at", type_=_message.c.created_at.type), seq=bindparam("seq"),
    ).returning(_message.c.message_pk).cte("stored_message")
    announced = announcing(
        stored, "user_message_reception", session=bindparam("session_id"), seq=bindparam("seq"),
        payload=bindparam("payload", type_=JSONB), created_at=bindparam("created_at", type_=event.c.created_at.type),
    )
    return select(stored.c.message_pk).add_cte(announced)


_STORE_AND_ANNOUNCE = _store_and_announce()


def accept_user_message(
    factory: sessionmaker[DbSession],
    events: EventPublisher,
    *,
    session_id: str,
    user_task_execution_pk: int,
    text: str,
    message_id: str,
    event_name: str = "user_message",
    data: dict[str, Any] | None = None,
    seen_absent: bool = False,
) -> Accepted:
    """Stores the message once per (session, message_id); a failed one is set to run again.

    The session's event stream is held before a connection is taken, as every publisher does:
    taking them in the other order can deadlock on an exhausted pool (or a distributed lock).
    The statements are Core ones on a plain pooled connection (no ORM session): in a transaction,
    or on Postgres, for a message the caller has just seen absent, one statement in autocommit
    that stores the message with its event (``_STORE_AND_ANNOUNCE``).

    ``seen_absent``: the caller has just read that the session has no message with this id, so
    the INSERT is tried without looking again; one that raced in since makes it fail on the
    (session, message_id) unique constraint, and the retry looks it up."""
    look_up = not seen_absent
    engine = factory_engine(factory)
    fuses = engine.dialect.name == "postgresql"
    for _ in range(3):
        try:
            with events.publishing(session_id) as publication:
                if fuses and not look_up:
                    with autocommit_connection(engine) as db:
                        return _store_new(db, publication, session_id, user_task_execution_pk, text, message_id,
                                          event_name, data)
                with core_transaction(factory) as db:
                    return _store(db, publication, session_id, user_task_execution_pk, text, message_id,
                                  event_name, data, look_up)
        except IntegrityError:
            look_up = True  # the same message_id raced in from a retrying client: read theirs
    raise RuntimeError(f"could not store message {message_id!r} of session {session_id}")


def _new_row(
    session_id: str, user_task_execution_pk: int, text: str, message_id: str, event_name: str,
    data: dict[str, Any] | None, seq: int,
) -> dict[str, Any]:
    """The values of a new user message, by column (the fused statement's binds have the same names)."""
    return {
        "session_id": session_id, "user_task_execution_fk": user_task_execution_pk, "message_id": message_id,
        "event_name": event_name, "text": text, "data": data or {}, "created_at": utcnow(), "seq": seq,
    }


def _reception(
    message_id: str, text: str, event_name: str, data: dict[str, Any] | None, session_id: str,
    user_task_execution_pk: int,
) -> dict[str, Any]:
    """The user_message_reception event's payload, but for its message_pk and seq."""
    return {
        "message_id": message_id,
        "text": text,
        "event_name": event_name,
        **({"data": data} if data else {}),
        "session_id": session_id,
        "user_task_execution_pk": user_task_execution_pk,
    }


def _store_new(
    db: Connection, publication: Publication, session_id: str, user_task_execution_pk: int, text: str,
    message_id: str, event_name: str, data: dict[str, Any] | None,
) -> Accepted:
    """``_store`` of a message the caller has just seen absent, on Postgres: one statement."""
    seq = publication.next_seq()
    payload = {**_reception(message_id, text, event_name, data, session_id, user_task_execution_pk), "seq": seq}
    row = _new_row(session_id, user_task_execution_pk, text, message_id, event_name, data, seq)
    message_pk = db.execute(_STORE_AND_ANNOUNCE, {**row, "payload": payload}).scalar_one()
    publication.written("user_message_reception", {"message_pk": message_pk, **payload})
    return Accepted(message_pk, "pending", run=True, audio=not text)


def _retry(db: Connection, existing: Any, data: dict[str, Any] | None) -> Accepted:
    """Sets a failed message to run again, as stored: but a message not transcribed yet sent again with
    a recording (``data.audio``) takes the new one (the client re-uploads it, maybe in another format).
    The UPDATE is guarded by ``status = 'failed'``: a request that raced another retry of the message
    (it set it pending first) changes nothing and does not run it twice."""
    new_audio = (data or {}).get("audio") if not existing.text else None
    if new_audio is None:
        retried = db.execute(_RETRY_FAILED, {"b_pk": existing.message_pk}).rowcount
    else:
        stored = existing.data or {}
        retried = db.execute(_RETRY_FAILED_WITH, {"b_pk": existing.message_pk,
                                                  "b_data": {**stored, "audio": new_audio}}).rowcount
    if not retried:
        status = db.scalar(select(_message.c.status).where(_message.c.message_pk == existing.message_pk))
        return Accepted(existing.message_pk, status, run=False)
    replaced = (existing.data or {}).get("audio") if new_audio is not None else None
    return Accepted(existing.message_pk, "pending", run=True, audio=not existing.text,
                    replaced_audio=replaced if isinstance(replaced, dict) else None)


def _store(
    db: Connection, publication: Publication, session_id: str, user_task_execution_pk: int, text: str,
    message_id: str, event_name: str, data: dict[str, Any] | None, look_up: bool,
) -> Accepted:
    existing = (
        db.execute(_EXISTING, {"b_session": session_id, "b_message_id": message_id}).first() if look_up else None
    )
    if existing is not None:
        if existing.event_name != event_name:
            # The id of another kind of message (a text edit, a chat message): answering
            # with that one would silently drop this text.
            raise MessageIdTaken(message_id)
        if runs_again(existing.status, existing.data):
            return _retry(db, existing, data)
        return Accepted(existing.message_pk, existing.status, run=False)
    # The seq is taken first (the distributed log takes it from Redis), so the row is inserted with
    # it: no UPDATE after the event.
    seq = publication.next_seq()
    message_pk = db.execute(_INSERT_MESSAGE, {
        **_new_row(session_id, user_task_execution_pk, text, message_id, event_name, data, seq),
        "sender": "user", "status": "pending",
    }).inserted_primary_key[0]
    publication.add(db, "user_message_reception", {
        "message_pk": message_pk,
        **_reception(message_id, text, event_name, data, session_id, user_task_execution_pk),
    }, seq=seq)
    return Accepted(message_pk, "pending", run=True, audio=not text)
