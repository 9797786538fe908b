"""Audio messages (multipart PUT /user_message) transcribed through the scripted /audio/transcriptions."""

from __future__ import annotations

import io
import os
import threading
import time
import uuid
import wave

import pytest
from sqlalchemy import select

import backend.routes.audio
import backend.routes.home_chat
from mojodex_core.audio.store import AudioStore
from mojodex_core.db.models import Message
from tests.integration._helpers import QUESTION, QUESTION_TEXT, message, messages, session_socket
from tests.support.scripted_llm import HTTPError, Reply, Transcription

SPOKEN = "write an email to Bob about the Friday sync"
FREE = "<reasoning>greeting</reasoning><user_language>en</user_language>Hi! What can I do for you?"


def wav_bytes(seconds: float = 1.0, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(b"\x00\x00" * int(seconds * rate))
    return buffer.getvalue()


M4A = b"\x00\x00\x00\x18ftypM4A \x00\x00\x02\x00" + b"\x00" * 2000


def _mobile_execution(client) -> tuple[int, str]:
    execution = client.ok("PUT", "/user_task_execution", json={"user_task_pk": client.user_task_pk(),
                                                              "platform": "mobile"})
    return execution["user_task_execution_pk"], execution["session_id"]


def _upload(client, fields: dict, content: bytes, name: str = "voice.wav", mime: str = "audio/wav"):
    return client.call("PUT", "/user_message", data=fields, files={"file": (name, content, mime)})


def test_an_audio_message_is_transcribed_and_answered(live, llm):
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    with session_socket(live, client, session_id) as socket:
        llm.script_transcription(Transcription(SPOKEN, duration=1.02))
        llm.script(Reply(QUESTION))
        response = _upload(client, {"session_id": session_id, "user_task_execution_pk": str(pk),
                                    "message_id": "voice-1"}, wav_bytes(1.0))
        assert response.status_code == 200, response.text
        sent = response.json()
        assert sent["status"] == "pending" and sent["message_id"] == "voice-1"
        transcribed = socket.wait_event("user_message_transcription")[0]
        answer = socket.wait_event("mojo_message")[0]
    assert transcribed["text"] == SPOKEN and transcribed["message_pk"] == sent["message_pk"]
    assert answer["text"] == QUESTION_TEXT
    stored = message(live, sent["message_pk"])
    assert stored.text == SPOKEN and stored.status == "answered"
    # the WAV header's duration is kept (the transcription's own figure is the fallback)
    assert stored.data["audio"]["duration_s"] == 1.0 and stored.data["audio"]["mime"] == "audio/wav"
    [form] = llm.transcription_requests
    assert form["model"] == "whisper-1" and form["response_format"] == "verbose_json"
    assert form["file"]["size"] == len(wav_bytes(1.0)) and form["file"]["head"][:4] == b"RIFF"
    request = llm.requests[-1]["messages"]
    assert request[-1] == {"role": "user", "content": SPOKEN}
    assert "HOW YOU WRITE" in request[0]["content"]  # a mobile session: spoken-style answers


def test_an_audio_message_in_the_home_chat_keeps_the_transcribed_duration(live, llm):
    client = live.new_user()
    session_id = client.ok("PUT", "/home_chat", json={"platform": "mobile"})["session_id"]
    with session_socket(live, client, session_id) as socket:
        llm.script_transcription(Transcription("hello there", duration=2.5))
        llm.script(Reply(FREE))
        response = _upload(client, {"origin": "home_chat", "session_id": session_id}, M4A, "voice.m4a", "audio/m4a")
        assert response.status_code == 200, response.text
        answer = socket.wait_event("mojo_message")[0]
    assert answer["text"] == "Hi! What can I do for you?"
    stored = message(live, response.json()["message_pk"])
    assert stored.text == "hello there" and stored.data["audio"]["duration_s"] == 2.5
    assert stored.data["audio"]["mime"] == "audio/mp4"
    assert llm.requests[-1]["messages"][-1] == {"role": "user", "content": "hello there"}


def test_a_failed_transcription_is_retried_with_the_same_message_id(live, llm):
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    fields = {"session_id": session_id, "user_task_execution_pk": str(pk), "message_id": "voice-retry"}
    with session_socket(live, client, session_id) as socket:
        llm.script_transcription(HTTPError(500), HTTPError(500))  # the first attempt and the client's retry
        first = _upload(client, fields, wav_bytes(0.5)).json()
        error = socket.wait_event("error")[0]
        live.wait_idle()
        assert error["retryable"] and error["message_id"] == "voice-retry"
        assert "could not be transcribed" in error["error"] and "HTTP 500" in error["error"]
        failed = message(live, first["message_pk"])
        assert failed.status == "failed" and failed.text == ""
        assert failed.data["audio"]["transcription"] == "failed"  # was: still "pending"
        assert llm.requests == []  # no turn ran on an empty message

        llm.script_transcription(Transcription(SPOKEN, duration=0.5, delay_s=1.5))
        llm.script(Reply(QUESTION))
        again = _upload(client, fields, wav_bytes(0.5)).json()
        assert again["message_pk"] == first["message_pk"]
        deadline = time.monotonic() + 10  # while the retry is transcribed (1.5 s), it says so
        while (state := message(live, first["message_pk"]).data["audio"]["transcription"]) == "failed":
            assert time.monotonic() < deadline, "still 'failed' while transcribed again"
            time.sleep(0.02)
        assert state == "pending"  # was: "failed" until "done"
        socket.wait_event("mojo_message")
    answered = message(live, first["message_pk"])
    assert answered.status == "answered" and answered.text == SPOKEN and answered.data["audio"]["duration_s"] == 0.5
    users = [m for m in messages(live, session_id) if m.sender == "user"]
    assert len(users) == 1


def test_a_failed_audio_message_sent_again_as_text_is_still_transcribed(live, llm):
    # was: the job said "audio" only when the request was an upload: a failed audio message sent
    # again through the text route (same message_id) was answered on its empty text
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    fields = {"session_id": session_id, "user_task_execution_pk": str(pk), "message_id": "voice-as-text"}
    with session_socket(live, client, session_id) as socket:
        llm.script_transcription(HTTPError(500))
        first = _upload(client, fields, wav_bytes(0.5)).json()
        socket.wait_event("error")
        live.wait_idle()
        llm.script_transcription(Transcription(SPOKEN, duration=0.5))
        llm.script(Reply(QUESTION))
        again = client.ok("PUT", "/user_message", json={"session_id": session_id, "user_task_execution_pk": pk,
                                                        "message_id": "voice-as-text", "text": "retry"})
        assert again["message_pk"] == first["message_pk"]
        socket.wait_event("mojo_message")
    assert message(live, first["message_pk"]).text == SPOKEN
    assert llm.requests[-1]["messages"][-1] == {"role": "user", "content": SPOKEN}


def test_oversized_wrong_type_and_empty_audio_are_refused_before_anything_is_stored(live, llm):
    client, stranger = live.new_user(), live.new_user()
    pk, session_id = _mobile_execution(client)
    fields = {"session_id": session_id, "user_task_execution_pk": str(pk)}
    max_bytes = live.platform.audio.max_bytes
    too_big = wav_bytes(1.0)[:44] + b"\x00" * (max_bytes - 44 + 1)
    cases = [
        (too_big, "voice.wav", "audio/wav", 413),
        (wav_bytes(1.0)[:44] + b"\x00" * (max_bytes + 200_000), "voice.wav", "audio/wav", 413),  # past the request cap
        (b"this is not audio at all", "voice.mp3", "audio/mpeg", 415),
        (b"<html></html>" * 10, "voice.wav", "audio/wav", 415),
        (b"", "voice.wav", "audio/wav", 400),
    ]
    for content, name, mime, status in cases:
        response = _upload(client, {**fields, "message_id": uuid.uuid4().hex}, content, name, mime)
        assert response.status_code == status, (name, len(content), response.status_code, response.text)
        assert "error" in response.json()
    # someone else's session: 404, nothing stored either
    response = _upload(stranger, {**fields, "message_id": "x"}, wav_bytes(0.2))
    assert response.status_code == 404
    with live.db() as db:
        assert list(db.scalars(select(Message).where(Message.session_id == session_id))) == []
    assert llm.transcription_requests == [] and llm.requests == []


def _files(live) -> set[str]:
    """Every file of the audio folder, staged ones (dot names) included."""
    directory = live.platform.audio_store.directory
    return set(os.listdir(directory)) if directory.exists() else set()


def _answered(live, llm, client, fields: dict, content: bytes, name: str = "voice.wav", mime: str = "audio/wav"):
    with session_socket(live, client, fields["session_id"]) as socket:
        llm.script_transcription(Transcription(SPOKEN, duration=1.0))
        llm.script(Reply(FREE if fields.get("origin") == "home_chat" else QUESTION))
        sent = _upload(client, fields, content, name, mime)
        assert sent.status_code == 200, sent.text
        socket.wait_event("mojo_message")
    return sent.json()


def _fields_of(client, where: str, message_id: str) -> dict:  # noqa: ANN001
    """The upload's form fields for a new mobile session of the client: a task's ("task") or a home chat's."""
    if where == "task":
        pk, session_id = _mobile_execution(client)
        return {"session_id": session_id, "user_task_execution_pk": str(pk), "message_id": message_id}
    session_id = client.ok("PUT", "/home_chat", json={"platform": "mobile"})["session_id"]
    return {"origin": "home_chat", "session_id": session_id, "message_id": message_id}


@pytest.mark.parametrize("where", ["task", "home_chat"])
def test_an_answered_audio_message_sent_again_keeps_its_recording_and_writes_nothing(live, llm, where):
    # was: the upload was written over the answered message's recording (or beside it, as another
    # format) although the message is answered as stored and never runs again
    client = live.new_user()
    fields = _fields_of(client, where, "voice-once")
    first = _answered(live, llm, client, fields, wav_bytes(1.0))
    recording = live.platform.audio_store.directory / message(live, first["message_pk"]).data["audio"]["file"]
    kept, before = recording.read_bytes(), _files(live)
    for content, name, mime in ((wav_bytes(0.3), "voice.wav", "audio/wav"), (M4A, "voice.m4a", "audio/m4a")):
        again = _upload(client, fields, content, name, mime)
        assert again.status_code == 200, again.text
        assert (again.json()["message_pk"], again.json()["status"]) == (first["message_pk"], "answered")
        assert recording.read_bytes() == kept and _files(live) == before, name
    assert len(llm.transcription_requests) == 1


def test_an_upload_refused_or_failing_half_way_leaves_no_file(live, llm, monkeypatch):
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    fields = {"session_id": session_id, "user_task_execution_pk": str(pk)}
    with live.db() as db:  # the id of another kind of message of the session (a text edit's)
        db.add(Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id="taken",
                       event_name="text_edit_action", text="Shorter", status="answered"))
    before = _files(live)
    taken = _upload(client, {**fields, "message_id": "taken"}, wav_bytes(0.5))
    assert taken.status_code == 409 and taken.json()["field"] == "message_id", taken.text
    assert _files(live) == before  # was: the recording of a message that was never stored

    def broken(*_args, **_kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(backend.routes.audio, "accept_user_message", broken)
    monkeypatch.setattr(backend.routes.home_chat, "accept_user_message", broken)
    failed = _upload(client, {**fields, "message_id": "half-way"}, wav_bytes(0.5))
    assert failed.status_code == 500 and "error" in failed.json()
    home = client.ok("PUT", "/home_chat", json={"platform": "mobile"})["session_id"]
    failed = _upload(client, {"origin": "home_chat", "session_id": home, "message_id": "half-way"}, wav_bytes(0.5))
    assert failed.status_code == 500 and "error" in failed.json()
    assert _files(live) == before  # was: two recordings of messages that were never stored
    with live.db() as db:
        assert db.scalar(select(Message).where(Message.message_id == "half-way")) is None
    assert llm.transcription_requests == [] and llm.requests == []


@pytest.mark.parametrize("where", ["task", "home_chat"])
def test_the_recording_exists_before_its_message_is_stored(live, llm, monkeypatch, where):
    # was: the row was committed as pending, then the file renamed into place: in distributed mode a
    # worker picking the pending message from the database in between failed it ("the audio file is missing")
    client = live.new_user()
    fields = _fields_of(client, where, "voice-race")
    directory = live.platform.audio_store.directory
    seen = []
    module = backend.routes.audio if where == "task" else backend.routes.home_chat
    real = module.accept_user_message

    def storing(*args, **kwargs):
        # what a worker reading the row once committed would find
        seen.append((directory / kwargs["data"]["audio"]["file"]).exists())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "accept_user_message", storing)
    _answered(live, llm, client, fields, wav_bytes(0.5))
    assert seen == [True]


