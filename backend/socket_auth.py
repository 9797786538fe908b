"""Open sockets stay authenticated: a revoked token's sockets are closed, and long replays
reach polling clients.

`mojodex users revoke-token` runs in another process, so the server looks again, every
MOJODEX_SOCKET_AUTH_RECHECK_S (2 s by default), at the tokens of its open sockets in the
database: a socket whose token no longer authenticates (revoked, expired, or gone) gets a
`token_revoked` event and is disconnected. The event keeps its name whatever the reason (the
clients listen for it); its payload says which: `{"error": "token expired"}` for a sign-in's
token past its expiry, else `{"error": "token revoked"}`. One query per check, whatever the
number of sockets (chunked by 500 tokens).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from flask_socketio import SocketIO

from backend.auth import TOKEN_EXPIRED
from backend.context import Platform
from backend.errors import database_unavailable, describe_database_error
from mojodex_core.users import ended_tokens

log = logging.getLogger("mojodex.socket")

REVOKED_EVENT = "token_revoked"
TOKEN_REVOKED = "token revoked"


def ending(expired: bool) -> str:
    """What a socket whose token no longer authenticates is told (``token_revoked``'s error)."""
    return TOKEN_EXPIRED if expired else TOKEN_REVOKED
# A polling client decodes at most 16 packets per HTTP response (engineio's max_decode_packets,
# a client setting): a replay goes out in batches of this many, each once the previous was fetched.
POLLING_BATCH = 10
POLLING_BATCH_WAIT_S = 5.0


class SocketTokens:
    """Which token each open socket authenticated with, and the loop that checks them again."""

    def __init__(self, socketio: SocketIO, platform: Platform, interval_s: float) -> None:
        self._socketio = socketio
        self._platform = platform
        self._interval_s = interval_s
        self._tokens: dict[str, str] = {}  # sid -> token hash
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._db_down = False

    def add(self, sid: str, token_hash: str) -> None:
        with self._lock:
            self._tokens[sid] = token_hash
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="socket-token-check", daemon=True)
                self._thread.start()

    def remove(self, sid: str) -> None:
        with self._lock:
            self._tokens.pop(sid, None)

    def token_hash(self, sid: str) -> str | None:
        with self._lock:
            return self._tokens.get(sid)

    def _loop(self) -> None:
        while not self._platform.stopping.wait(self._interval_s):
            try:
                self.check()
            except Exception:  # the loop must outlive any one failure
                log.exception("socket token check failed")

    def check(self) -> list[str]:
        """Disconnects the sockets whose token no longer authenticates; returns their sids."""
        with self._lock:
            tokens = dict(self._tokens)
        if not tokens:
            return []
        try:
            with self._platform.db() as db:
                ended = ended_tokens(db, tokens.values())
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            if not self._db_down:  # once per outage, not once per check
                log.error("socket token check: database unavailable (%s)", describe_database_error(exc))
            self._db_down = True
            return []
        self._db_down = False
        gone = {sid: ended[token_hash] for sid, token_hash in tokens.items() if token_hash in ended}
        for sid, expired in gone.items():
            self.end(sid, expired=expired)
        return list(gone)

    def end(self, sid: str, delay_s: float = 0.0, *, expired: bool = False) -> None:
        """Tells the socket its token is revoked (or ``expired``), then disconnects it (after
        ``delay_s``, so an acknowledgement being sent gets out first)."""
        self.remove(sid)
        log.info("socket %s disconnected: its token %s", sid, "expired" if expired else "was revoked")

        def run() -> None:
            if delay_s:
                time.sleep(delay_s)
            try:
                self._socketio.emit(REVOKED_EVENT, {"error": ending(expired)}, to=sid)
                self._socketio.server.disconnect(sid)
            except Exception:  # already gone
                log.debug("socket %s was gone before its disconnection", sid, exc_info=True)

        if delay_s:
            threading.Thread(target=run, name="socket-revoke", daemon=True).start()
        else:
            run()


def replay_sender(socketio: SocketIO, sid: str, emit: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
    """``emit`` for a websocket client; for a polling one, ``emit`` paced in batches of
    POLLING_BATCH events, each sent once the client has fetched the previous batch."""
    server = socketio.server
    try:
        if server.transport(sid) != "polling":
            return emit
        eio_socket = server.eio.sockets[server.manager.eio_sid_from_sid(sid, "/")]
    except Exception:  # noqa: BLE001 - gone or unknown: nothing to pace
        return emit
    sent = 0

    def send(name: str, payload: Any) -> None:
        nonlocal sent
        if sent and sent % POLLING_BATCH == 0:
            deadline = time.monotonic() + POLLING_BATCH_WAIT_S
            # unfinished_tasks: packets queued for this client that no poll has taken yet.
            while eio_socket.queue.unfinished_tasks and time.monotonic() < deadline and not eio_socket.closed:
                time.sleep(0.002)
        emit(name, payload)
        sent += 1

    return send
