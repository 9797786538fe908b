"""Where the live state of an order conversation is kept between turns.

The database keeps the durable record of every conversation (order_session) whatever the
store; a LiveStateStore is the fast copy a turn reads first. With REDIS_URL set it is Redis,
under ``session:{location}:{lane}:{session_id}`` with a TTL refreshed each turn and the key
dropped when the conversation reaches Idle. Redis being down never fails a turn: the turn
reads and writes the database only, and the log says so once (and once again when Redis is
back).
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

log = logging.getLogger("mojodex.order.store")


def state_key(location: str, lane: str, session_id: str) -> str:
    return f"session:{location}:{lane}:{session_id}"


class LiveStateStore(Protocol):
    name: str

    def load(self, key: str) -> str | None: ...

    def save(self, key: str, data: str) -> None: ...

    def drop(self, key: str) -> None: ...


class DatabaseOnlyStore:
    """No live copy: every turn reads the conversation from the database."""

    name = "database"

    def load(self, key: str) -> str | None:
        return None

    def save(self, key: str, data: str) -> None:
        return None

    def drop(self, key: str) -> None:
        return None


class RedisStateStore:
    """Redis copy of the live state, with a TTL; falls back to the database when unreachable."""

    name = "redis"

    def __init__(self, url: str, ttl_s: int, *, timeout_s: float = 0.25) -> None:
        import redis

        self._client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self._errors = (redis.RedisError, OSError)
        self.ttl_s = ttl_s
        self._down = False
        self._lock = threading.Lock()

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            if self._down:
                return
            self._down = True
        log.warning(
            "redis unreachable (%s: %s): order turns use the database until it is back",
            type(exc).__name__, exc,
        )

    def _ok(self) -> None:
        if self._down:
            with self._lock:
                if not self._down:
                    return
                self._down = False
            log.warning("redis reachable again: order turns use it for live state")

    @property
    def down(self) -> bool:
        return self._down

    def load(self, key: str) -> str | None:
        try:
            raw = self._client.get(key)
        except self._errors as exc:
            self._failed(exc)
            return None
        self._ok()
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw

    def save(self, key: str, data: str) -> None:
        try:
            self._client.set(key, data, ex=self.ttl_s)
        except self._errors as exc:
            self._failed(exc)
            return
        self._ok()

    def drop(self, key: str) -> None:
        try:
            self._client.delete(key)
        except self._errors as exc:
            self._failed(exc)
            return
        self._ok()

    def ttl(self, key: str) -> int | None:
        try:
            value = self._client.ttl(key)
        except self._errors:
            return None
        return value if isinstance(value, int) and value >= 0 else None

    def close(self) -> None:
        try:
            self._client.close()
        except self._errors:
            pass


def build_store(redis_url: str | None, ttl_s: int) -> LiveStateStore:
    if not redis_url:
        return DatabaseOnlyStore()
    return RedisStateStore(redis_url, ttl_s)