def test_a_recording_that_cannot_be_put_in_place_stores_no_message(live, llm, monkeypatch):
    # was: the message was committed as pending, then the rename failed: a 500 and a message that
    # never runs (its turn never submitted)
    client = live.new_user()
    pk, session_id = _mobile_execution(client)

    def full_disk(*_args, **_kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(AudioStore, "keep", full_disk)
    before = _files(live)
    failed = _upload(client, {"session_id": session_id, "user_task_execution_pk": str(pk),
                              "message_id": "no-room"}, wav_bytes(0.5))
    assert failed.status_code == 500 and "error" in failed.json()
    with live.db() as db:
        assert db.scalar(select(Message).where(Message.message_id == "no-room")) is None
    assert _files(live) == before


def _failed_audio_message(live, pk: int, session_id: str, message_id: str, content: bytes) -> str:
    """A failed audio message stored as before uploads had names of their own (``<digest>.wav``)."""
    name = AudioStore.new_name(session_id, message_id, "wav")[:40] + ".wav"
    live.platform.audio_store.save(name, content)
    with live.db() as db:
        db.add(Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id=message_id,
                       event_name="user_message", text="", status="failed",
                       data={"audio": {"mime": "audio/wav", "bytes": len(content), "file": name,
                                       "transcription": "failed"}}))
    return name


