"""Small helpers shared by routes: reading input, checking ownership."""

from __future__ import annotations

import re
import uuid
from typing import Any

from flask import g, request
from pydantic import BaseModel, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from backend.errors import ApiError, bad_request, not_found
from backend.validation import validation_error
from mojodex_core.db.models import Session, Task, UserTask, UserTaskExecution
from mojodex_core.execution.intake import FORM_MESSAGE_ID, MAX_TEXT_CHARS
from mojodex_core.execution.produced_text import ProducedTextFrozen, check_editable
from mojodex_core.execution.session_access import live_session

_MISSING = object()
# Every pk, seq and index is a 32-bit INTEGER column: a larger value can name no row, and the
# database driver rejects it (a 500) instead of finding nothing.
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_INT_TEXT = re.compile(r"\s*-?[0-9]+\s*")


def _in_range(name: str, value: int) -> int:
    if not INT_MIN <= value <= INT_MAX:
        raise bad_request(f"{name} is out of range", field=name)
    return value


def json_body() -> dict[str, Any]:
    body = request.get_json(silent=True)
    if body is None and request.form:
        body = request.form.to_dict()
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object")
    return body


# The usual spellings of a boolean in a form post (every form field is text).
_FORM_BOOLEANS = {"true": True, "1": True, "on": True, "false": False, "0": False, "off": False}


def form_body(model: type[BaseModel]) -> dict[str, Any]:
    """A form post's fields, checked against the body ``model`` as a JSON body is (the models see
    JSON bodies only): the same 400, ``errors`` included. Its boolean fields accept the usual form
    spellings ("true"/"false", "1"/"0", "on"/"off", any case) and are returned as booleans; a JSON
    body's stay strict."""
    body: dict[str, Any] = request.form.to_dict()
    for name, info in model.model_fields.items():
        value = body.get(name)
        if info.annotation is bool and isinstance(value, str) and value.strip().lower() in _FORM_BOOLEANS:
            body[name] = _FORM_BOOLEANS[value.strip().lower()]
    try:
        model.model_validate(body)
    except ValidationError as exc:
        raise validation_error(exc, "form") from None
    return body


def field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = _MISSING) -> Any:
    value = body.get(name, _MISSING)
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise bad_request(f"{name} is required", field=name)
        return default
    if kind is int and isinstance(value, str) and _INT_TEXT.fullmatch(value):
        value = int(value)  # query strings and form posts carry numbers as text
    if isinstance(value, bool) and kind is int or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise bad_request(f"{name} must be of type {expected}", field=name)
    if kind is int:
        _in_range(name, value)
    return value


def query_int(name: str, default: Any = _MISSING, *, minimum: int | None = None, maximum: int | None = None) -> Any:
    raw = request.args.get(name)
    if raw is None or raw == "":
        if default is _MISSING:
            raise bad_request(f"{name} is required", field=name)
        return default
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"{name} must be an integer", field=name) from None
    _in_range(name, value)
    if minimum is not None and value < minimum:
        raise bad_request(f"{name} must be >= {minimum}", field=name)
    if maximum is not None and value > maximum:
        raise bad_request(f"{name} must be <= {maximum}", field=name)
    return value


def message_text_and_id(body: dict[str, Any], text: str | None = None) -> tuple[str, str]:
    """A chat message's text (from the body unless given, e.g. an audio upload's) and its idempotency
    key (a UUID when absent), checked as every message route checks them."""
    if text is None:
        text = field(body, "text", str)
        if not text.strip():
            raise bad_request("text must not be empty", field="text")
    message_id = field(body, "message_id", str, None) or uuid.uuid4().hex
    if len(text) > MAX_TEXT_CHARS:
        raise bad_request(f"text must be at most {MAX_TEXT_CHARS} characters", field="text")
    if message_id == FORM_MESSAGE_ID:
        raise bad_request(f"message_id {FORM_MESSAGE_ID!r} is reserved for form starts", field="message_id")
    if len(message_id) > 128:
        raise bad_request("message_id must be at most 128 characters", field="message_id")
    return text, message_id


def current_user_id() -> str:
    return g.user.user_id


def owned_execution(db: DbSession, user_task_execution_pk: int, *, include_deleted: bool = False) -> UserTaskExecution:
    """The caller's execution, or 404: another user's pk looks exactly like a missing one."""
    query = (
        select(UserTaskExecution)
        .join(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
        .where(
            UserTaskExecution.user_task_execution_pk == user_task_execution_pk,
            UserTask.user_id == current_user_id(),
        )
    )
    if not include_deleted:
        query = query.where(UserTaskExecution.status != "deleted")
    execution = db.scalar(query)
    if execution is None:
        raise not_found("user_task_execution")
    return execution


def owned_session(db: DbSession, session_id: str) -> Session:
    session = live_session(db, session_id) if isinstance(session_id, str) else None
    if session is None or session.user_id != current_user_id():
        raise not_found("session")
    return session


def require_editable(db: DbSession, execution: UserTaskExecution) -> None:
    """409 when the execution's produced text is not its user's to edit (an order's ticket)."""
    try:
        check_editable(execution_task(db, execution).type)
    except ProducedTextFrozen as exc:
        raise ApiError(409, str(exc)) from exc


def execution_task(db: DbSession, execution: UserTaskExecution) -> Task:
    return db.scalar(
        select(Task)
        .join(UserTask, UserTask.task_fk == Task.task_pk)
        .where(UserTask.user_task_pk == execution.user_task_fk)
    )
