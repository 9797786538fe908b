"""Text edit actions on a produced text version: list those that apply, run one (streamed)."""

from __future__ import annotations

import logging
import uuid

from flask import g
from flask_restful import Resource

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import ApiError, bad_request, not_found
from backend.routes._input import field, json_body, query_int, require_editable
from backend.routes._submit import submit_turn
from backend.validation import USER, api
from mojodex_core.db.models import Message, ProducedText, ProducedTextVersion, TextEditAction, UserTaskExecution
from mojodex_core.execution.intake import FORM_MESSAGE_ID, MessageIdTaken, accept_user_message
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.text_edit.store import action_view, actions_for_text_type, applies_to
from mojodex_core.text_edit.turn import EVENT_NAME

log = logging.getLogger("mojodex.text_edit")


def owned_version(db, produced_text_version_pk: int) -> tuple[ProducedTextVersion, UserTaskExecution]:  # noqa: ANN001
    """The caller's version (of a live execution) and its execution, or 404."""
    version = db.get(ProducedTextVersion, produced_text_version_pk)
    produced = db.get(ProducedText, version.produced_text_fk) if version is not None else None
    if produced is None or produced.user_id != g.user.user_id:
        raise not_found("produced_text_version")
    execution = db.get(UserTaskExecution, produced.user_task_execution_fk)
    if execution is None or execution.status == "deleted":
        raise not_found("produced_text_version")
    return version, execution


def _result(db, message: Message) -> dict:  # noqa: ANN001
    """The new version's pk once the edit is done (a repeat of the message_id gets the same)."""
    answer = db.get(Message, message.answer_message_fk) if message.answer_message_fk else None
    data = answer.data if answer is not None and message.status == "answered" else {}
    return {
        "message_pk": message.message_pk,
        "message_id": message.message_id,
        "status": message.status,
        "error": message.error,
        "session_id": message.session_id,
        "user_task_execution_pk": message.user_task_execution_fk,
        "source_produced_text_version_pk": (message.data or {}).get("produced_text_version_pk"),
        "text_edit_action_pk": (message.data or {}).get("text_edit_action_pk"),
        "produced_text_version_pk": (data or {}).get("produced_text_version_pk"),
    }


class TextEditActionResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.VersionQuery, resp=m.answers(m.TextEditActionsOut), security=USER, tags=["produced texts"])
    def get(self):  # noqa: ANN201
        pk = query_int("produced_text_version_pk")
        with platform().db() as db:
            version, _execution = owned_version(db, pk)
            actions = actions_for_text_type(db, version.text_type_fk, g.user.language_code)
            return {"produced_text_version_pk": pk, "text_edit_actions": actions}, 200

    @api.validate(json=m.TextEditBody, resp=m.answers(m.TextEditOut), security=USER, tags=["produced texts"])
    def post(self):  # noqa: ANN201
        body = json_body()
        version_pk = field(body, "produced_text_version_pk", int)
        action_pk = field(body, "text_edit_action_pk", int)
        message_id = field(body, "message_id", str, None) or uuid.uuid4().hex
        if message_id == FORM_MESSAGE_ID or len(message_id) > 128:
            raise bad_request("message_id must be at most 128 characters and not 'form_start'", field="message_id")
        current = platform()
        with current.db() as db:
            version, execution = owned_version(db, version_pk)
            require_editable(db, execution)
            action = db.get(TextEditAction, action_pk)
            if action is None:
                raise not_found("text_edit_action")
            if not applies_to(db, action_pk, version.text_type_fk):
                raise bad_request("this text edit action does not apply to this text's type",
                                  field="text_edit_action_pk")
            session_id, pk = execution.session_id, execution.user_task_execution_pk
            text = action_view(action, g.user.language_code)["name"]
        try:
            accepted = accept_user_message(
                current.session_factory, current.events, session_id=session_id, user_task_execution_pk=pk,
                text=text, message_id=message_id, event_name=EVENT_NAME,
                data={"produced_text_version_pk": version_pk, "text_edit_action_pk": action_pk},
            )
        except MessageIdTaken as exc:
            raise ApiError(409, str(exc), field="message_id") from exc
        if accepted.run:
            submit_turn(current, TurnJob(session_id=session_id, message_pk=accepted.message_pk))
        log.info("text edit %s (%s) accepted on version %s, run=%s", accepted.message_pk, message_id, version_pk,
                 accepted.run)
        with current.db() as db:
            return _result(db, db.get(Message, accepted.message_pk)), 200
