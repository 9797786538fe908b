"""gunicorn's error answers, made JSON (backend/gunicorn_errors.py): gunicorn's status and reason kept."""

from __future__ import annotations

import json
import socket

import pytest
from gunicorn import util
from gunicorn.http.errors import (
    InvalidHeaderName,
    InvalidRequestLine,
    InvalidResponseHeader,
    LimitRequestHeaders,
    LimitRequestLine,
    UnsupportedTransferCoding,
)

from backend.gunicorn_errors import json_error_answer


def gunicorn_answer(status: int, reason: str, mesg: str = "a message") -> bytes:
    """What gunicorn's handle_error writes: util.write_error's HTML answer."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        util.write_error(ours, status, reason, mesg)
        ours.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := theirs.recv(65536):
            received += chunk
    return received


def parsed(answer: bytes) -> tuple[str, dict[str, str], object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    assert int(headers["Content-Length"]) == len(body)
    return status_line, headers, json.loads(body)


@pytest.mark.parametrize(("exc", "status", "reason", "error"), [
    (LimitRequestHeaders("limit request headers fields size"), 431, "Request Header Fields Too Large",
     "request header fields too large"),
    (LimitRequestLine(5014, 4094), 414, "URI Too Long", "request line too long"),
    (InvalidRequestLine("GARBAGE"), 400, "Bad Request", "invalid request line"),
    (InvalidHeaderName("Bad Name"), 400, "Bad Request", "invalid header"),
    # No text of its own: its status's reason phrase.
    (UnsupportedTransferCoding("gzip"), 501, "Not Implemented", "not implemented"),
    # An InvalidHeader, but the app's (a header it sent): gunicorn's 500, told as such.
    (InvalidResponseHeader("X-Bad\n"), 500, "Internal Server Error", "internal server error"),
])
def test_gunicorns_answer_becomes_json_with_its_status(exc, status, reason, error):
    status_line, headers, body = parsed(json_error_answer(gunicorn_answer(status, reason), exc))
    assert status_line == f"HTTP/1.1 {status} {reason}"
    assert headers["Content-Type"] == "application/json"
    assert headers["Connection"] == "close"
    assert body == {"error": error}


def test_the_client_input_in_gunicorns_message_is_not_echoed():
    answer = json_error_answer(gunicorn_answer(400, "Bad Request", "Invalid Request Line '<script>'"),
                               InvalidRequestLine("<script>"))
    assert b"<script>" not in answer


def test_an_answer_of_another_form_is_kept_as_it_is():
    assert json_error_answer(b"not an HTTP answer", InvalidRequestLine("x")) == b"not an HTTP answer"
