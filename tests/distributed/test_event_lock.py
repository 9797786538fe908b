"""The distributed event log's session lock, taken in the same round trip as the first thing done
under it (background/distributed/events.py), on the suite's database and TEST_REDIS_URL."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from background.distributed.events import RedisSessionEventLog
from mojodex_core.db import make_engine, make_session_factory, transaction
from tests.unit._rows import session_row

REDIS_URL = os.environ.get("TEST_REDIS_URL")


@pytest.fixture
def parts(database_url: str) -> Iterator[tuple]:
    if not REDIS_URL:
        pytest.skip("needs TEST_REDIS_URL")
    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    client = redis.Redis.from_url(REDIS_URL)
    with transaction(factory) as db:
        sid = session_row(db)
    yield factory, client, sid
    client.delete(f"mojodex:seq:{sid}", f"mojodex:tokens:{sid}", f"mojodex:evlock:{sid}")
    engine.dispose()


def _log(factory, client, sent: list) -> RedisSessionEventLog:  # noqa: ANN001
    return RedisSessionEventLog(factory, client, lambda _s, name, payload: sent.append((name, payload["seq"])))


def test_seqs_are_seeded_after_a_redis_restart(parts):
    factory, client, sid = parts
    sent: list = []
    events = _log(factory, client, sent)
    assert events.publish(sid, "first", {}) == 1  # durable: seeded from the (empty) database
    assert events.publish(sid, "draft_token", {"t": "a"}, durable=False) == 2
    client.delete(f"mojodex:seq:{sid}", f"mojodex:tokens:{sid}")  # Redis restarted
    assert events.publish(sid, "draft_token", {"t": "b"}, durable=False) == 2, "re-seeded past the stored event"
    client.delete(f"mojodex:seq:{sid}", f"mojodex:tokens:{sid}")
    with events.publishing(sid) as publication, transaction(factory) as db:
        assert publication.add(db, "second", {}) == 2
    assert [n for _s, n, _p in events.events_after(sid, 0)] == ["first", "second"]
    assert client.get(f"mojodex:evlock:{sid}") is None, "the lock is released"


def test_a_publisher_waits_for_the_lock_held_elsewhere_and_reentry_does_not(parts):
    factory, client, sid = parts
    sent: list = []
    holder, other = _log(factory, client, sent), _log(factory, client, sent)
    holder.publish(sid, "first", {})
    released = threading.Event()
    done: list[float] = []

    def publish_elsewhere() -> None:
        other.publish(sid, "draft_token", {"t": "x"}, durable=False)
        done.append(time.monotonic())

    with holder.session_lock(sid):
        thread = threading.Thread(target=publish_elsewhere)
        thread.start()
        time.sleep(0.3)
        assert not done, "another publisher must wait while the lock is held"
        holder.publish(sid, "draft_token", {"t": "mine"}, durable=False)  # re-entrant: no wait
        with holder.publishing(sid) as publication, transaction(factory) as db:
            publication.add(db, "nested", {})
        released_at = time.monotonic()
        released.set()
    thread.join(5)
    assert done and done[0] >= released_at
    assert [n for n, _s in sent] == ["first", "draft_token", "nested", "draft_token"]
    assert [s for _n, s in sent] == [1, 2, 3, 4]


def test_a_lock_that_expired_while_held_is_not_released_for_its_new_holder(parts, caplog):
    factory, client, sid = parts
    events = _log(factory, client, [])
    with events.session_lock(sid):
        client.set(f"mojodex:evlock:{sid}", "someone-else")  # expired, then taken by another process
    assert client.get(f"mojodex:evlock:{sid}") == b"someone-else"
    assert "expired while held" in caplog.text


def test_a_final_event_is_inserted_at_once_not_left_to_the_unit_of_work(parts):
    from sqlalchemy import func, select

    from mojodex_core.db.models import SessionEvent

    factory, client, sid = parts
    events = _log(factory, client, [])
    with events.publishing(sid) as publication, transaction(factory) as db:
        seq = publication.add(db, "mojo_message", {"text": "hi"})
        assert not db.new, "no ORM object pending a flush"
        stored = db.execute(select(func.count()).select_from(SessionEvent).where(
            SessionEvent.session_id == sid, SessionEvent.seq == seq)).scalar()
        assert stored == 1
    assert events.events_after(sid, 0) == [(seq, "mojo_message", {"text": "hi", "seq": seq})]


def test_a_final_events_seq_keeps_the_counter_alive(parts):
    factory, client, sid = parts
    events = _log(factory, client, [])
    events.publish(sid, "first", {})
    client.expire(f"mojodex:seq:{sid}", 5)
    assert events.publish(sid, "second", {}) == 2
    assert client.ttl(f"mojodex:seq:{sid}") > 3600, "every seq renews the counter's expiry"


class _Counting(redis.Redis):
    """A Redis client that lists the commands it sends."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.commands: list[str] = []

    def execute_command(self, *args, **options):  # noqa: ANN002, ANN003, ANN201
        self.commands.append(str(args[0]).upper())
        return super().execute_command(*args, **options)


