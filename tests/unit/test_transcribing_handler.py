"""The transcribing runner handler: audio waiting since before a restart is transcribed on the first
job; other sessions' jobs pass straight through without reading the message."""

from __future__ import annotations

import threading

from sqlalchemy import event

from mojodex_core.audio.store import AudioStore
from mojodex_core.audio.transcription import TranscriptionResult
from mojodex_core.audio.turn import TranscribingHandler
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.migrate import upgrade
from mojodex_core.db.models import Message, Session, User
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.jobs import TurnJob


class FakeTranscriber:
    def __init__(self) -> None:
        self.calls: list[tuple[bytes, str, str]] = []

    def transcribe(self, content: bytes, filename: str, mime: str) -> TranscriptionResult:
        self.calls.append((content, filename, mime))
        return TranscriptionResult("spoken words", 2.0)


def test_audio_from_before_a_restart_is_transcribed_and_other_jobs_do_no_query(tmp_path):
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
        audio_pk, text_pk = audio.message_pk, text.message_pk
    ran: list[int] = []
    transcriber = FakeTranscriber()
    handler = TranscribingHandler(factory, SessionEventLog(factory), transcriber, store,
                                  lambda job, cancel: ran.append(job.message_pk))
    handler(TurnJob("audio", audio_pk), threading.Event())  # a new process: loads the waiting ones first
    assert ran == [audio_pk] and transcriber.calls == [(b"RIFF....WAVE", "a.wav", "audio/wav")]
    with factory() as db:
        message = db.get(Message, audio_pk)
        assert message.text == "spoken words" and message.data["audio"]["duration_s"] == 2.0
        assert message.data["audio"]["transcription"] == "done"

    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    handler(TurnJob("text", text_pk), threading.Event())
    assert ran == [audio_pk, text_pk] and statements == []  # no query for a session with no audio waiting
