"""Chat messages: PUT /user_message (send, idempotent by message_id), GET /message (read back)."""

from __future__ import annotations

import logging
import uuid

from flask import request
from flask_restful import Resource
from sqlalchemy import select

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import ApiError, bad_request
from backend.routes._input import field, json_body, owned_execution, owned_session, query_int
from backend.routes.audio import is_audio_upload, put_audio_message
from backend.routes.home_chat import accept_home_chat_message
from backend.validation import USER, api
from mojodex_core.db.models import Message, OrderSession, Task, UserTask
from mojodex_core.execution.dispatch import UnsupportedTaskType
from mojodex_core.execution.intake import FORM_MESSAGE_ID, MAX_TEXT_CHARS, MessageIdTaken, accept_user_message
from mojodex_core.execution.jobs import TurnJob

log = logging.getLogger("mojodex.messages")


def message_view(message: Message) -> dict:
    return {
        "message_pk": message.message_pk,
        "seq": message.seq,
        "session_id": message.session_id,
        "user_task_execution_pk": message.user_task_execution_fk,
        "sender": message.sender,
        "event_name": message.event_name,
        "message_id": message.message_id,
        "text": message.text,
        "status": message.status,
        "error": message.error,
        "answer_message_pk": message.answer_message_fk,
        "data": message.data or {},
        "created_at": message.created_at.isoformat() if message.created_at else None,
    }


class UserMessageResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.UserMessageBody, resp=m.answers(m.AcceptedMessageOut), security=USER, tags=["messages"])
    def put(self):  # noqa: ANN201
        if is_audio_upload():
            return put_audio_message()
        body = json_body()
        if body.get("origin") == "home_chat":
            return accept_home_chat_message(body)
        session_id = field(body, "session_id", str)
        pk = field(body, "user_task_execution_pk", int)
        text = field(body, "text", str)
        message_id = field(body, "message_id", str, None) or uuid.uuid4().hex
        if not text.strip():
            raise bad_request("text must not be empty", field="text")
        if len(text) > MAX_TEXT_CHARS:
            raise bad_request(f"text must be at most {MAX_TEXT_CHARS} characters", field="text")
        if message_id == FORM_MESSAGE_ID:
            raise bad_request(f"message_id {FORM_MESSAGE_ID!r} is reserved for form starts", field="message_id")
        if len(message_id) > 128:
            raise bad_request("message_id must be at most 128 characters", field="message_id")
        current = platform()
        with current.db() as db:
            owned_session(db, session_id)
            execution = owned_execution(db, pk)
            if execution.session_id != session_id:
                raise bad_request("session_id is not the session of this user_task_execution", field="session_id")
            task_type, order_state = db.execute(
                select(Task.type, OrderSession.state)
                .select_from(UserTask)
                .join(Task, Task.task_pk == UserTask.task_fk)
                .outerjoin(OrderSession, OrderSession.user_task_execution_fk == pk)
                .where(UserTask.user_task_pk == execution.user_task_fk)
            ).one()
            if not current.dispatcher.handles(task_type):
                raise ApiError(422, str(UnsupportedTaskType(task_type)))
            if order_state == "Idle":
                # Idle is final: refuse before anything is stored (no message row, no event).
                raise ApiError(409, "this order is finished (the conversation is Idle): start a new one")
        try:
            accepted = accept_user_message(
                current.session_factory,
                current.events,
                session_id=session_id,
                user_task_execution_pk=pk,
                text=text,
                message_id=message_id,
            )
        except MessageIdTaken as exc:
            raise ApiError(409, str(exc), field="message_id") from exc
        if accepted.run:
            current.runner.submit(TurnJob(session_id=session_id, message_pk=accepted.message_pk))
            current.request_title_summary(pk, session_id)  # first input only; submitted, never awaited
        log.info("message %s (%s) accepted for session %s, run=%s", accepted.message_pk, message_id, session_id,
                 accepted.run)
        return {"message_pk": accepted.message_pk, "message_id": message_id, "status": accepted.status}, 200


class MessageResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.MessagesQuery, resp=m.answers(m.MessagesOut), security=USER, tags=["messages"])
    def get(self):  # noqa: ANN201
        session_id = request.args.get("session_id")
        if not session_id:
            raise bad_request("session_id is required", field="session_id")
        after_seq = query_int("after_seq", 0, minimum=0)
        limit = query_int("limit", 50, minimum=1, maximum=500)
        with platform().db() as db:
            owned_session(db, session_id)
            rows = list(
                db.scalars(
                    select(Message)
                    .where(Message.session_id == session_id, Message.seq > after_seq)
                    .order_by(Message.seq)
                    .limit(limit + 1)
                )
            )
            has_more = len(rows) > limit
            rows = rows[:limit]
            return {
                "messages": [message_view(m) for m in rows],
                "has_more": has_more,
                "last_seq": rows[-1].seq if rows else after_seq,
            }, 200
