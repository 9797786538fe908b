"""A tiny POS webhook receiver on 127.0.0.1 for the ticket tests: fails the first N posts, records all."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]
    status: int


@dataclass
class Receiver:
    fail_first: int = 0  # how many posts get a 503 before the first 200 (-1: always fail)
    posts: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._cond:
                    failing = receiver.fail_first < 0 or len(receiver.posts) < receiver.fail_first
                    status = 503 if failing else 200
                    receiver.posts.append(Received(body, dict(self.headers.items()), status))
                    receiver._cond.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *_args) -> None:  # noqa: ANN002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/tickets"

    def wait_posts(self, count: int, timeout: float = 10.0) -> list[Received]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.posts) >= count, timeout), f"{len(self.posts)} posts"
            return list(self.posts)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
