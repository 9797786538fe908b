"""Open sockets per user, shared by every process through Redis (distributed mode).

One sorted set per user, ``mojodex:presence:<user_id>``: its members are the user's open sockets
(Socket.IO sids, unique across processes), each scored with the time it stops counting (unix
seconds). The backend holding a socket adds it at connect (ZADD) and removes it at disconnect
(ZREM); a small daemon thread, started with its first socket, pushes the deadlines of all its
sockets forward every ``ttl_s / 3`` (ZADD, and EXPIRE on the key). A backend killed without
running its disconnect handlers (SIGKILL, a lost host) stops renewing: its sockets stop counting
at most ``ttl_s`` later, and the key goes once no process renews it. A renewal also writes back
the sockets Redis lost (a restart without persistence) or failed to record.

``online(user_id)`` (a worker's or a backend's question) counts the members whose deadline is
still ahead (ZCOUNT). Deadlines are the writer's wall clock compared with the reader's: the hosts'
clocks must agree to well within ``ttl_s`` (NTP does).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import defaultdict
from typing import Any, Callable

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

log = logging.getLogger("mojodex.push")

KEY_PREFIX = "mojodex:presence:"
DEFAULT_TTL_S = 30.0
# A question asked on a turn's thread: an unreachable Redis answers within this, once retried at
# once (redis-py's default retries, backing off, took 11 s to report a refused connection).
TIMEOUT_S = 1.0
RETRY = Retry(NoBackoff(), 1)


class RedisPresence:
    def __init__(self, client: redis.Redis, *, ttl_s: float = DEFAULT_TTL_S) -> None:
        self._redis = client
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._user_by_sid: dict[str, str] = {}  # this process's sockets
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    @classmethod
    def from_url(cls, url: str, *, ttl_s: float = DEFAULT_TTL_S) -> RedisPresence:
        client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S, retry=RETRY)
        return cls(client, ttl_s=ttl_s)

    @staticmethod
    def key(user_id: str) -> str:
        return f"{KEY_PREFIX}{user_id}"

    def connected(self, sid: str, user_id: str) -> None:
        with self._lock:
            self._user_by_sid[sid] = user_id
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="presence-renew", daemon=True)
                self._thread.start()
        self._write({user_id: [sid]}, "record a socket")

    def disconnected(self, sid: str) -> None:
        with self._lock:
            user_id = self._user_by_sid.pop(sid, None)
        if user_id is not None:  # on a Redis error the entry lapses: no renewal writes it again
            self._remove({sid: user_id}, "remove a socket")

    def online(self, user_id: str) -> bool:
        """Whether any process holds an open socket of the user.

        A Redis error answers False: the user counts as offline and is notified. The reply is
        stored either way, so a notification to a user who has the app open is a duplicate they
        can ignore, while one withheld from a user who has not is a reply they may never see."""
        count = self._run(lambda: self._redis.zcount(self.key(user_id), f"({time.time()}", "+inf"), "look up a user")
        return bool(count)

    def renew(self) -> None:
        """Pushes the deadlines of this process's sockets forward (the renewal thread's work)."""
        with self._lock:
            renewed = dict(self._user_by_sid)
        if not renewed:
            return
        by_user: dict[str, list[str]] = defaultdict(list)
        for sid, user_id in renewed.items():
            by_user[user_id].append(sid)
        if self._write(by_user, "renew its sockets") is None:
            return
        # A socket that went meanwhile may have been removed before this renewal wrote it back.
        with self._lock:
            gone = {sid: user_id for sid, user_id in renewed.items() if sid not in self._user_by_sid}
        if gone:
            self._remove(gone, "remove a socket")

    def close(self) -> None:
        """Stops renewing and removes this process's sockets (they are closing with it)."""
        self._stopping.set()
        with self._lock:
            mine, self._user_by_sid = self._user_by_sid, {}
        if mine:
            self._remove(mine, "remove its sockets")

    def _loop(self) -> None:
        while not self._stopping.wait(self.ttl_s / 3):
            try:
                self.renew()
            except Exception:  # noqa: BLE001 - the renewals must outlive any one failure
                log.exception("presence renewal failed")

    def _write(self, sids_by_user: dict[str, list[str]], what: str) -> Any:
        now = time.time()
        pipe = self._redis.pipeline(transaction=False)
        for user_id, sids in sids_by_user.items():
            key = self.key(user_id)
            pipe.zremrangebyscore(key, "-inf", now)  # the lapsed entries of processes gone
            pipe.zadd(key, dict.fromkeys(sids, now + self.ttl_s))
            pipe.expire(key, math.ceil(self.ttl_s))
        return self._run(pipe.execute, what)

    def _remove(self, user_by_sid: dict[str, str], what: str) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for sid, user_id in user_by_sid.items():
            pipe.zrem(self.key(user_id), sid)
        self._run(pipe.execute, what)

    def _run(self, call: Callable[[], Any], what: str) -> Any:
        """``call()``, or None on a Redis error; the first error of a burst is logged, and the end."""
        try:
            result = call()
        except (redis.RedisError, OSError) as exc:
            with self._lock:
                first, self._failing = not self._failing, True
            if first:
                log.warning("presence: Redis unreachable (%s: %s, trying to %s): users count as offline "
                            "(notified) until it answers again", type(exc).__name__, exc, what)
            return None
        if self._failing:
            with self._lock:
                ended, self._failing = self._failing, False
            if ended:
                log.warning("presence: Redis reachable again")
        return result
