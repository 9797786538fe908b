"""CORS: the Socket.IO handshake and REST accept the server's own origin and MOJODEX_CORS_ORIGINS,
nothing else (before: cors_allowed_origins="*" echoed any Origin, with credentials)."""

from __future__ import annotations

import dataclasses

import pytest
import requests

from tests.support.live import live_settings, serving

APP = "https://app.example.com"
EVIL = "https://evil.example"


def _handshake(base_url: str, origin: str | None) -> requests.Response:
    headers = {"Origin": origin} if origin else {}
    return requests.get(base_url + "/socket.io/", params={"EIO": "4", "transport": "polling"}, headers=headers,
                        timeout=30)


@pytest.fixture(scope="module")
def listed(database_url, live_server):  # noqa: ANN001
    settings = dataclasses.replace(live_settings(database_url, None), cors_origins=(APP,))
    with serving(settings) as live:
        yield live


def test_by_default_only_the_servers_own_origin_may_open_a_socket(live):
    refused = _handshake(live.base_url, EVIL)
    assert refused.status_code == 400
    assert "Access-Control-Allow-Origin" not in refused.headers
    own = _handshake(live.base_url, live.base_url)
    assert own.status_code == 200 and own.headers["Access-Control-Allow-Origin"] == live.base_url
    assert _handshake(live.base_url, None).status_code == 200  # no Origin: not a browser


def test_by_default_rest_sends_no_cors_header(live):
    client = live.new_user()
    response = client.call("GET", "/user_task", headers={"Origin": EVIL})
    assert response.status_code == 200
    assert "Access-Control-Allow-Origin" not in response.headers
    preflight = requests.options(live.base_url + "/user_task", timeout=30, headers={
        "Origin": EVIL, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"})
    assert "Access-Control-Allow-Origin" not in preflight.headers


def test_listed_origins_are_allowed_for_sockets_and_rest(listed):
    socket = _handshake(listed.base_url, APP)
    assert socket.status_code == 200
    assert socket.headers["Access-Control-Allow-Origin"] == APP
    assert "Access-Control-Allow-Credentials" not in socket.headers  # the token is no cookie
    assert _handshake(listed.base_url, EVIL).status_code == 400
    assert _handshake(listed.base_url, listed.base_url).status_code == 200  # its own origin still works

    preflight = requests.options(listed.base_url + "/user_message", timeout=30, headers={
        "Origin": APP, "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "authorization,content-type"})
    assert preflight.headers["Access-Control-Allow-Origin"] == APP
    assert "authorization" in preflight.headers["Access-Control-Allow-Headers"].lower()
    client = listed.new_user()
    assert client.call("GET", "/user_task", headers={"Origin": APP}).headers["Access-Control-Allow-Origin"] == APP
    assert "Access-Control-Allow-Origin" not in client.call("GET", "/user_task", headers={"Origin": EVIL}).headers
