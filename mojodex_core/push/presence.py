"""Which users have an open Socket.IO connection: the ``Presence`` interface and the in-process one.

The process holding a socket reports it (``connected`` / ``disconnected``, backend/socket_events.py);
the process publishing a final reply asks ``online`` (push/service.py). In one process both are the
same process (``LocalPresence``); in distributed mode backends hold the sockets and workers publish,
so they share ``RedisPresence`` (push/redis_presence.py), chosen by backend/context.py.
"""

from __future__ import annotations

import threading
from typing import Protocol


class Presence(Protocol):
    def connected(self, sid: str, user_id: str) -> None: ...

    def disconnected(self, sid: str) -> None: ...

    def online(self, user_id: str) -> bool: ...

    def close(self) -> None: ...


class LocalPresence:
    """Open sockets per user, as this process sees them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._user_by_sid: dict[str, str] = {}
        self._count: dict[str, int] = {}

    def connected(self, sid: str, user_id: str) -> None:
        with self._lock:
            if sid in self._user_by_sid:
                return
            self._user_by_sid[sid] = user_id
            self._count[user_id] = self._count.get(user_id, 0) + 1

    def disconnected(self, sid: str) -> None:
        with self._lock:
            user_id = self._user_by_sid.pop(sid, None)
            if user_id is None:
                return
            left = self._count.get(user_id, 1) - 1
            if left > 0:
                self._count[user_id] = left
            else:
                self._count.pop(user_id, None)

    def online(self, user_id: str) -> bool:
        with self._lock:
            return self._count.get(user_id, 0) > 0

    def close(self) -> None:
        return None
