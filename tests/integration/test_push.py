"""Push notifications of final replies: sent through the webhook notifier when the user has no open
socket, not sent when one is open. The webhook is a local HTTP receiver."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mojodex_core.push.notifiers import Notification, NotifierError, WebhookNotifier
from tests.integration._helpers import QUESTION, QUESTION_TEXT, new_execution, send
from tests.support.live import LiveServer, live_settings, serving
from tests.support.scripted_llm import Reply

SECRET = "push-secret-0123456789"


class Receiver:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.posts: list[tuple[dict, dict]] = []
        self._cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # noqa: ANN002
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._cond:
                    receiver.posts.append((json.loads(body), dict(self.headers) | {"raw": body}))
                    receiver._cond.notify_all()
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/push"

    def for_user(self, user_id: str) -> list[dict]:
        return [body for body, _ in self.posts if body["user_id"] == user_id]

    def wait_for_user(self, user_id: str, timeout: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self.for_user(user_id):
                left = deadline - time.monotonic()
                assert left > 0, "no push notification received"
                self._cond.wait(left)
            return self.for_user(user_id)[0]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def push_server(database_url, scripted_llm, live_server, receiver) -> Iterator[LiveServer]:
    base = live_settings(database_url, scripted_llm.base_url)
    extra = {**base.extra, "push": {"notifier": "webhook", "webhook_url": receiver.url, "webhook_secret": SECRET}}
    with serving(dataclasses.replace(base, extra=extra)) as live:
        yield live


@pytest.fixture
def push_live(push_server, llm) -> Iterator[LiveServer]:
    yield push_server
    push_server.wait_idle(10)


def test_a_push_is_sent_when_the_user_has_no_open_socket(push_live, llm, receiver):
    client = push_live.new_user()
    pk, session_id = new_execution(client)
    llm.script(Reply(QUESTION))
    send(client, pk, session_id, "an email to Bob")
    body = receiver.wait_for_user(client.user_id)
    assert body["session_id"] == session_id and body["event_name"] == "mojo_message"
    assert body["body"] == QUESTION_TEXT and body["user_task_execution_pk"] == pk and body["message_pk"]
    headers = next(h for b, h in receiver.posts if b["user_id"] == client.user_id)
    expected = hmac.new(SECRET.encode(), headers["raw"], hashlib.sha256).hexdigest()
    assert headers["X-Mojodex-Signature"] == f"sha256={expected}"


def test_no_push_while_a_socket_is_open(push_live, llm, receiver):
    client = push_live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION))
        send(client, pk, session_id, "an email to Bob")
        socket.wait_event("mojo_message")
        push_live.wait_idle()
        time.sleep(0.3)  # a submitted notification would have been delivered by now
    finally:
        socket.close()
    assert receiver.for_user(client.user_id) == []
    # the socket closed: the next reply is pushed again
    deadline = time.monotonic() + 5
    while push_live.platform.push.presence.online(client.user_id) and time.monotonic() < deadline:
        time.sleep(0.02)
    llm.script(Reply(QUESTION))
    send(client, pk, session_id, "Bob")
    assert receiver.wait_for_user(client.user_id)["body"] == QUESTION_TEXT


def test_a_refusing_webhook_is_an_error_after_its_attempts():
    refusing = Receiver(status=503)
    try:
        notifier = WebhookNotifier(refusing.url, attempts=2, timeout_s=2)
        notification = Notification("u", "s", "mojo_message", 1, None, "Mojo", "hi")
        with pytest.raises(NotifierError, match="HTTP 503"):
            notifier.send(notification)
        assert len(refusing.posts) == 2
        refusing.status = 400
        with pytest.raises(NotifierError, match="HTTP 400"):
            notifier.send(notification)
        assert len(refusing.posts) == 3  # a 4xx is not retried
    finally:
        refusing.close()
