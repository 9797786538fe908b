"""The session event stream across processes: Redis seqs, Redis Streams for tokens, DB for finals.

Same interface as the in-process ``SessionEventLog`` (publishing, publish, events_after,
join_and_replay, session_lock), so turns and routes run unchanged on backends and workers.

- Seqs come from one Redis counter per session (INCR), seeded from the database the first time
  (``resume_seq``: past the last stored event, with headroom when a turn was streaming).
- Final events are written to session_event in the caller's transaction, as in-process.
- Token events go to a per-session Redis Stream, entry id ``<seq>-1``, expiring after
  ``token_ttl_s`` of silence; any backend replays them, whichever process streamed them.
- Every publisher of a session holds a Redis lock from seq allocation to the Socket.IO publish,
  so a session's events reach the message queue in seq order; a worker's token event instead
  runs one script that does all of it while no one else holds the lock (``_publish_queued``).
  (A lock that expires while held, after 30 s, no longer orders its holder's events.)
- Exactly once on reconnect: a backend joining a socket to a session first *holds* that socket's
  live events of the session (the message-queue listener skips them), joins the room, then under
  the session lock reads the stored and streamed events after last_seq, sets the socket's floor
  to the last seq read and sends them. Live events at or under the floor were in the replay and
  are skipped; anything above it was published after the read, and is delivered live.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import urlparse

import redis
import socketio
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.execution.events import Publication, Transport, durable_events_after, resume_seq

log = logging.getLogger("mojodex.events")

KEY_PREFIX = "mojodex"
SEQ_KEY_TTL_S = 7 * 24 * 3600
LOCK_TIMEOUT_S = 30.0


def _token_lua(k: int, a: int, then: str = "return seq") -> str:
    """INCR the session's seq (unless it was never seeded: -1), add the token to its stream, expire
    both, then ``then``. Its keys (seq, stream) and arguments (name, body, stream TTL, seq TTL) come
    after the first ``k`` keys and ``a`` arguments of the script it is part of."""
    return f"""
if redis.call('EXISTS', KEYS[{k + 1}]) == 0 then return -1 end
local seq = redis.call('INCR', KEYS[{k + 1}])
redis.call('EXPIRE', KEYS[{k + 1}], ARGV[{a + 4}])
redis.call('XADD', KEYS[{k + 2}], seq .. '-1', 'e', ARGV[{a + 1}], 'p', ARGV[{a + 2}])
redis.call('EXPIRE', KEYS[{k + 2}], ARGV[{a + 3}])
{then}
"""


_TOKEN_SCRIPT = _token_lua(0, 0)
# The session's event lock (a token under SET NX PX, released only by its holder, as redis-py's
# Lock: key 1, arguments 1-2) taken in the same round trip as the first thing done under it:
# whether the seq counter exists (publishing), or a token event's seq and stream entry. -2: the
# lock is held elsewhere.
_LOCK_LUA = "if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -2 end\n"
_ACQUIRE_SCRIPT = _LOCK_LUA + "return redis.call('EXISTS', KEYS[2])\n"
_ACQUIRE_TOKEN_SCRIPT = _LOCK_LUA + _token_lua(1, 2)
# A token event in one round trip, lock-free: run only while no one else holds the session's event
# lock (key 1; argument 1 is this thread's token when it holds it, else ""), so it publishes in seq
# order with the lock's holders, as if it took and released it. After the token's seq and stream
# entry, publishes the message-queue message: argument 6 (the channel), 7 and 8 (the message's
# text before and after its seq).
_QUEUED_TOKEN_SCRIPT = (
    "local holder = redis.call('GET', KEYS[1])\n"
    "if holder and holder ~= ARGV[1] then return -2 end\n"
    + _token_lua(1, 1, "redis.call('PUBLISH', ARGV[6], ARGV[7] .. seq .. ARGV[8])\nreturn seq")
)
# A final event's seq: INCR and EXPIRE in one script (a MULTI/EXEC pipeline costs more to build).
_INCR_SCRIPT = """
local seq = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return seq
"""
_RELEASE_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
LOCK_RETRY_SLEEP_S = 0.1  # redis-py Lock's default


def _wait_or_give_up(deadline: float, what: str) -> None:
    """Between two tries at the session's event lock: a pause, or TimeoutError past ``deadline``."""
    if time.monotonic() >= deadline:
        raise TimeoutError(f"{what} in {LOCK_TIMEOUT_S:.0f} s")
    time.sleep(LOCK_RETRY_SLEEP_S)


