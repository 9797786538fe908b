"""PUT /home_chat (open or return the user's free chat, leave its task) and its messages.

Home chat messages go through PUT /user_message with ``origin: "home_chat"``; that route hands
them to ``accept_home_chat_message`` here.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from flask import g, request
from flask_restful import Resource

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import ApiError, bad_request
from backend.routes._input import (
    current_user_id,
    field,
    form_body,
    json_body,
    message_text_and_id,
    owned_session,
)
from backend.routes._submit import submit_turn
from backend.validation import USER, api
from mojodex_core.execution.intake import Accepted, MessageIdTaken, accept_user_message
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.home_chat.service import home_chat_for_session, home_chat_view, leave_task, open_home_chat

log = logging.getLogger("mojodex.home_chat")
PLATFORMS = ("webapp", "mobile")


class HomeChatResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.HomeChatBody, resp=m.answers(m.HomeChatOut), security=USER, tags=["home chat"])
    def put(self):  # noqa: ANN201
        # A form post is read as the JSON body is (which the model checked already); an empty PUT opens
        # with the defaults.
        if request.form:
            body = form_body(m.HomeChatBody)
        else:
            body = json_body() if request.get_data(cache=True) else {}
        client_platform = field(body, "platform", str, "webapp")
        leave = field(body, "leave_task", bool, False)
        if client_platform not in PLATFORMS:
            raise bad_request("platform must be 'webapp' or 'mobile'", field="platform")
        with platform().db() as db:
            home_chat, created = open_home_chat(db, g.user, client_platform)
            left = leave_task(db, home_chat) if leave else None
            view = home_chat_view(db, home_chat)
        if created:
            log.info("home chat %s opened for user %s", view["home_chat_pk"], current_user_id())
        if left is not None:
            log.info("home chat %s left task execution %s", view["home_chat_pk"], left)
        return {**view, "left_user_task_execution_pk": left}, 200


def accept_home_chat_message(
    body: dict[str, Any],
    *,
    text: str | None = None,
    data: dict[str, Any] | None = None,
    before_accept: Callable[[str, str], None] | None = None,
    on_accepted: Callable[[Accepted], None] | None = None,
) -> tuple[dict[str, Any], int]:
    """Stores a home chat message (idempotent by message_id) and starts its turn.

    ``text``/``data``: given by an audio upload (empty text until transcribed); ``before_accept``
    runs once the checks passed, with (session_id, message_id), before the message is stored (its
    recording must exist before its row does); ``on_accepted`` once it is stored, before its turn is
    submitted."""
    session_id = field(body, "session_id", str)
    text, message_id = message_text_and_id(body, text)
    current = platform()
    with current.db() as db:
        owned_session(db, session_id)
        if home_chat_for_session(db, session_id) is None:
            raise bad_request("session_id is not your home chat session (open it with PUT /home_chat)",
                              field="session_id")
    if before_accept is not None:
        before_accept(session_id, message_id)
    try:
        accepted = accept_user_message(current.session_factory, current.events, session_id=session_id,
                                       user_task_execution_pk=None, text=text, message_id=message_id, data=data)
    except MessageIdTaken as exc:
        raise ApiError(409, str(exc), field="message_id") from exc
    if on_accepted is not None:
        on_accepted(accepted)
    if accepted.run:
        submit_turn(current, TurnJob(session_id=session_id, message_pk=accepted.message_pk, audio=accepted.audio))
    log.info("home chat message %s (%s) accepted for session %s, run=%s", accepted.message_pk, message_id,
             session_id, accepted.run)
    return {"message_pk": accepted.message_pk, "message_id": message_id, "status": accepted.status}, 200
