"""With the database unreachable every route answers 503 {"error": "database unavailable"}, logging
one line per request and no traceback (before: 500 and ~111 traceback lines per request)."""

from __future__ import annotations

import logging
import os
import uuid

import pytest
import requests
import socketio
from sqlalchemy import create_engine, text

from mojodex_core.config import normalise_database_url
from mojodex_core.db.migrate import upgrade
from tests.foundation.conftest import valid_spec
from tests.security._servers import bare_server
from tests.support.live import ADMIN_SECRET, live_settings, serving

USER = {"Authorization": "Bearer some-user-token-0123456789abcdef"}
ADMIN = {"Authorization": ADMIN_SECRET}
# Admin routes with a body that passes their checks, so the request reaches the database.
ADMIN_ROUTES = [
    ("GET", "/task", None),
    ("PUT", "/task", valid_spec()),
    ("POST", "/task", valid_spec()),
    ("GET", "/usage", None),
    ("GET", "/order/audit", None),
    ("PUT", "/menu_availability", {"menu_id": "m", "item_type": "t", "in_stock": False}),
]
# Neither the database nor a token: the web app's files.
NO_DATABASE = {"/", "/webapp/", "/webapp/<path:filename>", "/assets/<path:filename>", "/health", "/openapi.json"}
NO_DATABASE_PREFIXES = ("/docs",)  # the OpenAPI pages
# Routes without a token, with a body that passes their checks.
ANONYMOUS_ROUTES = [("POST", "/login", {"email": "someone@example.com", "password": "a password"})]


def user_routes(app) -> list[tuple[str, str]]:  # noqa: ANN001
    """Every (method, path) of the URL map: a user token is checked against the database first."""
    return sorted(
        (method, rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.rule not in NO_DATABASE and not rule.rule.startswith(NO_DATABASE_PREFIXES)
        and rule.rule not in {path for _m, path, _b in ANONYMOUS_ROUTES}
        for method in rule.methods - {"HEAD", "OPTIONS"}
    )


@pytest.fixture(params=["postgres_closed_port", "sqlite_path_is_a_directory"])
def dead_database_url(request, tmp_path) -> str:
    if request.param == "postgres_closed_port":
        return "postgresql+psycopg://postgres@127.0.0.1:1/nope?connect_timeout=2"
    folder = tmp_path / "a_directory.db"
    folder.mkdir()
    return f"sqlite:///{folder}"


def test_every_route_answers_503_with_one_log_line(dead_database_url, caplog):
    with bare_server(live_settings(dead_database_url, None)) as server:
        routes = [(m, p, USER, {}) for m, p in user_routes(server.app)]
        routes += [(m, p, ADMIN, body) for m, p, body in ADMIN_ROUTES]
        routes += [(m, p, {}, body) for m, p, body in ANONYMOUS_ROUTES]
        assert len(routes) > 30
        caplog.clear()
        reached = 0
        with caplog.at_level(logging.INFO):
            for method, path, headers, body in routes:
                response = requests.request(method, server.base_url + path, headers=headers, json=body, timeout=30)
                if response.status_code == 403 and headers is USER:
                    continue  # an admin route: the admin secret is checked without the database
                assert (response.status_code, response.json()) == (503, {"error": "database unavailable"}), path
                assert response.headers.get("Retry-After")
                reached += 1
        health = requests.get(server.base_url + "/health", timeout=30)
        assert health.status_code == 503 and health.json()["error"] == "database unavailable"
        api_lines = [r for r in caplog.records if r.name == "mojodex.api"]
        assert len(api_lines) == reached
        assert all(r.exc_info is None and r.levelno == logging.ERROR for r in api_lines)
        assert all(r.getMessage().startswith("database unavailable: ") for r in api_lines)
        assert not [r for r in caplog.records if r.exc_info], "no traceback in the log"


def test_a_socket_is_refused_with_database_unavailable(dead_database_url, caplog):
    with bare_server(live_settings(dead_database_url, None)) as server:
        client = socketio.Client(reconnection=False)
        refusals = []
        client.on("connect_error", refusals.append)
        with caplog.at_level(logging.INFO), pytest.raises(socketio.exceptions.ConnectionError):
            client.connect(server.base_url, auth={"token": "some-user-token"}, transports=["websocket"],
                           wait_timeout=10)
        assert refusals == [{"message": "database unavailable", "data": {"error": "database unavailable"}}]
        assert len([r for r in caplog.records if "database unavailable" in r.getMessage()]) == 1
        assert not [r for r in caplog.records if r.exc_info], "no traceback in the log"


POSTGRES_URL = os.environ.get("TEST_DATABASE_URL")


@pytest.mark.skipif(not POSTGRES_URL, reason="needs TEST_DATABASE_URL (a Postgres server to create a database on)")
def test_a_database_stopped_while_serving_turns_every_route_into_503(caplog):
    # A temporary database, migrated, served, then taken away under the running server.
    admin_url = normalise_database_url(POSTGRES_URL)
    name = f"tmp_down_{uuid.uuid4().hex[:10]}"
    admin_engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin_engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        upgrade(url)
        with serving(live_settings(url, None)) as live:
            client = live.new_user()
            assert client.call("GET", "/user_task").status_code == 200
            with admin_engine.connect() as conn:
                conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
            caplog.clear()
            with caplog.at_level(logging.INFO):
                for path in ("/user_task", "/message", "/user_task_execution"):
                    response = client.call("GET", path)
                    assert (response.status_code, response.json()) == (503, {"error": "database unavailable"})
            lines = [r for r in caplog.records if r.name == "mojodex.api"]
            assert len(lines) == 3 and not [r for r in caplog.records if r.exc_info]
    finally:
        with admin_engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin_engine.dispose()
