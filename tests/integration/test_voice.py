"""GET /voice: a reply read aloud through the scripted /audio/speech, owner only, made once."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from tests.integration._helpers import QUESTION, QUESTION_TEXT, new_execution, send
from tests.support.live import LiveServer, live_settings, serving
from tests.support.scripted_llm import HTTPError, Reply, Speech

MP3 = b"ID3\x04\x00\x00fake-mp3-bytes"


@pytest.fixture(scope="module")
def voice_server(database_url, scripted_llm, live_server) -> Iterator[LiveServer]:
    base = live_settings(database_url, scripted_llm.base_url)
    extra = {**base.extra, "audio": {"speech_model": "tts-1", "speech_voice": "nova"}}
    with serving(dataclasses.replace(base, extra=extra)) as live:
        yield live


def _answered(live: LiveServer, llm, client) -> tuple[dict, str]:
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION.replace(QUESTION_TEXT, "Shall I write to *Bob*?")))
        sent = send(client, pk, session_id, "an email to Bob")
        socket.wait_event("mojo_message")
    finally:
        socket.close()
        live.wait_idle()
    return sent, session_id


def test_a_reply_is_read_aloud_once_and_only_for_its_owner(voice_server, llm):
    client, stranger = voice_server.new_user(), voice_server.new_user()
    sent, _ = _answered(voice_server, llm, client)
    answer_pk = next(m for m in client.ok("GET", "/message", params={"session_id": _})["messages"]
                     if m["sender"] == "assistant")["message_pk"]
    llm.script_speech(Speech(MP3))
    response = client.call("GET", "/voice", params={"message_pk": answer_pk})
    assert response.status_code == 200 and response.headers["Content-Type"] == "audio/mpeg"
    assert response.content == MP3
    [request] = llm.speech_requests
    assert request == {"model": "tts-1", "voice": "nova", "input": "Shall I write to Bob?", "response_format": "mp3"}
    # made once: read back without a second call
    assert client.call("GET", "/voice", params={"message_pk": answer_pk}).content == MP3
    assert len(llm.speech_requests) == 1
    assert stranger.call("GET", "/voice", params={"message_pk": answer_pk}).status_code == 404
    user_message = client.call("GET", "/voice", params={"message_pk": sent["message_pk"]})
    assert user_message.status_code == 400
    assert client.call("GET", "/voice").status_code == 400


def test_a_failing_speech_service_is_a_502_and_can_be_retried(voice_server, llm):
    client = voice_server.new_user()
    _sent, session_id = _answered(voice_server, llm, client)
    answer_pk = next(m for m in client.ok("GET", "/message", params={"session_id": session_id})["messages"]
                     if m["sender"] == "assistant")["message_pk"]
    llm.script_speech(HTTPError(400))
    response = client.call("GET", "/voice", params={"message_pk": answer_pk})
    assert response.status_code == 502 and "HTTP 400" in response.json()["error"]
    llm.script_speech(Speech(MP3))
    assert client.call("GET", "/voice", params={"message_pk": answer_pk}).content == MP3


def test_without_a_speech_model_voice_is_not_configured(live, llm):
    client = live.new_user()
    _sent, session_id = _answered(live, llm, client)
    answer_pk = next(m for m in client.ok("GET", "/message", params={"session_id": session_id})["messages"]
                     if m["sender"] == "assistant")["message_pk"]
    response = client.call("GET", "/voice", params={"message_pk": answer_pk})
    assert response.status_code == 404 and "MOJODEX_SPEECH_MODEL" in response.json()["error"]
