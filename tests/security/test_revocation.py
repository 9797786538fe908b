"""`mojodex users revoke-token`: REST refuses the token at once, its open sockets are disconnected
within seconds, and a start_session on one of them is refused (before: the socket kept working)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from backend.socket_auth import REVOKED_EVENT
from mojodex_core.db.models import ApiToken
from mojodex_core.users import hash_token, issue_token, user_for_token
from tests.integration._helpers import new_execution


def _disconnect_watch(recorder) -> threading.Event:  # noqa: ANN001
    gone = threading.Event()
    recorder.client.on("disconnect", lambda *_: gone.set())
    return gone


def test_a_revoked_tokens_open_socket_is_disconnected_within_seconds(live, cli):
    client = live.new_user()
    _pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    gone = _disconnect_watch(socket)
    other = live.new_user()  # another user's socket stays up
    other_socket = other.socket()
    try:
        result = cli("users", "revoke-token", "--token", client.token)
        revoked_at = time.monotonic()
        assert result.exit_code == 0, result.output
        assert "revoked 1 token(s)" in result.output
        assert client.call("GET", "/user_task").status_code == 401
        assert gone.wait(10), "the socket is still connected"
        elapsed = time.monotonic() - revoked_at
        print(f"revoked socket disconnected {elapsed:.2f} s after the CLI returned")
        assert elapsed < 5
        assert socket.named(REVOKED_EVENT) == [{"error": "token revoked"}]
        assert other_socket.client.connected
        assert other.call("GET", "/user_task").status_code == 200
    finally:
        socket.close()
        other_socket.close()


def test_start_session_with_a_revoked_token_is_refused_and_the_socket_closed(slow_check_server, cli):
    client = slow_check_server.new_user()
    _pk, session_id = new_execution(client)
    socket = client.socket()
    gone = _disconnect_watch(socket)
    try:
        assert cli("users", "revoke-token", "--token", client.token).exit_code == 0
        assert socket.start_session(session_id) == {"error": "token revoked"}
        assert gone.wait(5)
        assert socket.named(REVOKED_EVENT) == [{"error": "token revoked"}]
    finally:
        socket.close()


def test_revoking_every_token_of_a_user(live, cli):
    client = live.new_user()
    with live.db() as db:
        user = user_for_token(db, client.token)
        second, email = issue_token(db, user, label="laptop"), user.email
    result = cli("users", "revoke-token", "--user", email)
    assert result.exit_code == 0 and "revoked 2 token(s)" in result.output and "laptop" in result.output
    for token in (client.token, second):
        assert client.call("GET", "/user_task", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    again = cli("users", "revoke-token", "--user", email)
    assert again.exit_code == 0 and "nothing to revoke" in again.output
    assert "revoked already" in cli("users", "revoke-token", "--token", client.token).output


def test_revoking_a_user_s_tokens_leaves_the_expired_ones_out(live, cli):
    # An expired sign-in token no longer authenticates: it is not revoked again, nor counted live.
    client = live.new_user()
    with live.db() as db:
        user = user_for_token(db, client.token)
        expired = issue_token(db, user, label="login", expires_at=datetime.now(UTC) - timedelta(seconds=1))
        email = user.email
    result = cli("users", "revoke-token", "--user", email)
    assert result.exit_code == 0 and "revoked 1 token(s): default" in result.output, result.output
    with live.db() as db:
        assert db.scalar(select(ApiToken.revoked_at).where(ApiToken.token_hash == hash_token(expired))) is None
    again = cli("users", "revoke-token", "--user", email)
    assert again.exit_code == 0 and f"nothing to revoke: {email} has no live token" in again.output, again.output
    one = cli("users", "revoke-token", "--token", expired)
    assert one.exit_code == 0 and "nothing to revoke: the token has expired" in one.output, one.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "give either --token TOKEN or --user EMAIL"),
        (["--token", "t", "--user", "a@example.com"], "give either --token TOKEN or --user EMAIL"),
        (["--token", "no-such-token-0123456789"], "token: no such token"),
        (["--user", "nobody@example.com"], "no user with email"),
    ],
)
def test_revoke_token_refuses_bad_arguments_with_exit_2(live, cli, args, expected):
    result = cli("users", "revoke-token", *args)
    assert result.exit_code == 2
    assert expected in result.output
