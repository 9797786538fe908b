"""Runner handler: an audio message is transcribed before its turn runs, on the runner's thread.

It keeps the session's order (the runner runs one job of a session at a time) and survives a
restart (resumed pending messages come back through here). A job says it is for audio
(``TurnJob.audio``): its submitter knows, and so does whichever process runs it (a distributed
worker, a restarted server); every other job passes straight through without a query. A failed
transcription fails the message the usual way (an ``error`` event, ``retryable``): the client
sends the same request again with the same ``message_id``, which re-uploads the audio and runs
it again.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.audio.store import AudioStore
from mojodex_core.audio.transcription import Transcriber, TranscriptionError
from mojodex_core.db import transaction
from mojodex_core.db.models import Message
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import fail_or_mark
from mojodex_core.execution.jobs import TurnJob

log = logging.getLogger("mojodex.audio")

Handler = Callable[[TurnJob, threading.Event], None]
TRANSCRIPTION_EVENT = "user_message_transcription"
FAILED = "The audio message could not be transcribed ({why}). Please retry with the same message_id."


def awaits_transcription(sender: str, text: str | None) -> bool:
    """A user message with no text yet: an audio message whose words are not transcribed (a text
    message is never empty). ``session_claims`` reads the same condition in SQL."""
    return sender == "user" and not text


class TranscribingHandler:
    def __init__(
        self,
        factory: sessionmaker[DbSession],
        events: EventPublisher,
        transcriber: Transcriber | None,
        store: AudioStore,
        inner: Handler,
    ) -> None:
        self._factory = factory
        self._events = events
        self._transcriber = transcriber
        self._store = store
        self._inner = inner
        # Told (execution pk, session id) after a task's audio message is transcribed: the title
        # job must read the words, so it is requested now rather than when the audio arrived.
        self.on_transcribed: Callable[[int, str], object] | None = None

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        if job.audio and job.task_tool_execution_pk is None and not self._transcribed(job):
            return
        self._inner(job, cancel)

    def _mark_transcription(self, message_pk: int, state: str) -> None:
        try:
            with transaction(self._factory) as db:
                message = db.get(Message, message_pk, with_for_update=True)
                stored = (message.data or {}).get("audio") or {}
                if stored.get("transcription") != "done":  # a worker that took over may have done it since
                    message.data = {**(message.data or {}), "audio": {**stored, "transcription": state}}
        except Exception:  # the failure itself is recorded next: this is only its detail
            log.exception("could not mark the transcription of message_pk=%s %s", message_pk, state)

    def _transcribed(self, job: TurnJob) -> bool:
        """False when the message is audio that could not be transcribed (it is failed, visibly)."""
        with self._factory() as db:
            row = db.execute(
                select(Message.data, Message.status, Message.message_id, Message.user_task_execution_fk)
                .where(Message.message_pk == job.message_pk)
            ).first()
        audio = (row.data or {}).get("audio") if row is not None else None
        if not isinstance(audio, dict) or audio.get("transcription") == "done" or row.status != "pending":
            return True
        if audio.get("transcription") == "failed":  # a retry: in progress again, as its status says
            self._mark_transcription(job.message_pk, "pending")
        started = time.monotonic()
        try:
            if self._transcriber is None:
                raise TranscriptionError("no transcription service is configured")
            content = self._store.read(audio["file"])
            result = self._transcriber.transcribe(content, audio["file"], audio.get("mime") or "audio/wav")
            if not result.text:
                raise TranscriptionError("nothing was heard in it")
        except Exception as exc:  # every failure is retryable on the same message_id
            why = str(exc) if isinstance(exc, TranscriptionError) else (
                "the audio file is missing" if isinstance(exc, FileNotFoundError) else "an internal error")
            if not isinstance(exc, (TranscriptionError, FileNotFoundError)):
                log.exception("transcription crashed message_pk=%s", job.message_pk)
            self._mark_transcription(job.message_pk, "failed")  # until a retry transcribes it
            fail_or_mark(self._factory, self._events, session_id=job.session_id, message_pk=job.message_pk,
                         message_id=row.message_id, user_task_execution_pk=row.user_task_execution_fk,
                         reason=FAILED.format(why=why))
            return False
        with self._events.publishing(job.session_id) as publication, transaction(self._factory) as db:
            message = db.get(Message, job.message_pk)
            duration = audio.get("duration_s") or result.duration_s
            message.text = result.text
            message.data = {**(message.data or {}),
                            "audio": {**audio, "transcription": "done", "duration_s": duration}}
            publication.add(db, TRANSCRIPTION_EVENT, {
                "message_pk": message.message_pk, "message_id": message.message_id, "text": result.text,
                "audio_duration_s": duration, "session_id": job.session_id,
                "user_task_execution_pk": message.user_task_execution_fk,
            })
        log.info("transcribed message_pk=%s (%s s of audio) in %.0f ms", job.message_pk, duration,
                 (time.monotonic() - started) * 1000)
        if self.on_transcribed is not None and row.user_task_execution_fk is not None:
            try:
                self.on_transcribed(row.user_task_execution_fk, job.session_id)
            except Exception:
                log.exception("could not request the title of execution %s", row.user_task_execution_fk)
        return True
