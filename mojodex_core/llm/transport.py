"""The openai client's HTTP transport in a process that gevent has patched.

httpcore checks every idle connection of its pool each time a request joins or leaves the pool:
`select.poll()` with a timeout of 0, to see whether the server closed it. Under the gevent
server, `select.poll` is gevent's cooperative one (psycopg needs the module patched to wait
cooperatively): 14 µs a check instead of 1, times the idle connections (up to the number of
streams that ran at once) at every request, on the path to the first token. A check that never
waits need not be cooperative, so here it is made with the operating system's poll.

Everything else (connections, TLS, timeouts, errors, the openai client's limits) is httpx's and
httpcore's own. Without gevent, or when the environment names an HTTP proxy (httpx reads the proxy
variables only for a client built without a transport of its own), the openai client keeps its
default HTTP client.
"""

from __future__ import annotations

import select
import ssl
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

import httpcore2
import httpx2
import openai

from mojodex_core.concurrency import cooperative

# The openai client's own default pool (openai._constants.DEFAULT_CONNECTION_LIMITS).
LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=5.0)


def idle_check(poll: Callable[[], Any]) -> Callable[[Any], bool]:
    """httpcore's readability check of a socket, made with this `poll` factory."""

    def readable(sock: Any) -> bool:
        fd = None if sock is None else sock.fileno()
        if fd is None or fd < 0:
            return True  # gone: as httpcore, readable (the next read returns b"")
        poller = poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))

    return readable


class _Stream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream, readable: Callable[[Any], bool]) -> None:
        self._inner = inner
        self._readable = readable

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._readable)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return self._readable(self._inner.get_extra_info("socket"))
        return self._inner.get_extra_info(info)


class IdleCheckBackend(httpcore2.NetworkBackend):
    """httpcore's sync backend, whose streams answer "is_readable" with `readable`."""

    def __init__(self, readable: Callable[[Any], bool]) -> None:
        self._inner = httpcore2.SyncBackend()
        self._readable = readable

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _Stream(stream, self._readable)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, timeout, socket_options), self._readable)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class IdleCheckTransport(httpx2.HTTPTransport):
    """httpx's transport, with a pool built on IdleCheckBackend (httpx does not take a backend)."""

    def __init__(self, readable: Callable[[Any], bool], limits: httpx2.Limits = LIMITS) -> None:
        ssl_context = httpx2.create_ssl_context()  # ~30 ms (certifi's bundle): built once, for both pools
        super().__init__(verify=ssl_context, limits=limits)
        self._pool = httpcore2.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=IdleCheckBackend(readable),
        )


def _proxied() -> bool:
    proxies = urllib.request.getproxies()  # the *_proxy variables, either case
    return any(proxies.get(scheme) for scheme in ("http", "https", "all"))


def llm_http_client() -> httpx2.Client | None:
    """The HTTP client for the openai client: None (its default) unless gevent patched the process
    and no proxy is configured (see the module)."""
    if not cooperative() or _proxied():
        return None
    from gevent import monkey

    readable = idle_check(monkey.get_original("select", "poll"))
    return openai.DefaultHttpxClient(transport=IdleCheckTransport(readable))
