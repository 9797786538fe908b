"""A loopback TCP proxy that a test can cut: the service behind it looks down, then comes back.

Used by the distributed fault tests to make Postgres unreachable or Redis restart without
stopping the machine's shared servers: every cluster process talks to the service through the
proxy; ``cut()`` drops every open connection and refuses new ones (accepted, then closed at
once) until ``restore()``.
"""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlparse, urlunparse


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: set[socket.socket] = set()
        self._down = False
        self._closed = False

    @classmethod
    def for_url(cls, url: str, default_port: int) -> tuple[TcpProxy, str]:
        """A proxy to the URL's host and port, and the same URL pointing at the proxy."""
        parsed = urlparse(url)
        proxy = cls(parsed.hostname or "127.0.0.1", parsed.port or default_port)
        netloc = parsed.netloc.rsplit("@", 1)
        userinfo = netloc[0] + "@" if len(netloc) == 2 else ""
        return proxy, urlunparse(parsed._replace(netloc=f"{userinfo}127.0.0.1:{proxy.port}"))

    def start(self) -> TcpProxy:
        threading.Thread(target=self._accept, name="tcp-proxy", daemon=True).start()
        return self

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _addr = self._listener.accept()
            except OSError:
                return
            with self._lock:
                down = self._down
            if down:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self._target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with self._lock:
                    self._pairs.discard(sock)
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def cut(self) -> None:
        with self._lock:
            self._down = True
            pairs = list(self._pairs)
        for sock in pairs:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def restore(self) -> None:
        with self._lock:
            self._down = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._listener.close()
