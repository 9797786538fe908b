"""gunicorn's own error answers in the API's shape: `{"error": ...}` in JSON.

gunicorn answers by itself a request it rejects before the app sees it (a request line too long,
a header line too large, too many headers, a request line that is not HTTP) and, rarely, a failure
of its own: through `Worker.handle_error`, with an HTML page. The worker's subclass
(backend/gevent_worker.py) lets gunicorn's `handle_error` decide everything as before (the status,
its warning line, the access log line, closing the connection) and only swaps the HTML page it
writes for the same status with a JSON body. Limits: docs/deployment.md, "Request size limits".
"""

from __future__ import annotations

import json
import re

from gunicorn import util
from gunicorn.http.errors import (
    InvalidHeader,
    InvalidHeaderName,
    InvalidHTTPVersion,
    InvalidRequestLine,
    InvalidRequestMethod,
    LimitRequestHeaders,
    LimitRequestLine,
    ObsoleteFolding,
)

# What a client is told, by gunicorn's exception. Exact types: a subclass may be another status
# (InvalidResponseHeader, an InvalidHeader, is the app's fault: a 500). Any other error is told by
# its status's reason phrase ("bad request", "internal server error").
ERROR_TEXTS: dict[type[BaseException], str] = {
    LimitRequestLine: "request line too long",
    LimitRequestHeaders: "request header fields too large",  # one too large, or too many
    InvalidRequestLine: "invalid request line",
    InvalidRequestMethod: "invalid request method",
    InvalidHTTPVersion: "invalid HTTP version",
    InvalidHeader: "invalid header",
    InvalidHeaderName: "invalid header",
    ObsoleteFolding: "invalid header",
}

# The status line gunicorn's util.write_error starts its answer with.
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9]) ([^\r\n]*)\r\n")


def json_error_answer(html_answer: bytes, exc: BaseException) -> bytes:
    """The answer to write instead of gunicorn's `html_answer` to the error `exc`: its status and
    reason, `Connection: close`, a JSON body. An answer of another form is kept as it is."""
    status_line = _STATUS_LINE.match(html_answer)
    if status_line is None:
        return html_answer
    status, reason = status_line.group(1), status_line.group(2)
    text = ERROR_TEXTS.get(type(exc), reason.decode("latin-1").lower())
    body = json.dumps({"error": text}).encode()
    head = (b"HTTP/1.1 %s %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n") % (status, reason, len(body))
    return head + body


class _Kept:
    """The client socket as gunicorn's handle_error is given it: what it writes is kept, not sent."""

    def __init__(self, sock) -> None:  # noqa: ANN001 - a socket (gevent's, or an SSL one)
        self._sock = sock
        self.written = bytearray()

    def sendall(self, data: bytes) -> None:
        self.written += data

    def send(self, data: bytes) -> int:
        self.written += data
        return len(data)

    def __getattr__(self, name: str):  # noqa: ANN204 - the rest is the socket's
        return getattr(self._sock, name)


class JsonErrorAnswers:
    """Mixin for a gunicorn worker class: its error answers in JSON."""

    def handle_error(self, req, client, addr, exc) -> None:  # noqa: ANN001 - gunicorn's signature
        kept = _Kept(client)
        super().handle_error(req, kept, addr, exc)
        if not kept.written:
            return
        try:
            util.write_nonblock(client, json_error_answer(bytes(kept.written), exc))
        except Exception:  # the client is gone: as gunicorn's handle_error
            self.log.debug("Failed to send error message.")
