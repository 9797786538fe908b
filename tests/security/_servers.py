"""Live servers built for the security tests (their own settings, their own port)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import Flask
from flask_socketio import SocketIO
from werkzeug.serving import make_server

from backend.app import create_app
from backend.context import Platform, build_platform
from mojodex_core.config import Settings


@dataclass
class Bare:
    base_url: str
    platform: Platform
    app: Flask
    socketio: SocketIO


@contextmanager
def bare_server(settings: Settings) -> Iterator[Bare]:
    """A server on a free port with nothing stored first (the database may be unreachable)."""
    platform = build_platform(settings)
    app, socketio = create_app(platform)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Bare(f"http://127.0.0.1:{server.server_port}", platform, app, socketio)
    finally:
        server.shutdown()
        platform.close()
