"""The transcribing runner handler: a job for an audio message is transcribed by whichever process
runs it; other jobs pass straight through without reading the message."""

from __future__ import annotations

import threading

from sqlalchemy import event

from background.distributed.runner import decode_job, encode_job
from mojodex_core.audio.store import AudioStore
from mojodex_core.audio.transcription import TranscriptionResult
from mojodex_core.audio.turn import TranscribingHandler, awaits_transcription
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.migrate import upgrade
from mojodex_core.db.models import Message, Session, User
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.session_claims import Waiting, first_look, next_pending


class FakeTranscriber:
    def __init__(self) -> None:
        self.calls: list[tuple[bytes, str, str]] = []

    def transcribe(self, content: bytes, filename: str, mime: str) -> TranscriptionResult:
        self.calls.append((content, filename, mime))
        return TranscriptionResult("spoken words", 2.0)


def _stored(tmp_path):  # noqa: ANN001, ANN202
    """A database with an audio message and a text message, each in a session of its own."""
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    store = AudioStore(tmp_path / "audio")
    store.save("a.wav", b"RIFF....WAVE")
    with transaction(factory) as db:
        db.add(User(user_id="u", name="U", email="u@example.com"))
        db.flush()
        db.add_all([Session(session_id="audio", user_id="u"), Session(session_id="text", user_id="u")])
        db.flush()
        audio = Message(session_id="audio", sender="user", event_name="user_message", text="", status="pending",
                        message_id="m1", data={"audio": {"file": "a.wav", "mime": "audio/wav", "duration_s": None,
                                                         "transcription": "pending"}})
        text = Message(session_id="text", sender="user", event_name="user_message", text="hi", status="pending",
                       message_id="m2", data={})
        db.add_all([audio, text])
        db.flush()
        return engine, factory, store, audio.message_pk, text.message_pk


def test_an_audio_job_is_transcribed_by_a_process_that_did_not_accept_it_and_other_jobs_do_no_query(tmp_path):
    # was: a process knew of the audio messages it had accepted itself, and of those waiting when
    # it ran its first job; a distributed worker that had run one job already answered a later
    # audio message on its empty text, never transcribed
    engine, factory, store, audio_pk, text_pk = _stored(tmp_path)
    ran: list[int] = []
    transcriber = FakeTranscriber()
    handler = TranscribingHandler(factory, SessionEventLog(factory), transcriber, store,
                                  lambda job, cancel: ran.append(job.message_pk))
    with transaction(factory) as db:  # the audio message, as if not yet accepted
        db.get(Message, audio_pk).status = "failed"
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    handler(TurnJob("text", text_pk), threading.Event())  # this process' first job
    assert ran == [text_pk] and statements == []  # no query for a job that is not audio
    with transaction(factory) as db:  # accepted meanwhile by another process (the backend)
        db.get(Message, audio_pk).status = "pending"
    handler(TurnJob("audio", audio_pk, audio=True), threading.Event())
    assert ran == [text_pk, audio_pk] and transcriber.calls == [(b"RIFF....WAVE", "a.wav", "audio/wav")]
    with factory() as db:
        message = db.get(Message, audio_pk)
        assert message.text == "spoken words" and message.data["audio"]["duration_s"] == 2.0
        assert message.data["audio"]["transcription"] == "done"


def test_the_runner_s_look_and_a_distributed_job_say_that_a_message_is_audio(tmp_path):
    _engine, factory, _store, audio_pk, text_pk = _stored(tmp_path)
    with factory() as db:
        assert next_pending(db, "audio") == Waiting(audio_pk, "user_message", True)
        assert next_pending(db, "text") == Waiting(text_pk, "user_message", False)
        assert first_look(db, "audio", orphans=True).pending.audio is True
    for job in (TurnJob("audio", audio_pk, audio=True), TurnJob("text", text_pk)):
        assert decode_job(job.session_id, encode_job(job)).audio is job.audio
    assert awaits_transcription("user", "") and not awaits_transcription("user", "hi")
    assert not awaits_transcription("system", "")
