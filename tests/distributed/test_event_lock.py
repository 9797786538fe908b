"""The distributed event log's session lock, taken in the same round trip as the first thing done
under it (background/distributed/events.py), on the suite's database and TEST_REDIS_URL."""

from __future__ import annotations

import os
import threading
import time
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
