"""What `mojodex serve` (gunicorn) answers to a request it rejects before Flask sees it.

A header line over gunicorn's limit, too many headers, a request line too long, a request line that
is not HTTP: gunicorn answers those itself. Like every other error of the API, the answer is
`{"error": ...}` in JSON, with gunicorn's status, and the connection is closed.
"""

from __future__ import annotations

import json
import socket

import pytest

from bench._production import ProductionServer
from mojodex_core.db.migrate import upgrade

# gunicorn's defaults, which `mojodex serve` keeps (docs/deployment.md, "Request size limits").
LIMIT_REQUEST_LINE = 4094
LIMIT_REQUEST_FIELDS = 100
LIMIT_REQUEST_FIELD_SIZE = 8190


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("http_errors")
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    database_url = f"sqlite:///{tmp_path}/serve.db"
    upgrade(database_url)
    served = ProductionServer(database_url, None, var_dir, start_timeout_s=90)
    try:
        yield served
    finally:
        served.stop()


def raw_exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Sends `request` as is and reads until the server closes: (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(request)
        received = b""
        try:
            while chunk := sock.recv(65536):  # b"" once the server closed the connection
                received += chunk
        except ConnectionResetError:  # closed with the rest of the request unread (a reset, as gunicorn's own)
            pass
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split(" ")[1]), headers, body


def get(target: str = "/health", headers: bytes = b"") -> bytes:
    return b"GET " + target.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\n"


@pytest.mark.parametrize(("request_bytes", "status", "error"), [
    pytest.param(get(headers=b"X-Big: " + b"a" * (LIMIT_REQUEST_FIELD_SIZE + 100) + b"\r\n"), 431,
                 "request header fields too large", id="header-line-too-large"),
    pytest.param(get(headers=b"X-Big: " + b"a" * 100_000 + b"\r\n"), 431,
                 "request header fields too large", id="huge-header"),
    pytest.param(get(headers=b"".join(b"X-H%d: v\r\n" % i for i in range(LIMIT_REQUEST_FIELDS + 10))), 431,
                 "request header fields too large", id="too-many-headers"),
    pytest.param(get("/" + "a" * (LIMIT_REQUEST_LINE + 100)), 414, "request line too long",
                 id="request-line-too-long"),
    pytest.param(get("/" + "a" * 20_000), 414, "request line too long", id="request-line-over-8190"),
    pytest.param(b"GARBAGE\r\n\r\n", 400, "invalid request line", id="invalid-request-line"),
    pytest.param(b"GET /health HTTP/9.x\r\nHost: 127.0.0.1\r\n\r\n", 400, "invalid HTTP version",
                 id="invalid-http-version"),
    pytest.param(get(headers=b"Bad Name: v\r\n"), 400, "invalid header", id="invalid-header-name"),
])
def test_a_request_gunicorn_rejects_answers_json_and_closes(server, request_bytes, status, error):
    # was: gunicorn's HTML error page (Content-Type: text/html), the only non-JSON error of the API
    got_status, headers, body = raw_exchange(server.port, request_bytes)
    assert got_status == status, body
    assert headers["content-type"] == "application/json", (headers, body)
    assert json.loads(body) == {"error": error}
    assert int(headers["content-length"]) == len(body)
    assert headers["connection"] == "close"  # and raw_exchange read until the server closed it


def test_a_normal_request_is_still_served_and_the_rejection_is_logged(server):
    status, headers, body = raw_exchange(server.port, get(headers=b"Connection: close\r\n"))
    assert status == 200, body
    assert headers["content-type"] == "application/json"
    raw_exchange(server.port, get("/" + "b" * (LIMIT_REQUEST_LINE + 1)))
    log = server.log_tail(200000)
    assert "Invalid request from ip=127.0.0.1: Request Line is too large" in log, log[-3000:]  # gunicorn's line
    assert "Traceback" not in log, log[-3000:]
