"""Sign-in tokens expire: POST /login's token lives MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS (30 by
default); past that REST answers 401 ``token expired``, a socket handshake is refused and an
open socket is closed by the periodic check. Before: a sign-in token lived until revoked."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import requests
import socketio
from sqlalchemy import update

from backend.socket_auth import REVOKED_EVENT
from mojodex_core.db.models import ApiToken
from mojodex_core.passwords import set_password
from mojodex_core.users import create_user, grant, hash_token
from tests.integration._helpers import new_execution
from tests.support.live import Client

PASSWORD = "correct horse 42"


def _signed_in(live) -> Client:  # noqa: ANN001
    email = f"x{uuid.uuid4().hex[:10]}@example.com"
    with live.db() as db:
        user = create_user(db, name="Exp", email=email)
        set_password(user, PASSWORD)
        grant(db, user, ["test_email"])
        user_id = user.user_id
    response = requests.post(live.base_url + "/login", json={"email": email, "password": PASSWORD}, timeout=10)
    assert response.status_code == 200, response.text
    client = Client(live.base_url, response.json()["token"], user_id)
    client.login = response.json()
    return client


def _expire(live, token: str) -> None:  # noqa: ANN001
    with live.db() as db:
        db.execute(update(ApiToken).where(ApiToken.token_hash == hash_token(token))
                   .values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))


def test_a_sign_in_token_carries_its_expiry_of_30_days(live):
    before = datetime.now(UTC)
    client = _signed_in(live)
    expires_at = datetime.fromisoformat(client.login["expires_at"])
    assert before + timedelta(days=30) <= expires_at <= datetime.now(UTC) + timedelta(days=30)
    assert client.ok("GET", "/user")["user_id"] == client.user_id


def test_an_expired_sign_in_token_is_401_on_each_way_a_route_authenticates(live):
    # user_required routes (reads and writes), PUT /user_message's own statement and its home
    # chat path (the token read on its own), POST /logout
    client = _signed_in(live)
    pk, session_id = new_execution(client)
    _expire(live, client.token)
    for method, path, kwargs in [
        ("GET", "/user", {}),
        ("GET", "/user_task", {}),
        ("GET", "/user_task_execution", {"params": {"user_task_execution_pk": pk}}),
        ("GET", "/message", {"params": {"session_id": session_id}}),
        ("PUT", "/user_profile", {"json": {"name": "Ada"}}),
        ("POST", "/produced_text", {"json": {"user_task_execution_pk": pk, "production": "x"}}),
        ("PUT", "/user_message", {"json": {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi",
                                           "message_id": uuid.uuid4().hex}}),
        ("PUT", "/user_message", {"json": {"origin": "home_chat", "text": "hi"}}),
        ("POST", "/logout", {}),
    ]:
        response = client.call(method, path, **kwargs)
        assert response.status_code == 401, (path, response.text)
        assert response.json() == {"error": "token expired"}, path
    # a token the CLI issued (an API client's) has no expiry
    assert live.new_user().call("GET", "/user").status_code == 200


def test_a_socket_with_an_expired_token_is_refused(live):
    client = _signed_in(live)
    _expire(live, client.token)
    assert _handshake(live, client.token) == [{"message": "token expired", "data": {"error": "token expired"}}]


def test_an_open_socket_is_closed_once_its_token_expires(live):
    client = _signed_in(live)
    _pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    gone = threading.Event()
    socket.client.on("disconnect", lambda *_: gone.set())
    try:
        _expire(live, client.token)
        assert gone.wait(10), "the socket is still connected"
        # the event keeps its name (clients listen for it) but says why: not a revocation
        assert socket.named(REVOKED_EVENT) == [{"error": "token expired"}]
    finally:
        socket.close()


def test_start_session_with_an_expired_token_answers_token_expired(slow_check_server):
    client = _signed_in(slow_check_server)
    _pk, session_id = new_execution(client)
    socket = client.socket()
    gone = threading.Event()
    socket.client.on("disconnect", lambda *_: gone.set())
    try:
        _expire(slow_check_server, client.token)
        assert socket.start_session(session_id) == {"error": "token expired"}
        assert gone.wait(5)
        assert socket.named(REVOKED_EVENT) == [{"error": "token expired"}]
    finally:
        socket.close()


def _statements_with(live, token: str, act) -> list[str]:  # noqa: ANN001
    """The statements run while ``act()`` runs that carry ``token``'s hash (this test's only)."""
    from sqlalchemy import event

    statements: list[str] = []
    wanted = hash_token(token)

    def count(_conn, _cursor, statement, parameters, *_args):  # noqa: ANN001, ANN002
        if wanted in str(parameters):
            statements.append(statement)

    event.listen(live.platform.engine, "before_cursor_execute", count)
    try:
        act()
    finally:
        event.remove(live.platform.engine, "before_cursor_execute", count)
    return statements


def _handshake(live, token: str) -> list:  # noqa: ANN001
    refusals: list = []
    sio = socketio.Client(reconnection=False)
    sio.on("connect_error", refusals.append)
    with pytest.raises(socketio.exceptions.ConnectionError):
        sio.connect(live.base_url, auth={"token": token}, transports=["websocket"], wait_timeout=10)
    return refusals


@pytest.mark.parametrize("kind", ["expired", "never issued"])
def test_a_refused_token_is_decided_by_one_statement(live, kind):
    # Before, a token that did not authenticate was looked up a second time to tell an expired
    # one from any other: every failed authentication (garbage included) cost two queries.
    client = _signed_in(live)
    pk, session_id = new_execution(client)
    if kind == "expired":
        _expire(live, client.token)
    else:
        client.http.headers["Authorization"] = f"Bearer {uuid.uuid4().hex}"
    token = client.http.headers["Authorization"].split()[1]
    expected = "token expired" if kind == "expired" else "missing or invalid token"
    answers: list[requests.Response] = []
    message = {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi", "message_id": uuid.uuid4().hex}
    for method, path, kwargs in [("GET", "/user", {}), ("PUT", "/user_message", {"json": message})]:
        statements = _statements_with(
            live, token, lambda m=method, p=path, k=kwargs: answers.append(client.call(m, p, **k)))
        assert (answers[-1].status_code, answers[-1].json()) == (401, {"error": expected}), path
        assert len(statements) == 1, (path, statements)
    refusals: list = []
    statements = _statements_with(live, token, lambda: refusals.extend(_handshake(live, token)))
    assert refusals == [{"message": expected, "data": {"error": expected}}]
    assert len(statements) == 1, statements
