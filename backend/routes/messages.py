"""Chat messages: PUT /user_message (send, idempotent by message_id), GET /message (read back)."""

from __future__ import annotations

import logging

from flask import request
from flask_restful import Resource
from sqlalchemy import and_, bindparam, select

from backend import api_models as m
from backend.auth import authenticate_deferred, deferred_token, settle_user, token_checked_by_route, user_required
from backend.context import platform
from backend.errors import ApiError, bad_request, not_found
from backend.rate_limits import rate_limits
from backend.routes._input import field, json_body, message_text_and_id, owned_session, query_int
from backend.routes._submit import submit_turn
from backend.routes.audio import is_audio_upload, put_audio_message
from backend.routes.home_chat import accept_home_chat_message
from backend.validation import USER, api
from mojodex_core.db import read_connection
from mojodex_core.db.models import Message, OrderSession, Session, Task, UserTask, UserTaskExecution
from mojodex_core.execution.dispatch import UnsupportedTaskType
from mojodex_core.execution.intake import MessageIdTaken, accept_user_message, would_run
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.timestamps import iso_utc
from mojodex_core.users import TOKEN_HOLDER, TokenRead, hash_token, token_read
from mojodex_core.workflow import store
from mojodex_core.workflow.runner import NOT_CHATTING

log = logging.getLogger("mojodex.messages")

# The caller's token, and then ownership, task type and order state, in one read: no row when
# there is no such token (a revoked or expired one has its row, ``token_read`` decides). The
# session and execution sides are left-joined with their conditions in the ON clauses, so the row
# exists whenever the token does: the caller tells "no such session (or not yours)" from "no such
# execution (or not yours, or deleted)" from "execution of another session", in that order of
# precedence.
_HOLDER = TOKEN_HOLDER.subquery("holder")
_AUTH_AND_CHECK = (
    select(*_HOLDER.c, Session.user_id.label("session_user_id"),
           UserTaskExecution.session_id.label("execution_session_id"), Task.type, OrderSession.state,
           Message.message_pk.label("existing_message_pk"), Message.status.label("existing_status"),
           Message.data.label("existing_data"))
    .select_from(_HOLDER)
    .outerjoin(Session, Session.session_id == bindparam("b_session"))
    .outerjoin(
        UserTaskExecution,
        and_(UserTaskExecution.user_task_execution_pk == bindparam("b_pk"), UserTaskExecution.status != "deleted"),
    )
    .outerjoin(
        UserTask,
        and_(UserTask.user_task_pk == UserTaskExecution.user_task_fk, UserTask.user_id == _HOLDER.c.user_id),
    )
    .outerjoin(Task, Task.task_pk == UserTask.task_fk)
    .outerjoin(OrderSession, OrderSession.user_task_execution_fk == UserTaskExecution.user_task_execution_pk)
    # Whether the message_id is new to the session (unique per session): the intake then inserts
    # without looking it up again.
    .outerjoin(Message, and_(Message.session_id == Session.session_id,
                             Message.message_id == bindparam("b_message_id")))
)
_HOLDER_FIELDS = len(_HOLDER.c)


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
        "created_at": iso_utc(message.created_at),
    }


class UserMessageResource(Resource):
    # The token is read in the route's own first statement, with its check (``_AUTH_AND_CHECK``).
    method_decorators = [token_checked_by_route]

    @api.validate(json=m.UserMessageBody, resp=m.answers(m.AcceptedMessageOut), security=USER, tags=["messages"])
    def put(self):  # noqa: ANN201
        if is_audio_upload():
            _authenticate_and_count()
            return put_audio_message()
        try:
            body = json_body()
            home_chat = body.get("origin") == "home_chat"
            if not home_chat:
                session_id = field(body, "session_id", str)
                pk = field(body, "user_task_execution_pk", int)
                text, message_id = message_text_and_id(body)
        except ApiError:
            # A bad token answers 401 before a bad body's 400 (spectree validates JSON bodies only),
            # and a good one is counted against the send limit first, as with user_required.
            _authenticate_and_count()
            raise
        if home_chat:
            _authenticate_and_count()
            return accept_home_chat_message(body)
        current = platform()
        token = deferred_token() or ""

        # One read on a pooled connection (no ORM session, nothing to commit), released before the
        # session's stream is held: nothing of a foreign session is touched.
        found = None
        if token:
            with read_connection(current.engine) as conn:
                found = conn.execute(_AUTH_AND_CHECK, {
                    "b_hash": hash_token(token), "b_session": session_id, "b_pk": pk, "b_message_id": message_id,
                }).first()
        user_id = settle_user(token_read(found[:_HOLDER_FIELDS]) if found is not None else TokenRead()).user_id
        # Counted once the token is known and before anything is stored (a body that fails validation
        # is not counted), as when user_required and the send limit's decorator came first.
        rate_limits().message_sent(user_id)
        if found.session_user_id != user_id:
            raise not_found("session")
        if found.type is None:
            raise not_found("user_task_execution")
        if found.execution_session_id != session_id:
            raise bad_request("session_id is not the session of this user_task_execution", field="session_id")
        if not current.dispatcher.handles(found.type):
            raise ApiError(422, str(UnsupportedTaskType(found.type)))
        # A message already stored, sent again after its response was lost, is answered as before (the one
        # stored), unless it failed and a retry may answer it: only a message that would run is checked here.
        runs = would_run(found.existing_status, found.existing_data)
        if found.state == "Idle" and runs:
            # Idle is final: refuse before anything is stored (no message row, no event), a failed
            # message's retry too (it would only fail again).
            raise ApiError(409, "this order is finished (the conversation is Idle): start a new one")
        if found.type == "workflow" and runs:
            # It will run: a review or result chat must be open for it.
            with current.db() as db:
                if store.chat_kind(db, db.get(UserTaskExecution, pk)) is None:
                    # No review chat and no result chat open (e.g. a step awaits validation): the
                    # runner would only fail it, so refuse before anything is stored.
                    raise ApiError(409, NOT_CHATTING)
        try:
            accepted = accept_user_message(
                current.session_factory,
                current.events,
                session_id=session_id,
                user_task_execution_pk=pk,
                text=text,
                message_id=message_id,
                seen_absent=found.existing_message_pk is None,
            )
        except MessageIdTaken as exc:
            raise ApiError(409, str(exc), field="message_id") from exc
        if accepted.run:
            submit_turn(current, TurnJob(session_id=session_id, message_pk=accepted.message_pk,
                                         event_name="user_message", audio=accepted.audio))
            if not accepted.audio:  # audio: requested once transcribed (the title must read the words)
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


def _authenticate_and_count() -> None:
    """The paths of PUT /user_message that read their token on its own: audio, home chat."""
    rate_limits().message_sent(authenticate_deferred().user_id)
