"""GET /health reports the database (and Redis); every error is JSON {"error": ...} with the right status."""

from __future__ import annotations

import dataclasses
import os

import pytest
import requests

from backend.app import create_app
from backend.context import build_platform
from tests.support.live import ADMIN_SECRET, live_settings


def test_health_is_ok_on_the_live_server(live):
    response = requests.get(live.base_url + "/health", timeout=30)
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["redis"] == "not configured"
    assert body["llm"] == "configured"


def _unreachable_database_urls(tmp_path) -> dict[str, str]:
    folder = tmp_path / "a_directory.db"
    folder.mkdir()
    return {
        "postgres_closed_port": "postgresql+psycopg://postgres@127.0.0.1:1/nope?connect_timeout=2",
        "sqlite_path_is_a_directory": f"sqlite:///{folder}",
    }


@pytest.fixture(params=["postgres_closed_port", "sqlite_path_is_a_directory"])
def unreachable_platform(request, tmp_path):
    settings = live_settings(_unreachable_database_urls(tmp_path)[request.param], None)
    # Resumed at start-up, as in production: the first test checks the server starts all the same.
    settings = dataclasses.replace(settings, extra={**settings.extra, "resume_unfinished_turns": True})
    platform = build_platform(settings)
    yield platform
    platform.close()


def test_a_server_started_on_an_unreachable_database_reports_503(unreachable_platform):
    app, _socketio = create_app(unreachable_platform)
    response = app.test_client().get("/health")
    assert response.status_code == 503


def test_health_is_503_with_the_database_error_when_the_database_is_unreachable(
    unreachable_platform, monkeypatch
):
    # Start-up resumption is bypassed: this checks the route itself.
    monkeypatch.setattr("backend.app.resume_unfinished_turns", lambda platform: None)
    app, _socketio = create_app(unreachable_platform)
    response = app.test_client().get("/health")
    assert response.status_code == 503
    body = response.json
    assert body["status"] == "error"
    assert body["database"].startswith("error: ")
    assert "OperationalError" in body["database"]
    assert body["llm"] == "not configured"


REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _redis_reachable() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping())
    except Exception:  # noqa: BLE001 - any failure means "skip"
        return False


@pytest.mark.parametrize(
    ("redis_url", "status", "redis_state"),
    [
        pytest.param(
            REDIS_URL, 200, "ok", marks=pytest.mark.skipif(not _redis_reachable(), reason="no Redis")
        ),
        ("redis://127.0.0.1:1/0", 503, "error: ConnectionError"),
    ],
    ids=["redis_up", "redis_down"],
)
def test_health_reports_redis_when_configured(database_url, redis_url, status, redis_state):
    settings = dataclasses.replace(live_settings(database_url, None), redis_url=redis_url)
    platform = build_platform(settings)
    try:
        app, _socketio = create_app(platform)
        response = app.test_client().get("/health")
        assert response.status_code == status
        assert response.json["database"] == "ok"
        assert response.json["redis"] == redis_state
    finally:
        platform.close()


# --- JSON errors


def _is_json_error(response: requests.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert isinstance(body.get("error"), str) and body["error"]
    return body


@pytest.mark.parametrize("path", ["/nope", "/user_task/extra", "/task/1", "/api/health"])
def test_unknown_routes_are_404_json(live, path):
    _is_json_error(requests.get(live.base_url + path, timeout=30), 404)


@pytest.mark.parametrize(
    ("method", "path", "auth"),
    [
        ("DELETE", "/health", None),
        ("POST", "/user_task", "user"),
        ("PATCH", "/user_task_execution", "user"),
        ("DELETE", "/task", "admin"),
        ("GET", "/user_message", "user"),
        ("PUT", "/produced_text", "user"),
    ],
)
def test_wrong_methods_are_405_json(live, method, path, auth):
    headers = {}
    if auth == "admin":
        headers["Authorization"] = ADMIN_SECRET
    elif auth == "user":
        headers["Authorization"] = f"Bearer {live.new_user().token}"
    _is_json_error(requests.request(method, live.base_url + path, headers=headers, timeout=30), 405)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/user_task_execution"),
        ("POST", "/user_task_execution_run"),
        ("POST", "/user_task_execution_title"),
        ("PUT", "/user_message"),
        ("POST", "/produced_text"),
    ],
)
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("{not json", "application/json"),
        ("[1, 2]", "application/json"),
        ("just text", "text/plain"),
        ("", None),
    ],
    ids=["broken_json", "array", "text", "empty"],
)
def test_bodies_that_are_not_json_objects_are_400_json(live, method, path, body, content_type):
    client = live.new_user()
    headers = {"Content-Type": content_type} if content_type else {}
    _is_json_error(client.call(method, path, data=body, headers=headers), 400)


# --- integers that are not integers, or that no row can have: 400, never a 500


@pytest.mark.parametrize(
    "value", ["--1", "²", "1_000", " 7x", "99999999999999999999", "2147483648", "-2147483649"]
)
def test_malformed_or_out_of_range_ints_in_a_body_are_400(live, value):
    client = live.new_user()
    body = {"user_task_execution_pk": value, "title": "T"}
    response = client.call("POST", "/user_task_execution_title", json=body)
    assert _is_json_error(response, 400)["field"] == "user_task_execution_pk"


@pytest.mark.parametrize("value", [99999999999999999999, 2**63, 2**31, -(2**31) - 1])
def test_out_of_range_json_numbers_are_400(live, value):
    client = live.new_user()
    response = client.call("PUT", "/user_task_execution", json={"user_task_pk": value})
    assert _is_json_error(response, 400)["field"] == "user_task_pk"


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/user_task_execution", "user_task_execution_pk"),
        ("/user_task_execution_produced_text", "user_task_execution_pk"),
        ("/produced_text", "produced_text_pk"),
    ],
)
@pytest.mark.parametrize("value", ["99999999999999999999", "2147483648", "abc", "1.5"])
def test_malformed_or_out_of_range_ints_in_a_query_are_400(live, path, param, value):
    client = live.new_user()
    _is_json_error(client.call("GET", path, params={param: value}), 400)


def test_the_largest_int_is_a_plain_404(live):
    client = live.new_user()
    response = client.call("GET", "/user_task_execution", params={"user_task_execution_pk": 2**31 - 1})
    assert _is_json_error(response, 404) == {"error": "user_task_execution not found"}