def socketio_channel(redis_url: str) -> str:
    """The Socket.IO message-queue channel: Redis pub/sub ignores database numbers, so the
    channel names the database, keeping deployments that share one Redis apart."""
    db = urlparse(redis_url).path.strip("/") or "0"
    return f"{KEY_PREFIX}-socketio-{db}"


class _Publication(Publication):
    def __init__(self, log_: RedisSessionEventLog, session_id: str) -> None:
        super().__init__(session_id, 0)
        self._log = log_

    def next_seq(self) -> int:
        self.last_seq = self._log._next_seq(self.session_id)
        return self.last_seq


class RedisSessionEventLog:
    def __init__(
        self,
        session_factory: sessionmaker[DbSession],
        redis_client: redis.Redis,
        transport: Transport | None = None,
        *,
        token_ttl_s: int = 3600,
        floors: ReplayAwareRedisManager | None = None,
    ) -> None:
        self._factory = session_factory
        self._redis = redis_client
        self.set_transport(transport)
        self._token_ttl_s = token_ttl_s
        self._floors = floors
        self._held = threading.local()  # session_id -> [lock, depth] held by this thread
        self._token_script = redis_client.register_script(_TOKEN_SCRIPT)
        self._acquire_script = redis_client.register_script(_ACQUIRE_SCRIPT)
        self._acquire_token_script = redis_client.register_script(_ACQUIRE_TOKEN_SCRIPT)
        self._release_script = redis_client.register_script(_RELEASE_SCRIPT)
        self._incr_script = redis_client.register_script(_INCR_SCRIPT)
        self._queued_token_script = redis_client.register_script(_QUEUED_TOKEN_SCRIPT)

    def set_transport(self, transport: Transport | None) -> None:
        """Where events go once published. A ``SocketQueue`` (a worker's), also wrapped (as
        ``__wrapped__``: the push of final replies), takes token events in one round trip
        (``_publish_queued``), which bypasses the wrapper: it only ever sees final events."""
        self._transport = transport
        queue = getattr(transport, "__wrapped__", transport)
        self._queue = queue if isinstance(queue, SocketQueue) else None

    def set_floors(self, floors: ReplayAwareRedisManager | None) -> None:
        self._floors = floors

    @staticmethod
    def _seq_key(session_id: str) -> str:
        return f"{KEY_PREFIX}:seq:{session_id}"

    @staticmethod
    def _stream_key(session_id: str) -> str:
        return f"{KEY_PREFIX}:tokens:{session_id}"

    @staticmethod
    def _lock_key(session_id: str) -> str:
        return f"{KEY_PREFIX}:evlock:{session_id}"

    @contextmanager
    def session_lock(self, session_id: str) -> Iterator[None]:
        """Serialises the caller with every publisher of this session, in any process (re-entrant
        within a thread)."""
        with self._locked(session_id, self._acquire_script, [self._seq_key(session_id)], []):
            yield

    @contextmanager
    def _locked(self, session_id: str, acquire: Any, keys: list[str], args: list[Any]) -> Iterator[int | None]:
        """Holds the session's event lock, taken by ``acquire`` (a script whose first key is the
        lock, first arguments the token and the expiry in ms; -2 when the lock is held), and
        yields the script's result; None when this thread already held the lock (nothing run)."""
        held: dict[str, list] = self._held.__dict__.setdefault("locks", {})
        entry = held.get(session_id)
        if entry is not None:
            entry[1] += 1
            try:
                yield None
            finally:
                entry[1] -= 1
            return
        lock_key = self._lock_key(session_id)
        token = uuid.uuid4().hex
        argv = [token, int(LOCK_TIMEOUT_S * 1000), *args]
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            result = int(acquire(keys=[lock_key, *keys], args=argv))
            if result != -2:
                break
            _wait_or_give_up(deadline, f"session {session_id}: event lock not acquired")
        held[session_id] = [token, 1]
        try:
            yield result
        finally:
            del held[session_id]
            if not self._release_script(keys=[lock_key], args=[token]):
                log.warning("session %s: event lock expired while held", session_id)

    def _seed(self, session_id: str) -> None:
        if not self._redis.exists(self._seq_key(session_id)):
            self._redis.set(self._seq_key(session_id), resume_seq(self._factory, session_id), nx=True,
                            ex=SEQ_KEY_TTL_S)

    def _next_seq(self, session_id: str) -> int:
        # Seeded by publishing() before the caller's transaction: seeding here would need a second
        # database connection while the caller holds one (a pool deadlock under load).
        return int(self._incr_script(keys=[self._seq_key(session_id)], args=[SEQ_KEY_TTL_S]))

    @contextmanager
    def publishing(self, session_id: str) -> Iterator[Publication]:
        with self._locked(session_id, self._acquire_script, [self._seq_key(session_id)], []) as seeded:
            if not seeded:  # 0: never seeded (or Redis restarted); None: re-entrant, not looked at
                self._seed(session_id)
            publication = _Publication(self, session_id)
            yield publication
            for name, payload in publication.events:
                self._send(session_id, name, payload)

    def publish(self, session_id: str, event_name: str, payload: dict[str, Any], *, durable: bool = True) -> int:
        if durable:
            with self.publishing(session_id) as publication, transaction(self._factory) as db:
                return publication.add(db, event_name, payload)
        body = json.dumps(payload)
        keys = [self._seq_key(session_id), self._stream_key(session_id)]
        args = [event_name, body, self._token_ttl_s, SEQ_KEY_TTL_S]
        around = self._queue.around_seq(session_id, event_name, payload) if self._queue is not None else None
        if around is not None:
            return self._publish_queued(session_id, keys, [*args, self._queue.channel, *around])
        with self._locked(session_id, self._acquire_token_script, keys, args) as seq:
            if seq is None or seq < 0:  # re-entrant (nothing run yet), or the counter was never seeded
                seq = int(self._token_script(keys=keys, args=args))
                if seq < 0:
                    self._seed(session_id)
                    seq = int(self._token_script(keys=keys, args=args))
            self._send(session_id, event_name, {**payload, "seq": seq})
            return seq

    def _publish_queued(self, session_id: str, keys: list[str], args: list[Any]) -> int:
        """A token event in one script: its seq, its stream entry and its message-queue message,
        run only while no other thread or process holds the session's event lock (so it reaches
        the queue in seq order, as under the lock). One round trip instead of three (take the
        lock, publish, release it); a worker streaming a reply sends one per token event. Gives
        up after the lock's timeout, whether the lock stays held or the counter stays unseeded."""
        held = self._held.__dict__.get("locks", {}).get(session_id)
        keys = [self._lock_key(session_id), *keys]
        argv = [held[0] if held is not None else "", *args]
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        seeded = False
        while True:
            seq = int(self._queued_token_script(keys=keys, args=argv))
            if seq >= 0:
                return seq
            if seq == -1 and not seeded:  # the counter was never seeded (or Redis restarted)
                self._seed(session_id)
                seeded = True
                continue
            # -2: held elsewhere; -1 again: seeded, then gone at once
            _wait_or_give_up(deadline, f"session {session_id}: token event not published")
            if seq == -1:
                self._seed(session_id)

    def _send(self, session_id: str, event_name: str, payload: dict[str, Any]) -> None:
        if self._transport is None:
            return
        try:
            self._transport(session_id, event_name, payload)
        except Exception:  # a lost message queue must not fail the turn; the replay has the event
            log.exception("transport failed for %s %s seq=%s", session_id, event_name, payload.get("seq"))

    def events_after(self, session_id: str, last_seq: int) -> list[tuple[int, str, dict[str, Any]]]:
        with self._factory() as db:
            events = durable_events_after(db, session_id, last_seq)
        for entry_id, fields in self._redis.xrange(self._stream_key(session_id), min=f"{last_seq + 1}-0"):
            seq = int(entry_id.decode().split("-")[0] if isinstance(entry_id, bytes) else entry_id.split("-")[0])
            name = fields[b"e"].decode() if b"e" in fields else fields["e"]
            body = fields[b"p"] if b"p" in fields else fields["p"]
            events.append((seq, name, {**json.loads(body), "seq": seq}))
        events.sort(key=lambda e: e[0])
        return events

    def join_and_replay(
        self,
        session_id: str,
        last_seq: int,
        join: Callable[[], None],
        send: Callable[[str, dict[str, Any]], None],
        sid: str | None = None,
    ) -> int:
        """Joins the live stream and sends what came after last_seq, exactly once (module doc)."""
        floors = self._floors if sid is not None else None
        if floors is not None:
            floors.hold(sid, session_id)
        join()
        with self.session_lock(session_id):
            events = self.events_after(session_id, last_seq)
            if floors is not None:
                floors.set_floor(sid, session_id, max([last_seq] + [seq for seq, _n, _p in events]))
            for _seq, name, payload in events:
                send(name, payload)
        return len(events)


