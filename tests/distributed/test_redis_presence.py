"""The presence backends and workers share through Redis (mojodex_core/push/redis_presence.py),
against the real Redis of TEST_REDIS_URL: two instances stand for two processes."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from backend.cluster import free_port
from background.distributed.events import RedisSessionEventLog, SocketQueue, socketio_channel
from mojodex_core.push.notifiers import Notification
from mojodex_core.push.redis_presence import RedisPresence
from mojodex_core.push.service import PushOnFinalReplies

REDIS_URL = os.environ.get("TEST_REDIS_URL")


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    if not REDIS_URL:
        pytest.skip("needs TEST_REDIS_URL")
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def user() -> Iterator[str]:
    user_id = uuid.uuid4().hex
    yield user_id
    if REDIS_URL:
        redis.Redis.from_url(REDIS_URL).delete(RedisPresence.key(user_id))


def _unreachable() -> redis.Redis:
    """A client as ``from_url`` builds it, of a port nothing listens on."""
    return RedisPresence.from_url(f"redis://127.0.0.1:{free_port()}/0")._redis


def test_two_sockets_one_gone_the_user_is_still_online_on_every_process(client, user):
    backend, worker = RedisPresence(client), RedisPresence(client)
    try:
        backend.connected("sid-a", user)
        backend.connected("sid-b", user)
        backend.connected("sid-b", user)  # reported twice: still one socket
        backend.disconnected("sid-a")
        assert worker.online(user) and backend.online(user)
        backend.disconnected("sid-b")
        backend.disconnected("sid-b")  # twice is harmless
        assert not worker.online(user)
        assert not worker.online(uuid.uuid4().hex)
    finally:
        backend.close()


def test_sockets_on_two_backends_count_until_both_are_gone(client, user):
    one, two, worker = RedisPresence(client), RedisPresence(client), RedisPresence(client)
    try:
        one.connected("sid-1", user)
        two.connected("sid-2", user)
        one.close()  # a backend stopping removes its own sockets only
        assert worker.online(user)
        two.disconnected("sid-2")
        assert not worker.online(user)
    finally:
        two.close()


def test_entries_are_renewed_and_expire_once_their_process_stops_renewing(client, user):
    ttl_s = 1.5
    backend, worker = RedisPresence(client, ttl_s=ttl_s), RedisPresence(client)
    backend.connected("sid-a", user)
    time.sleep(ttl_s * 2)  # renewed every ttl / 3 meanwhile
    assert worker.online(user)
    backend._stopping.set()  # as if killed: no renewal, no disconnect
    backend._thread.join(5)
    stopped_at = time.monotonic()
    assert worker.online(user), "still counted until the entry expires"
    while worker.online(user) and time.monotonic() - stopped_at < ttl_s * 3:
        time.sleep(0.05)
    assert not worker.online(user)
    assert time.monotonic() - stopped_at <= ttl_s + 0.5
    time.sleep(1.0)
    assert not client.exists(RedisPresence.key(user)), "the key expires too"


def test_a_renewal_writes_back_the_sockets_redis_lost_but_not_those_gone(client, user):
    backend, worker = RedisPresence(client), RedisPresence(client)
    try:
        backend.connected("sid-a", user)
        client.delete(RedisPresence.key(user))  # Redis restarted empty
        assert not worker.online(user)
        backend.renew()
        assert worker.online(user)
        # a socket gone while a renewal ran is removed after the renewal wrote it back
        real_write = backend._write

        def write_then_disconnect(*args):  # noqa: ANN002, ANN202
            result = real_write(*args)
            with backend._lock:
                backend._user_by_sid.pop("sid-a")  # disconnected() ran after the renewal's snapshot
            return result

        backend._write = write_then_disconnect
        backend.renew()
        assert not worker.online(user)
    finally:
        backend.close()


def test_a_redis_error_counts_the_user_offline_and_is_logged_once_per_burst(client, user, caplog):
    presence = RedisPresence(_unreachable())
    caplog.set_level(logging.WARNING, logger="mojodex.push")
    started = time.monotonic()
    assert not presence.online(user)
    assert time.monotonic() - started < 2.0, "asked on a turn's thread: a down Redis answers at once"
    presence.connected("sid-a", user)
    presence.disconnected("sid-a")
    assert not presence.online(user)
    assert len([r for r in caplog.records if "unreachable" in r.message]) == 1
    presence._redis = client  # back
    assert not presence.online(user)
    assert [r.message for r in caplog.records][-1] == "presence: Redis reachable again"
    presence._redis = _unreachable()
    presence.online(user)
    assert len([r for r in caplog.records if "unreachable" in r.message]) == 2, "a new burst is logged again"
    presence.close()


class _Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.sent: list[Notification] = []

    def send(self, notification: Notification) -> None:
        self.sent.append(notification)


def test_a_final_reply_is_pushed_when_redis_cannot_say():
    push = PushOnFinalReplies(factory=None, presence=RedisPresence(_unreachable()), notifier=_Recorder())  # type: ignore[arg-type]
    push._users["s1"] = "u1"
    try:
        assert push.on_final_reply("s1", "mojo_message", {"message_pk": 1, "text": "Done."})
    finally:
        push.shutdown()


def test_a_worker_s_wrapped_socket_queue_still_sends_token_events_in_one_round_trip(client):
    queue = SocketQueue(REDIS_URL, socketio_channel(REDIS_URL))
    push = PushOnFinalReplies(factory=None, presence=RedisPresence(client), notifier=_Recorder())  # type: ignore[arg-type]
    events = RedisSessionEventLog(None, client)  # type: ignore[arg-type]
    events.set_transport(push.wrap(queue))
    assert events._queue is queue
    push.shutdown()
