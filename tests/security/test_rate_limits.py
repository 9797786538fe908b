"""Rate limits (Flask-Limiter): failed authentications per address and per token prefix, admin
routes, message sends per user; 429 {"error": ...} with Retry-After. Before: 474 token guesses
a second and 500 admin-secret guesses in 0.6 s, never throttled."""

from __future__ import annotations

import dataclasses
import os
import secrets
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import requests
import socketio
from sqlalchemy import update

from backend.rate_limits import rate_limits
from mojodex_core.db.models import ApiToken
from mojodex_core.security_config import RateLimitSettings
from mojodex_core.users import hash_token
from tests.integration._helpers import new_execution
from tests.support.live import GENEROUS_RATE_LIMITS, live_settings, serving

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _server(database_url: str, redis_url: str | None = None, **limits: str):  # noqa: ANN202
    settings = live_settings(database_url, None)
    rules = dataclasses.replace(GENEROUS_RATE_LIMITS, **limits) if limits else RateLimitSettings()
    return serving(dataclasses.replace(settings, rate_limits=rules, redis_url=redis_url))


def _guess(base_url: str, token: str) -> requests.Response:
    return requests.get(base_url + "/user_task", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _assert_throttled(response: requests.Response, message: str) -> None:
    assert response.status_code == 429, response.text
    body = response.json()
    assert body["error"] == message
    wait = int(response.headers["Retry-After"])
    assert 1 <= wait <= 60 and body["retry_after"] == wait


def test_default_limits_throttle_token_guesses_per_address(database_url, caplog):
    with _server(database_url) as live:  # the production defaults: 20 failures a minute per address
        statuses = [_guess(live.base_url, secrets.token_urlsafe(32)).status_code for _ in range(30)]
        assert statuses == [401] * 20 + [429] * 10
        breaches = [r for r in caplog.records if r.name == "mojodex.ratelimit" and "reached" in r.getMessage()]
        assert len(breaches) == 1  # ten refusals, one log line
        client = live.new_user()  # a valid token from that address waits too: nothing is checked meanwhile
        _assert_throttled(client.call("GET", "/user_task"), "too many failed authentications from this address")


def test_default_limits_throttle_guesses_sharing_a_token_prefix(database_url):
    with _server(database_url) as live:  # 10 failures a minute per token prefix
        prefix = secrets.token_urlsafe(6)[:8]
        statuses = [_guess(live.base_url, prefix + secrets.token_urlsafe(30)).status_code for _ in range(12)]
        assert statuses == [401] * 10 + [429] * 2
        _assert_throttled(_guess(live.base_url, prefix + "x" * 30), "too many failed authentications with this token")
        assert _guess(live.base_url, secrets.token_urlsafe(32)).status_code == 401  # another prefix: not yet


def test_admin_secret_guesses_and_admin_requests_are_throttled(database_url):
    with _server(database_url, auth_failures_per_address="5/minute", admin="8/minute") as live:
        wrong = requests.Session()
        wrong.headers["Authorization"] = "wrong-admin-secret-" + uuid.uuid4().hex
        statuses = [wrong.get(live.base_url + "/task", timeout=30).status_code for _ in range(7)]
        assert statuses == [403] * 5 + [429] * 2
    with _server(database_url, admin="8/minute") as live:
        admin = live.admin()
        statuses = [admin.get(live.base_url + "/usage", timeout=30).status_code for _ in range(10)]
        assert statuses == [200] * 8 + [429] * 2
        _assert_throttled(admin.get(live.base_url + "/task", timeout=30), "too many admin requests")


def test_message_sends_are_limited_per_user(database_url):
    with _server(database_url, message_sends="3/minute") as live:
        first, second = live.new_user(), live.new_user()

        def send(client, pk: int, session_id: str) -> requests.Response:  # noqa: ANN001
            return client.call("PUT", "/user_message", json={
                "session_id": session_id, "user_task_execution_pk": pk, "text": "hello",
                "message_id": uuid.uuid4().hex})

        pk, session_id = new_execution(first)
        statuses = [send(first, pk, session_id).status_code for _ in range(5)]
        assert statuses == [200] * 3 + [429] * 2
        _assert_throttled(send(first, pk, session_id), "too many messages; wait before sending more")
        assert first.call("GET", "/message", params={"session_id": session_id}).status_code == 200  # reads go on
        other_pk, other_session = new_execution(second)
        assert send(second, other_pk, other_session).status_code == 200  # per user, not global
        live.wait_idle()
        with live.db() as db:  # the refused sends stored nothing
            from mojodex_core.db.models import Message

            assert db.query(Message).filter_by(session_id=session_id, sender="user").count() == 3


def test_bad_tokens_on_message_sends_count_as_failed_authentications(database_url):
    """PUT /user_message reads its token in the route: a bad token with a body the route itself
    refuses (a form spectree does not validate) still counts, and the lockout answers first."""
    with _server(database_url, auth_failures_per_address="3/minute") as live:
        wrong = {"Authorization": f"Bearer {secrets.token_urlsafe(32)}",
                 "Content-Type": "application/x-www-form-urlencoded"}
        statuses = [requests.put(live.base_url + "/user_message", data="", headers=wrong, timeout=30).status_code
                    for _ in range(4)]
        assert statuses == [401] * 3 + [429]
        _assert_throttled(live.new_user().call("PUT", "/user_message", json={}),
                          "too many failed authentications from this address")


def test_message_sends_refused_by_the_route_are_counted(database_url):
    """As under the decorator the route's own authentication replaced: a send the route refuses
    after its token (blank text) counts against the send limit, which then answers first."""
    with _server(database_url, message_sends="2/minute") as live:
        client = live.new_user()
        pk, session_id = new_execution(client)
        body = {"session_id": session_id, "user_task_execution_pk": pk, "text": "   "}
        statuses = [client.call("PUT", "/user_message", json=body).status_code for _ in range(3)]
        assert statuses == [400, 400, 429]
        other = live.new_user()  # a form body the route refuses (spectree validates JSON only), a reserved id
        form = {"data": "", "headers": {"Content-Type": "application/x-www-form-urlencoded"}}
        reserved = {"json": {**body, "text": "hi", "message_id": "form_start"}}
        statuses = [other.call("PUT", "/user_message", **kwargs).status_code for kwargs in (form, reserved, reserved)]
        assert statuses == [400, 400, 429]


def test_socket_handshakes_with_bad_tokens_count_as_failures(database_url):
    with _server(database_url, auth_failures_per_address="3/minute") as live:
        refusals = []
        for _ in range(5):
            client = socketio.Client(reconnection=False)
            client.on("connect_error", refusals.append)
            with pytest.raises(socketio.exceptions.ConnectionError):
                client.connect(live.base_url, auth={"token": secrets.token_urlsafe(32)}, transports=["websocket"],
                               wait_timeout=10)
        assert [r["message"] for r in refusals] == ["missing or invalid token"] * 3 + [
            "too many failed authentications from this address"] * 2
        assert refusals[-1]["data"]["retry_after"] >= 1
        _assert_throttled(_guess(live.base_url, "x" * 40), "too many failed authentications from this address")


def test_rate_limits_can_be_turned_off(database_url):
    off = dataclasses.replace(RateLimitSettings(), enabled=False)
    with serving(dataclasses.replace(live_settings(database_url, None), rate_limits=off)) as live:
        assert {_guess(live.base_url, secrets.token_urlsafe(32)).status_code for _ in range(40)} == {401}


def _redis_reachable() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping())
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(not _redis_reachable(), reason="no Redis at TEST_REDIS_URL")
def test_with_redis_the_counts_are_shared_by_every_server_process(database_url):
    with _server(database_url, REDIS_URL, auth_failures_per_address="4/minute") as first, \
            _server(database_url, REDIS_URL, auth_failures_per_address="4/minute") as second:
        limits = rate_limits(first.app)
        assert limits.storage_uri == REDIS_URL
        limits.limiter.reset()  # counts left in this Redis database by an earlier run
        assert [_guess(first.base_url, secrets.token_urlsafe(32)).status_code for _ in range(2)] == [401, 401]
        assert [_guess(second.base_url, secrets.token_urlsafe(32)).status_code for _ in range(3)] == [401, 401, 429]