# Stands for the seq in a message built before the seq is known (SocketQueue.around_seq).
_SEQ_MARK = "\x00mojodex-seq\x00"


class _QueueMessages(socketio.PubSubManager):
    """python-socketio's message-queue messages, built by its own ``emit`` and kept, not published."""

    name = "mojodex-queue-messages"

    def __init__(self, channel: str) -> None:
        super().__init__(channel=channel, write_only=True)
        self._built = threading.local()

    def build(self, room: str, event_name: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The message ``emit`` publishes; None if it published none (then the caller publishes
        as for any event)."""
        self._built.message = None
        self.emit(event_name, payload, namespace="/", room=room)
        return self._built.message

    def _publish(self, data: dict[str, Any]) -> None:
        self._built.message = data

    def _listen(self) -> Iterator[Any]:  # write-only: never listens
        return iter(())


class SocketQueue:
    """A worker's transport: Flask-SocketIO's Redis message queue (the worker has no sockets of its
    own). For token events it also gives the queue message as text around the seq
    (``around_seq``), so that the script taking the seq publishes it (RedisSessionEventLog)."""

    def __init__(self, redis_url: str, channel: str) -> None:
        from flask_socketio import SocketIO

        self.channel = channel
        self._emitter = SocketIO(message_queue=redis_url, channel=channel)
        self._messages = _QueueMessages(channel)
        self._mark = self._messages.json.dumps(_SEQ_MARK)  # the mark as the message's text holds it

    def __call__(self, session_id: str, event_name: str, payload: dict[str, Any]) -> None:
        self._emitter.emit(event_name, payload, to=session_id)

    def around_seq(self, session_id: str, event_name: str, payload: dict[str, Any]) -> tuple[str, str] | None:
        """The event's queue message (payload and seq, to the session's room), split where its
        seq goes; None when the text cannot be split there unambiguously (the caller then takes
        the lock and publishes as for any event)."""
        built = self._messages.build(session_id, event_name, {**payload, "seq": _SEQ_MARK})
        if built is None:
            return None
        before, mark, after = self._messages.json.dumps(built).partition(self._mark)
        if not mark or mark in after:
            return None
        return before, after


class ReplayAwareRedisManager(socketio.RedisManager):
    """Flask-SocketIO's Redis message queue, skipping the live events a socket got in its replay.

    Floors are per (room, sid): a live event of a session's room whose seq is at or below the
    socket's floor is not sent to that socket. ``hold`` sets an infinite floor while a replay is
    being read; ``set_floor`` sets the last replayed seq.
    """

    def __init__(self, url: str, channel: str, **kwargs: Any) -> None:
        super().__init__(url, channel=channel, **kwargs)
        self._floors: dict[str, dict[str, float]] = {}
        self._floors_lock = threading.Lock()

    def hold(self, sid: str, room: str) -> None:
        with self._floors_lock:
            self._floors.setdefault(room, {})[sid] = float("inf")

    def set_floor(self, sid: str, room: str, seq: int) -> None:
        with self._floors_lock:
            self._floors.setdefault(room, {})[sid] = seq

    def forget(self, sid: str) -> None:
        with self._floors_lock:
            for room in [r for r, sids in self._floors.items() if sids.pop(sid, None) is not None and not sids]:
                del self._floors[room]

    def _handle_emit(self, message: dict[str, Any]) -> None:
        # Overrides python-socketio's PubSubManager hook that delivers a queued emit to this
        # host's sockets (python-socketio 5.x); the skip_sid list is its own filtering.
        room, data = message.get("room"), message.get("data")
        payload = data[0] if isinstance(data, list) and data else None
        seq = payload.get("seq") if isinstance(payload, dict) else None
        if isinstance(room, str) and isinstance(seq, int):
            with self._floors_lock:
                floors = dict(self._floors.get(room, {}))
            skip = [sid for sid, floor in floors.items() if seq <= floor]
            if skip:
                existing = message.get("skip_sid")
                existing = [] if existing is None else existing if isinstance(existing, list) else [existing]
                message = {**message, "skip_sid": existing + skip}
        super()._handle_emit(message)
