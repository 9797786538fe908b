"""Open sockets per user, as this process sees them (Socket.IO connect/disconnect)."""

from __future__ import annotations

import threading


class Presence:
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