@pytest.fixture
def queue(parts) -> Iterator[tuple]:
    """A worker's log (its transport the Socket.IO message queue), and the queue's messages."""
    from background.distributed.events import SocketQueue

    factory, _client, sid = parts
    channel = f"mojodex-test-{uuid.uuid4().hex[:8]}"
    client = _Counting.from_url(REDIS_URL)
    listener = redis.Redis.from_url(REDIS_URL).pubsub(ignore_subscribe_messages=True)
    listener.subscribe(channel)

    def received(count: int) -> list[dict]:
        messages: list[dict] = []
        deadline = time.monotonic() + 5
        while len(messages) < count and time.monotonic() < deadline:
            message = listener.get_message(timeout=0.2)
            if message is not None:
                messages.append(json.loads(message["data"]))
        return messages

    yield RedisSessionEventLog(factory, client, SocketQueue(REDIS_URL, channel)), client, channel, received
    listener.close()


def test_a_token_event_on_a_worker_is_one_round_trip_and_the_queue_message_socketio_sends(parts, queue):
    from flask_socketio import SocketIO

    _factory, _client, sid = parts
    events, client, channel, received = queue
    assert events.publish(sid, "first", {}) == 1
    assert events.publish(sid, "draft_token", {"text": "a"}, durable=False) == 2  # loads the script
    client.commands.clear()
    seqs = [events.publish(sid, "draft_token", {"text": t, "n": 1.5}, durable=False) for t in ("é\n", '"}')]
    assert seqs == [3, 4]
    assert client.commands == ["EVALSHA", "EVALSHA"], "seq, stream entry and publish in one script"
    SocketIO(message_queue=REDIS_URL, channel=channel).emit("draft_token", {"text": '"}', "n": 1.5, "seq": 4}, to=sid)
    *ours, socketio_own = received(5)
    assert [m["data"][0]["seq"] for m in ours] == [1, 2, 3, 4]
    assert ours[2]["data"] == [{"text": "é\n", "n": 1.5, "seq": 3}] and ours[2]["room"] == sid
    assert {**ours[3], "host_id": None} == {**socketio_own, "host_id": None}, "the library's own message"
    assert [n for _s, n, _p in events.events_after(sid, 0)] == ["first"] + ["draft_token"] * 3


def test_a_token_event_waits_for_the_lock_held_elsewhere_not_for_its_own_thread(parts, queue):
    factory, client, sid = parts
    events, _counting, _channel, received = queue
    other = _log(factory, client, [])
    events.publish(sid, "first", {})
    done: list[float] = []

    def stream() -> None:
        events.publish(sid, "draft_token", {"text": "x"}, durable=False)
        done.append(time.monotonic())

    with other.session_lock(sid):  # another process's publisher
        thread = threading.Thread(target=stream)
        thread.start()
        time.sleep(0.3)
        assert not done, "a token event must wait while the lock is held elsewhere"
        with other.publishing(sid) as publication, transaction(factory) as db:
            publication.add(db, "held", {})
        released_at = time.monotonic()
    thread.join(5)
    assert done and done[0] >= released_at
    with events.session_lock(sid):  # its own thread holds it: no wait
        events.publish(sid, "draft_token", {"text": "mine"}, durable=False)
    assert [(m["event"], m["data"][0]["seq"]) for m in received(3)] == [("first", 1), ("draft_token", 3),
                                                                        ("draft_token", 4)]


def test_a_token_event_seeds_its_counter_and_one_carrying_the_mark_takes_the_lock(parts, queue):
    from background.distributed.events import _SEQ_MARK

    factory, client, sid = parts
    events, counting, _channel, received = queue
    with transaction(factory) as db, _log(factory, client, []).publishing(sid) as publication:
        publication.add(db, "stored", {})
    client.delete(f"mojodex:seq:{sid}")  # Redis restarted
    assert events.publish(sid, "draft_token", {"text": "a"}, durable=False) == 2, "seeded past the stored event"
    counting.commands.clear()
    assert events.publish(sid, "draft_token", {"text": _SEQ_MARK}, durable=False) == 3
    assert counting.commands[0] == "EVALSHA" and len(counting.commands) == 2, "the lock, then its release"
    assert [(m["data"][0]["text"], m["data"][0]["seq"]) for m in received(2)] == [("a", 2), (_SEQ_MARK, 3)]
    assert client.get(f"mojodex:evlock:{sid}") is None


def test_a_token_event_takes_the_lock_when_socketio_builds_no_message_to_split(parts, queue, monkeypatch):
    from background.distributed.events import _QueueMessages

    _factory, client, sid = parts
    events, counting, _channel, received = queue
    monkeypatch.setattr(_QueueMessages, "_publish", lambda self, data: None)  # a python-socketio that changed
    events.publish(sid, "first", {})
    counting.commands.clear()
    assert events.publish(sid, "draft_token", {"text": "a"}, durable=False) == 2
    assert len(counting.commands) == 2, "the lock with the seq, then its release"
    assert [(m["event"], m["data"][0]["seq"]) for m in received(2)] == [("first", 1), ("draft_token", 2)]


def test_a_token_event_whose_counter_cannot_be_seeded_gives_up(parts, queue, monkeypatch):
    from background.distributed import events as events_module

    _factory, client, sid = parts
    events, _counting, _channel, _received = queue
    client.delete(f"mojodex:seq:{sid}")
    monkeypatch.setattr(events_module, "LOCK_TIMEOUT_S", 0.3)
    monkeypatch.setattr(events, "_seed", lambda _session_id: None)  # e.g. Redis evicting the key at once
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        events.publish(sid, "draft_token", {"text": "a"}, durable=False)
    assert time.monotonic() - started < 5