def test_an_unreachable_redis_leaves_the_api_working_unthrottled(database_url, caplog):
    with _server(database_url, "redis://127.0.0.1:1/0", auth_failures_per_address="2/minute") as live:
        assert {_guess(live.base_url, secrets.token_urlsafe(32)).status_code for _ in range(5)} == {401}
        client = live.new_user()
        assert client.call("GET", "/user_task").status_code == 200
    lines = [r for r in caplog.records if r.name == "mojodex.ratelimit" and "unreachable" in r.getMessage()]
    assert len(lines) == 1  # said once, not per request


@pytest.mark.parametrize("trusted_proxies", [0, 1])
def test_the_client_address_comes_from_a_trusted_proxy_only(database_url, trusted_proxies):
    settings = dataclasses.replace(
        live_settings(database_url, None), trusted_proxies=trusted_proxies,
        rate_limits=dataclasses.replace(GENEROUS_RATE_LIMITS, auth_failures_per_address="3/minute"),
    )
    with serving(settings) as live:
        def guess(forwarded_for: str) -> int:
            return requests.get(live.base_url + "/user_task", timeout=30, headers={
                "Authorization": f"Bearer {secrets.token_urlsafe(32)}", "X-Forwarded-For": forwarded_for}).status_code

        statuses = [guess(f"203.0.113.{i}") for i in range(5)]  # five addresses, as a proxy would say
        if trusted_proxies:
            assert statuses == [401] * 5  # each address has its own count
            assert [guess("203.0.113.99") for _ in range(4)] == [401] * 3 + [429]
        else:
            assert statuses == [401] * 3 + [429] * 2  # a forged header changes nothing