def test_a_failed_message_sent_again_whose_store_fails_keeps_its_recording(live, llm, monkeypatch):
    # the failed row still names its recording: it stays as it was; the upload's file is removed
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    name = _failed_audio_message(live, pk, session_id, "failed-voice", wav_bytes(1.0))
    before = _files(live)

    def broken(*_args, **_kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(backend.routes.audio, "accept_user_message", broken)
    failed = _upload(client, {"session_id": session_id, "user_task_execution_pk": str(pk),
                              "message_id": "failed-voice"}, wav_bytes(0.5))
    assert failed.status_code == 500
    assert live.platform.audio_store.read(name) == wav_bytes(1.0) and _files(live) == before


@pytest.mark.parametrize("again", ["m4a", "wav"])
def test_a_failed_recording_sent_again_is_the_one_transcribed_and_the_old_one_removed(live, llm, again):
    # was: the upload was written as <digest>.m4a (or over <digest>.wav) but the retry left the row's
    # data.audio as it was: the old recording (or the new one with the old size) was transcribed and
    # the new file was no message's
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    old = _failed_audio_message(live, pk, session_id, "voice-again", wav_bytes(1.0))
    before = _files(live)
    content, name, mime = (M4A, "voice.m4a", "audio/mp4") if again == "m4a" else (wav_bytes(0.5), "v.wav", "audio/wav")
    with session_socket(live, client, session_id) as socket:
        llm.script_transcription(Transcription(SPOKEN, duration=0.5))
        llm.script(Reply(QUESTION))
        sent = _upload(client, {"session_id": session_id, "user_task_execution_pk": str(pk),
                                "message_id": "voice-again"}, content, name, mime)
        assert sent.status_code == 200 and sent.json()["status"] == "pending", sent.text
        socket.wait_event("mojo_message")
    stored = message(live, sent.json()["message_pk"])
    audio = stored.data["audio"]
    assert stored.status == "answered" and stored.text == SPOKEN
    assert (audio["mime"], audio["bytes"], audio["transcription"]) == (mime, len(content), "done")
    assert _files(live) == before - {old} | {audio["file"]}  # the replaced recording is removed
    assert live.platform.audio_store.read(audio["file"]) == content
    [transcribed] = llm.transcription_requests
    assert transcribed["file"]["size"] == len(content)


def test_a_failed_text_message_sent_again_as_audio_runs_its_text_and_keeps_no_file(live, llm):
    # was: the retry ran the stored text and the upload's file was left on disk, no message's
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    with live.db() as db:
        db.add(Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id="typed",
                       event_name="user_message", text="write to Bob", status="failed", data={}))
    before = _files(live)
    with session_socket(live, client, session_id) as socket:
        llm.script(Reply(QUESTION))
        sent = _upload(client, {"session_id": session_id, "user_task_execution_pk": str(pk), "message_id": "typed"},
                       wav_bytes(0.5))
        assert sent.status_code == 200 and sent.json()["status"] == "pending", sent.text
        socket.wait_event("mojo_message")
    stored = message(live, sent.json()["message_pk"])
    assert (stored.status, stored.text, stored.data.get("audio")) == ("answered", "write to Bob", None)
    assert _files(live) == before and llm.transcription_requests == []


