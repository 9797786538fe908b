"""Stream helpers: cancellation watcher, tool-call delta merging, internal signals."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

from mojodex_core.concurrency import ProcessThread

logger = logging.getLogger("mojodex.llm")

CANCEL_POLL_S = 0.05
DRAIN_LIMIT_BYTES = 64 * 1024


class CallbackFailed(Exception):
    """Wraps an exception raised by the caller's ``on_token`` (never retried or reclassified)."""

    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


class OverallTimeout(TimeoutError):
    """The stream exceeded ``timeout_s`` in total (classified as a timeout)."""


class _Watchlist:
    """One thread for every cancellable stream of the process, polling their cancel events.

    A thread per stream cost a thread start and 20 wake-ups a second for each of them; this
    one wakes every CANCEL_POLL_S while any stream is watched, and sleeps otherwise.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: dict[int, CancelWatcher] = {}
        self._thread = ProcessThread(self._run, "llm-cancel-watch")

    def add(self, watcher: CancelWatcher) -> None:
        with self._cond:
            idle = not self._watched
            self._watched[id(watcher)] = watcher
            # Asleep until there is something to watch; else it sees this one at its next poll.
            if not self._thread.ensure_started() and idle:
                self._cond.notify()

    def remove(self, watcher: CancelWatcher) -> None:
        with self._cond:
            self._watched.pop(id(watcher), None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._watched:
                    self._cond.wait()
                self._cond.wait(CANCEL_POLL_S)
                cancelled = [w for w in self._watched.values() if w.cancel.is_set()]
                for watcher in cancelled:
                    del self._watched[id(watcher)]
            for watcher in cancelled:  # outside the lock: closing a socket may take a moment
                watcher.interrupt()


class CancelWatcher:
    """Closes the response as soon as ``cancel`` is set, even while a read is blocked.

    ``stream`` is the HTTP response being read (or an object whose ``response`` it is).
    Watched by the process's one watcher thread; ``stop()`` ends the watch.
    """

    def __init__(self, cancel: threading.Event, stream: Any) -> None:
        self.cancel = cancel
        self._stream = stream
        self._lock = threading.Lock()
        self._stopped = False
        _watchlist.add(self)

    def interrupt(self) -> None:
        with self._lock:  # never after stop(): the connection may be back in the pool, another call's
            if not self._stopped:
                self._interrupt()

    def _interrupt(self) -> None:
        # Closing the response does not wake a thread blocked in recv(); shutting the
        # socket down does (the connection is then dropped from the pool).
        response = getattr(self._stream, "response", self._stream)
        extensions = getattr(response, "extensions", None) or {}
        network_stream = extensions.get("network_stream")
        try:
            sock = network_stream.get_extra_info("socket") if network_stream is not None else None
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            logger.debug("shutting down a cancelled stream's socket failed", exc_info=True)
        try:
            self._stream.close()
        except Exception:  # closing a stream being read may race; the reader handles it
            logger.debug("closing a cancelled stream failed", exc_info=True)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        _watchlist.remove(self)


_watchlist = _Watchlist()


def merge_tool_call(acc: dict[int, dict[str, Any]], call: dict[str, Any]) -> None:
    """Fold one streamed ``delta.tool_calls`` item (a dict, as decoded) into ``acc`` by index."""
    index = call.get("index") or 0
    entry = acc.get(index)
    if entry is None:
        entry = acc[index] = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
    if call.get("id"):
        entry["id"] = call["id"]
    function = call.get("function")
    if function:
        merged = entry["function"]
        if function.get("name"):
            merged["name"] += function["name"]
        if function.get("arguments"):
            merged["arguments"] += function["arguments"]


def keeps_connection(response: Any) -> bool:
    """Whether reading the rest of this response's body lets its connection be reused.

    HTTP/1.1 with a framed body (chunked or Content-Length) and no ``Connection: close``; an
    HTTP/2 stream can be closed without losing the connection, and a body that ends when the
    server closes the connection cannot leave a connection behind.
    """
    if getattr(response, "http_version", None) != "HTTP/1.1":
        return False
    headers = response.headers
    if "close" in headers.get("connection", "").lower():
        return False
    return "chunked" in headers.get("transfer-encoding", "").lower() or "content-length" in headers


def drain(body: Iterator[bytes], limit: int = DRAIN_LIMIT_BYTES) -> None:
    """Read what is left of a response body after ``[DONE]``, so its connection can be reused.

    HTTP/1.1 keeps a connection only once the whole body (the last empty chunk) is read;
    closing it earlier drops the connection and the next call opens a new one. Servers end
    the body right after ``[DONE]``; past ``limit`` bytes we give up (the connection is then
    dropped). The answer is complete: errors here are nobody's concern.
    """
    read = 0
    try:
        for raw in body:
            read += len(raw)
            if read > limit:
                return
    except Exception:
        logger.debug("reading the end of a finished stream failed", exc_info=True)