def _login(base_url: str, email: str, password: str = "wrong-password") -> requests.Response:
    return requests.post(base_url + "/login", json={"email": email, "password": password}, timeout=30)


def test_failed_logins_are_limited_per_client_address(database_url):
    with _server(database_url, login_failures_per_address="3/minute") as live:
        emails = [f"a{uuid.uuid4().hex[:8]}@example.com" for _ in range(4)]
        assert [_login(live.base_url, email).status_code for email in emails] == [401, 401, 401, 429]
        refused = _login(live.base_url, emails[0], "even the right one")
        wait = int(refused.headers["Retry-After"])
        _assert_throttled(refused, f"too many failed sign-ins: try again in {wait} s")
        assert _login(live.base_url, emails[0]).status_code == 429  # an address past its limit waits


@pytest.mark.skipif(not _redis_reachable(), reason="no Redis at TEST_REDIS_URL")
def test_with_redis_failed_logins_are_shared_by_every_server_process(database_url):
    with _server(database_url, REDIS_URL, login_failures_per_email="3/minute") as first, \
            _server(database_url, REDIS_URL, login_failures_per_email="3/minute") as second:
        rate_limits(first.app).limiter.reset()  # counts left in this Redis database by an earlier run
        email = f"r{uuid.uuid4().hex[:8]}@example.com"
        assert [_login(first.base_url, email).status_code for _ in range(2)] == [401, 401]
        assert [_login(second.base_url, email).status_code for _ in range(2)] == [401, 429]
        assert _login(first.base_url, email).status_code == 429
        assert _login(second.base_url, "other" + email).status_code == 401  # per email


def test_flask_limiter_adds_no_per_request_hooks(database_url):
    # Every limit goes through the strategy; Flask-Limiter's own hooks would only cost time per request.
    with _server(database_url) as live:
        app = live.app
        hooks = [*app.before_request_funcs.get(None, []), *app.after_request_funcs.get(None, []),
                 *app.teardown_request_funcs.get(None, [])]
        owners = [getattr(getattr(f, "func", f), "__module__", "") for f in hooks]
        assert not [o for o in owners if o.startswith("flask_limiter")], owners
        assert rate_limits(app).limiter.limiter is not None  # the strategy is still there


def test_an_expired_token_counts_as_a_failed_authentication(database_url):
    """As docs/security.md says: 401 "token expired" is a failed authentication like any other,
    and the address's lockout then answers first."""
    with _server(database_url, auth_failures_per_address="3/minute") as live:
        client = live.new_user()
        with live.db() as db:
            db.execute(update(ApiToken).where(ApiToken.token_hash == hash_token(client.token))
                       .values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        locked_out = "too many failed authentications from this address"
        answers = [client.call("GET", "/user_task") for _ in range(4)]
        assert [(a.status_code, a.json()["error"]) for a in answers] == [(401, "token expired")] * 3 + [
            (429, locked_out)]
        _assert_throttled(live.new_user().call("GET", "/user_task"), locked_out)