def _racing(live, llm, monkeypatch, client, fields: dict, uploads: dict) -> dict:
    """Sends the uploads ``a`` and ``b`` (content, name, mime) at once: both recordings are in place
    before either message is stored (``b``'s written last), and ``a`` is stored first."""
    barrier = threading.Barrier(2, timeout=10)
    real_store, real_save = backend.routes.audio.accept_user_message, AudioStore.save
    b_size = len(uploads["b"][0])

    def save(self, name, content):
        if len(content) == b_size:
            time.sleep(0.3)
        return real_save(self, name, content)

    def storing(*args, **kwargs):
        barrier.wait()
        if kwargs["data"]["audio"]["bytes"] == b_size:
            time.sleep(0.5)
        return real_store(*args, **kwargs)

    monkeypatch.setattr(AudioStore, "save", save)
    monkeypatch.setattr(backend.routes.audio, "accept_user_message", storing)
    results = {}

    def send(key):
        response = _upload(client, fields, *uploads[key])
        results[key] = (response.status_code, response.json())

    threads = [threading.Thread(target=send, args=(key,)) for key in uploads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    live.wait_idle()
    return results


@pytest.mark.parametrize("failed_before", [False, True], ids=["new", "retry"])
def test_two_uploads_racing_for_one_message_id_leave_the_recording_its_row_describes(live, llm, monkeypatch,
                                                                                    failed_before):
    # was: both wrote the message's one file name: the file kept was b's while the row, a's, described a's
    # (and two retries racing both ran the message)
    client = live.new_user()
    pk, session_id = _mobile_execution(client)
    fields = {"session_id": session_id, "user_task_execution_pk": str(pk), "message_id": "raced"}
    old = _failed_audio_message(live, pk, session_id, "raced", wav_bytes(2.0)) if failed_before else None
    before = _files(live)
    llm.transcript = SPOKEN
    llm.script(Reply(QUESTION))
    uploads = {"a": (wav_bytes(0.5), "a.wav", "audio/wav"), "b": (wav_bytes(1.0), "b.wav", "audio/wav")}
    results = _racing(live, llm, monkeypatch, client, fields, uploads)
    assert {status for status, _ in results.values()} == {200}, results
    assert results["a"][1]["message_pk"] == results["b"][1]["message_pk"]
    stored = message(live, results["a"][1]["message_pk"])
    audio = stored.data["audio"]
    assert (stored.status, audio["bytes"]) == ("answered", len(uploads["a"][0]))
    assert live.platform.audio_store.read(audio["file"]) == uploads["a"][0]
    assert _files(live) == before - {old} | {audio["file"]}  # b's recording (and the replaced one) removed
    assert len(llm.transcription_requests) == 1
