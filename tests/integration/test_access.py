"""Ownership: another user's pks look exactly like missing ones, on every route and on the socket."""

from __future__ import annotations

import pytest
import socketio
import websocket

from tests.integration._helpers import QUESTION, event_count, execution_row, messages, new_execution, run_form
from tests.support.live import SocketRecorder
from tests.support.scripted_llm import Reply


@pytest.fixture
def owned(live):
    """An owner with an execution that has a produced text, and an intruder."""
    owner, intruder = live.new_user(), live.new_user()
    pk, session_id = new_execution(owner)
    produced = owner.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "production": "Hello"})
    return owner, intruder, pk, session_id, produced["produced_text_pk"]


def test_every_route_refuses_another_users_pks(live, llm, owned):
    owner, intruder, pk, session_id, produced_pk = owned
    _own_pk, own_session = new_execution(intruder)
    attempts = [
        ("PUT", "/user_task_execution", {"json": {"user_task_pk": owner.user_task_pk()}}),
        ("GET", "/user_task_execution", {"params": {"user_task_execution_pk": pk}}),
        ("DELETE", "/user_task_execution", {"params": {"user_task_execution_pk": pk}}),
        ("DELETE", "/user_task_execution", {"json": {"user_task_execution_pk": pk}}),
        ("POST", "/user_task_execution_run", {"json": {"user_task_execution_pk": pk,
                                                       "inputs": {"email_content": "x", "tone": "formal"}}}),
        ("POST", "/user_task_execution_title", {"json": {"user_task_execution_pk": pk, "title": "mine"}}),
        ("PUT", "/user_message", {"json": {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi"}}),
        ("PUT", "/user_message", {"json": {"session_id": own_session, "user_task_execution_pk": pk, "text": "hi"}}),
        ("PUT", "/user_message", {"json": {"session_id": session_id, "user_task_execution_pk": _own_pk,
                                           "text": "hi"}}),
        ("GET", "/message", {"params": {"session_id": session_id}}),
        ("GET", "/user_task_execution_produced_text", {"params": {"user_task_execution_pk": pk}}),
        ("GET", "/produced_text", {"params": {"produced_text_pk": produced_pk}}),
        ("POST", "/produced_text", {"json": {"produced_text_pk": produced_pk, "production": "mine"}}),
        ("POST", "/produced_text", {"json": {"user_task_execution_pk": pk, "production": "mine"}}),
    ]
    for method, path, kwargs in attempts:
        response = intruder.call(method, path, **kwargs)
        assert response.status_code == 404, (method, path, kwargs, response.status_code, response.text)
        assert "not found" in response.json()["error"]
    listed = intruder.ok("GET", "/user_task_execution")["user_task_executions"]
    assert pk not in [e["user_task_execution_pk"] for e in listed]
    # and nothing happened to the owner's execution
    live.wait_idle()
    view = owner.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
    assert (view["status"], view["title"], view["produced_text_version_count"]) == ("created", None, 1)
    assert messages(live, session_id) == [] and llm.requests == []


def test_every_route_needs_a_token(live):
    anonymous = live.new_user()
    anonymous.http.headers["Authorization"] = "Bearer not-a-token"
    for method, path in [("PUT", "/user_task_execution"), ("GET", "/user_task_execution"),
                         ("DELETE", "/user_task_execution"), ("POST", "/user_task_execution_run"),
                         ("POST", "/user_task_execution_title"), ("PUT", "/user_message"), ("GET", "/message"),
                         ("GET", "/user_task_execution_produced_text"), ("GET", "/produced_text"),
                         ("POST", "/produced_text")]:
        assert anonymous.call(method, path, json={}).status_code == 401, (method, path)


def test_socket_connect_needs_a_valid_token(live, monkeypatch: pytest.MonkeyPatch):
    # A refused client closes its websocket, and websocket-client then waits 3 s for a close
    # frame its read loop already consumed: keep that wait short.
    close = websocket.WebSocket.close
    monkeypatch.setattr(websocket.WebSocket, "close", lambda self, *a, **k: close(self, timeout=0.2))
    for token in ("", "not-a-token"):
        with pytest.raises(socketio.exceptions.ConnectionError):
            SocketRecorder(live.base_url, token)
    raw = socketio.Client(reconnection=False)
    with pytest.raises(socketio.exceptions.ConnectionError):
        raw.connect(live.base_url, transports=["websocket"], wait_timeout=5)  # no auth at all


def test_start_session_refuses_another_users_session(live, llm, owned):
    owner, intruder, pk, session_id, _produced = owned
    spy = intruder.socket()
    watcher = owner.socket(session_id)
    try:
        assert spy.start_session(session_id) == {"error": "session not found"}
        assert "error" in spy.start_session("")
        assert "error" in spy.client.call("start_session", {"session_id": session_id, "last_seq": "x"}, timeout=5)
        llm.script(Reply(QUESTION))
        run_form(owner, pk)
        watcher.wait_event("mojo_message")
        live.wait_idle()
        assert event_count(live, session_id) >= 2
        # the intruder's socket is still connected and got nothing of it
        assert spy.client.connected and spy.events == []
        assert spy.start_session(session_id, last_seq=0) == {"error": "session not found"}
        assert spy.events == []
    finally:
        spy.close()
        watcher.close()
    assert execution_row(live, pk).status == "started"
