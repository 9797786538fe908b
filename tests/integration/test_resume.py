"""Messages accepted but never answered when the server stopped are answered at start-up."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from datetime import UTC, datetime, timedelta

import mojodex_core.audio.databases
from backend.app import _resume, resume_unfinished_turns
from mojodex_core.audio.databases import REGISTRY
from mojodex_core.audio.store import AudioStore
from mojodex_core.db import database_key
from mojodex_core.db.models import Message
from tests.integration._helpers import QUESTION, QUESTION_TEXT, message, new_execution
from tests.integration.test_audio import wav_bytes
from tests.support.live import live_settings, serving
from tests.support.scripted_llm import Reply, Transcription


def _unanswered(live, pk: int, session_id: str, status: str) -> int:  # noqa: ANN001
    with live.db() as db:
        row = Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id=f"m-{status}",
                      event_name="user_message", text="hello", status=status, data={})
        db.add(row)
        db.flush()
        return row.message_pk


def _answer_all(_body: dict) -> Reply:
    # The messages other tests left unanswered on the suite's database are resumed too (a
    # resumption takes every one): a single scripted reply could go to one of theirs.
    return Reply(QUESTION)


def test_unanswered_messages_are_answered_at_start_up(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    message_pk = _unanswered(live, pk, session_id, "processing")  # the process died mid-turn
    llm.responder = _answer_all
    resume_unfinished_turns(live.platform)
    live.wait_idle()
    assert message(live, message_pk).status == "answered"
    answers = client.ok("GET", "/message", params={"session_id": session_id})["messages"]
    assert [m["text"] for m in answers if m["sender"] == "assistant"] == [QUESTION_TEXT]


def test_a_late_resume_leaves_messages_accepted_since_start_up_alone(live, llm):
    # The retry after an unreachable database at start-up must not take over messages this
    # process accepted meanwhile (before the fix it reset them to pending: answered twice).
    client = live.new_user()
    pk, session_id = new_execution(client)
    message_pk = _unanswered(live, pk, session_id, "processing")
    _resume(live.platform, booted_at=datetime.now(UTC) - timedelta(hours=1))
    live.wait_idle()
    assert message(live, message_pk).status == "processing"
    assert llm.requests == []
    with live.db() as db:  # leave no half-done message for the next tests
        db.get(Message, message_pk).status = "failed"


def test_a_resumed_turn_first_tells_clients_to_drop_the_partial_answer(live, llm):
    # The process died mid-turn after streaming tokens: the resumed turn streams from the start,
    # so clients must first be told to drop what they have (before: no such event).
    client = live.new_user()
    pk, session_id = new_execution(client)
    message_pk = _unanswered(live, pk, session_id, "processing")
    socket = client.socket(session_id)
    try:
        llm.responder = _answer_all
        resume_unfinished_turns(live.platform)
        socket.wait_event("mojo_message")
        live.wait_idle()
        names = [name for name, _ in socket.events]
        assert names[0] == "mojo_message_retrying", names
        retrying = socket.named("mojo_message_retrying")
        assert retrying == [{"session_id": session_id, "message_pk": message_pk, "user_task_execution_pk": pk,
                             "seq": retrying[0]["seq"]}]
        later = [payload["seq"] for name, payload in socket.events[1:]]
        assert later and min(later) > retrying[0]["seq"]
        # A client joining later gets it in the replay too, before the answer.
        late = client.socket(session_id)
        replayed = [name for name, _ in late.events]
        late.close()
        assert replayed.index("mojo_message_retrying") < replayed.index("mojo_message")
    finally:
        socket.close()


def test_a_server_starting_answers_the_messages_left_unanswered(live, llm, database_url):
    client = live.new_user()
    pk, session_id = new_execution(client)
    message_pk = _unanswered(live, pk, session_id, "processing")
    llm.responder = _answer_all
    settings = live_settings(database_url, llm.base_url)
    with serving(dataclasses.replace(settings, extra={**settings.extra, "resume_unfinished_turns": True})) as started:
        started.wait_idle()
    assert message(live, message_pk).status == "answered"


def test_the_suites_servers_leave_other_tests_unanswered_messages_alone(live, llm, database_url):
    # A server of the suite starts amid it, on the shared database. Resuming the messages earlier
    # tests left unanswered (unit tests of the intake and of session claims leave some) ran their
    # turns beside the test that started it, on the shared scripted LLM: they took its replies.
    client = live.new_user()
    pk, session_id = new_execution(client)
    message_pk = _unanswered(live, pk, session_id, "pending")
    try:
        with serving(live_settings(database_url, llm.base_url)) as started:
            started.wait_idle()
        assert llm.requests == []
        assert message(live, message_pk).status == "pending"
    finally:
        with live.db() as db:  # leave no half-done message for the next tests
            db.get(Message, message_pk).status = "failed"


def test_an_audio_message_left_pending_is_transcribed_at_start_up(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    live.platform.audio_store.save("resumed.wav", wav_bytes(1.0))
    with live.db() as db:
        row = Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id="voice-resumed",
                      event_name="user_message", text="", status="pending",
                      data={"audio": {"file": "resumed.wav", "mime": "audio/wav", "duration_s": 1.0,
                                      "transcription": "pending"}})
        db.add(row)
        db.flush()
        message_pk = row.message_pk
    llm.script_transcription(Transcription("spoken before the restart", duration=1.0))
    llm.responder = _answer_all
    resume_unfinished_turns(live.platform)
    live.wait_idle()
    stored = message(live, message_pk)
    assert (stored.text, stored.status) == ("spoken before the restart", "answered")
    assert stored.data["audio"]["transcription"] == "done"


def _alone_in_the_audio_folder(live) -> None:  # noqa: ANN001
    """The suite's var dir is shared by the platforms other tests start on other databases (an unreachable
    one, ...): its audio folder's registry lists them all, and no sweep would run. Here it is this database's."""
    folder = live.platform.audio_store.directory
    (folder / REGISTRY).write_text(database_key(live.platform.settings.database_url) + "\n")


def test_audio_files_no_message_names_are_deleted_at_start_up_once_older_than_the_grace(live, llm, caplog):
    # A process killed between writing an upload's file and committing its row (or while staging it)
    # left files no message names: before, they stayed forever.
    _alone_in_the_audio_folder(live)
    client = live.new_user()
    pk, session_id = new_execution(client)
    store = live.platform.audio_store
    named, orphan, fresh = (AudioStore.new_name(session_id, m, "wav") for m in ("voice-named", "orphan", "fresh"))
    for name in (named, orphan, fresh):
        store.save(name, wav_bytes(0.2))
    staged = store.stage(wav_bytes(0.2)).name  # a save killed before its rename
    voice = f"voice_{named[:40]}.mp3"  # a voice reply: no row names it either, kept to be read again
    store.save(voice, b"ID3")
    with live.db() as db:
        db.add(Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id="voice-named",
                       event_name="user_message", text="spoken", status="answered",
                       data={"audio": {"file": named, "mime": "audio/wav", "transcription": "done"}}))
    old = time.time() - 2 * 3600  # older than the default grace (1 h); `fresh` is an upload in flight
    for name in (named, orphan, staged, voice):
        os.utime(store.directory / name, (old, old))
    llm.responder = _answer_all
    with caplog.at_level("INFO", logger="mojodex.audio"):
        resume_unfinished_turns(live.platform)
        live.wait_idle()
        _wait_until(lambda: not (store.directory / orphan).exists())  # the sweep runs beside the server
        _wait_until(lambda: any("orphan(s) deleted" in r.getMessage() for r in caplog.records))
    left = set(os.listdir(store.directory))
    assert {named, fresh, voice} <= left and not {orphan, staged} & left
    assert store.read(named) == wav_bytes(0.2)
    [line] = [r.getMessage() for r in caplog.records if "orphan(s) deleted" in r.getMessage()]
    assert ", 2 orphan(s) deleted," in line


def test_the_start_up_does_not_wait_for_the_audio_sweep(live, llm, monkeypatch):
    # was: the sweep ran in create_app before the server listened; its look-up scanned the message
    # table (once per 500 uploads): a deployment of 50,000 uploads started 10 to 15 s later
    _alone_in_the_audio_folder(live)
    client = live.new_user()
    _pk, session_id = new_execution(client)
    store = live.platform.audio_store
    orphan = AudioStore.new_name(session_id, "orphan", "wav")
    store.save(orphan, wav_bytes(0.2))
    old = time.time() - 2 * 3600
    os.utime(store.directory / orphan, (old, old))
    looking, release = threading.Event(), threading.Event()
    real = mojodex_core.audio.databases.messages_naming

    def slow_naming(factory):  # noqa: ANN001, ANN202 - a look-up on a table of millions of messages
        lookup = real(factory)

        def named(names):  # noqa: ANN001, ANN202
            looking.set()
            release.wait(30)
            return lookup(names)

        return named

    monkeypatch.setattr(mojodex_core.audio.databases, "messages_naming", slow_naming)
    llm.responder = _answer_all
    starting = threading.Thread(target=resume_unfinished_turns, args=(live.platform,), daemon=True)
    try:
        starting.start()
        assert looking.wait(10), "the sweep did not start"
        starting.join(5)
        assert not starting.is_alive(), "the start-up waited for the audio sweep"
    finally:
        release.set()
    starting.join(30)
    live.wait_idle()
    _wait_until(lambda: not (store.directory / orphan).exists())


def _wait_until(predicate, timeout: float = 15.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
