"""PUT /user_message with an audio file (multipart/form-data, field ``file``), as the mobile app sends.

The form carries the same fields as a text message (``session_id`` and ``user_task_execution_pk``,
or ``origin=home_chat``; ``message_id``) but no ``text``. The audio is checked (format sniffed from
its bytes: 415; size: 413) and the message accepted with an empty text: the runner transcribes it
before its turn (``mojodex_core.audio.turn``). The recording is written to disk only for a message
that will run, under a name of its own (``data.audio.file``), and before its row is committed (a worker
may pick a pending message as soon as it is): put in place once the checks passed, removed if the
stored message does not name it (a refusal, a failure half-way, another request with the same
message_id first). A retry of a failed message not transcribed yet takes the new recording (the row's
``data.audio`` is the upload's); the one it replaces is removed once that is committed.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from flask import request
from sqlalchemy import select

from backend.context import platform
from backend.errors import ApiError, bad_request
from backend.routes._input import field, owned_execution, owned_session
from backend.routes._submit import submit_turn
from backend.routes.home_chat import accept_home_chat_message
from mojodex_core.audio.store import AudioStore
from mojodex_core.audio.upload import AudioRejected, check_audio, wav_duration
from mojodex_core.db.models import Message, OrderSession, Task, UserTask
from mojodex_core.execution.dispatch import UnsupportedTaskType
from mojodex_core.execution.intake import (
    FORM_MESSAGE_ID,
    Accepted,
    MessageIdTaken,
    accept_user_message,
    would_run,
)
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.workflow import store as workflow_store
from mojodex_core.workflow.runner import NOT_CHATTING

log = logging.getLogger("mojodex.audio")


def is_audio_upload() -> bool:
    return request.mimetype == "multipart/form-data" and "file" in request.files


def _would_run(session_id: str, message_id: str) -> bool:
    """Whether the message sent with this id would run: a new one, or one a retry runs again."""
    with platform().db() as db:
        existing = db.execute(select(Message.status, Message.data).where(
            Message.session_id == session_id, Message.message_id == message_id)).first()
    return would_run(*(existing or (None, None)))


def _named_by_its_message(session_id: str, message_id: str, name: str) -> bool:
    """Whether the message stored with this id (committed) names the file ``name``."""
    with platform().db() as db:
        data = db.scalar(select(Message.data).where(Message.session_id == session_id,
                                                     Message.message_id == message_id))
    return isinstance(data, dict) and isinstance(data.get("audio"), dict) and data["audio"].get("file") == name


class _Recording:
    """The uploaded audio: on disk only for a message that will run, and before the row that names it."""

    def __init__(self, store: AudioStore, content: bytes, extension: str, audio: dict[str, Any]) -> None:
        self._store, self._content, self._extension, self.audio = store, content, extension, audio
        self._unclaimed: tuple[str, str] | None = None  # (session_id, message_id) of a file no row names yet

    def place(self, session_id: str, message_id: str, runs: bool | None = None) -> None:
        """Once the checks passed, before the message is stored: the upload's own file (written aside,
        then renamed into place), unless the message stored with this id is answered as it is (it never
        runs again, its recording stays). The file exists before the row naming it is committed: in
        distributed mode a worker may pick a pending message from the database as soon as it is."""
        self.audio["file"] = AudioStore.new_name(session_id, message_id, self._extension)
        if runs is None:
            runs = _would_run(session_id, message_id)
        if runs:
            self._store.save(self.audio["file"], self._content)
            self._unclaimed = (session_id, message_id)

    def settle(self, accepted: Accepted) -> None:
        """Once stored: a message stored to run that awaits its transcription names this upload (a new
        one, or a failed one not transcribed yet that took it); the recording it replaced is no
        message's now. Any other (a failed text or transcribed message run as stored, another request's
        retry first) is left to ``discard``, which looks."""
        if accepted.run and accepted.audio:
            self._unclaimed = None
        replaced = (accepted.replaced_audio or {}).get("file")
        if isinstance(replaced, str) and replaced != self.audio["file"]:
            try:
                self._store.remove(replaced)
            except Exception:  # an orphan file is harmless
                log.exception("could not remove recording %s replaced by a retry", replaced)

    def discard(self) -> None:
        """At the end of the request: a file placed for a message not stored to run with it (refused,
        raced by another request, failed half-way, a retry of a message that is no longer waiting for its
        recording) is removed, unless the message stored with this id names it (stored before a failure
        half-way). When that cannot be read the file stays: an orphan file is harmless, a row without
        its file is not."""
        if self._unclaimed is None:
            return
        session_id, message_id = self._unclaimed
        self._unclaimed = None
        try:
            named = _named_by_its_message(session_id, message_id, self.audio["file"])
        except Exception:
            log.exception("could not tell whether recording %s is a message's; left on disk", self.audio["file"])
            return
        if not named:
            self._store.remove(self.audio["file"])


def put_audio_message():  # noqa: ANN201
    current = platform()
    config = current.audio
    body = request.form.to_dict()
    upload = request.files["file"]
    content = upload.stream.read(config.max_bytes + 1)
    try:
        audio_format = check_audio(content, config.max_bytes)
    except AudioRejected as exc:
        raise ApiError(exc.status, str(exc), field="file") from exc
    message_id = field(body, "message_id", str, None) or uuid.uuid4().hex
    if message_id == FORM_MESSAGE_ID or len(message_id) > 128:
        raise bad_request("message_id must be at most 128 characters and not 'form_start'", field="message_id")
    body["message_id"] = message_id
    audio = {"mime": audio_format.mime, "bytes": len(content), "duration_s": wav_duration(content),
             "transcription": "pending", "filename": (upload.filename or "")[:255]}
    recording = _Recording(current.audio_store, content, audio_format.extension, audio)
    try:
        if body.get("origin") == "home_chat":
            result = accept_home_chat_message(body, text="", data={"audio": audio}, before_accept=recording.place,
                                              on_accepted=recording.settle)
            log.info("audio message %s (%d bytes, %s) accepted in a home chat", message_id, len(content),
                     audio_format.mime)
            return result
        return _task_message(body, message_id, recording, content)
    finally:
        recording.discard()  # placed and not claimed: refused, raced, or failed half-way


def _task_message(body: dict[str, Any], message_id: str, recording: _Recording, content: bytes):  # noqa: ANN202
    current = platform()
    audio = recording.audio
    session_id = field(body, "session_id", str)
    pk = field(body, "user_task_execution_pk", int)
    # The same checks as a text message to a task (backend.routes.messages), before anything is stored.
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
        # As for a text message: a message stored, sent again, answers as before unless it would run again.
        existing = db.execute(select(Message.status, Message.data).where(
            Message.session_id == session_id, Message.message_id == message_id)).first()
        runs = would_run(*(existing or (None, None)))
        if order_state == "Idle" and runs:
            raise ApiError(409, "this order is finished (the conversation is Idle): start a new one")
        if task_type == "workflow" and runs and workflow_store.chat_kind(db, execution) is None:
            raise ApiError(409, NOT_CHATTING)  # no review or result chat open: the runner would only fail it
    recording.place(session_id, message_id, runs)
    try:
        accepted = accept_user_message(current.session_factory, current.events, session_id=session_id,
                                       user_task_execution_pk=pk, text="", message_id=message_id,
                                       data={"audio": audio})
    except MessageIdTaken as exc:
        raise ApiError(409, str(exc), field="message_id") from exc
    recording.settle(accepted)
    if accepted.run:
        # The title/summary job is requested once transcribed (it must read the words, not "").
        submit_turn(current, TurnJob(session_id=session_id, message_pk=accepted.message_pk, audio=accepted.audio))
    log.info("audio message %s (%s, %d bytes, %s) accepted for session %s, run=%s", accepted.message_pk, message_id,
             len(content), audio["mime"], session_id, accepted.run)
    return {"message_pk": accepted.message_pk, "message_id": message_id, "status": accepted.status}, 200
