"""SessionEventLog: seq allocation, replay of durable events merged with buffered tokens,
and join_and_replay delivering every event exactly once while events are being published."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.models import Session, SessionEvent
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.users import create_user


@pytest.fixture(scope="module")
def factory(database_url: str) -> Iterator[sessionmaker[DbSession]]:
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.fixture
def session_id(factory: sessionmaker[DbSession]) -> str:
    with transaction(factory) as db:
        user = create_user(db, name="Events", email=f"e{uuid.uuid4().hex[:12]}@example.com")
        session = Session(session_id=uuid.uuid4().hex, user_id=user.user_id)
        db.add(session)
        return session.session_id


class Room:
    """What the transport sends to, recorded."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, session_id: str, name: str, payload: dict[str, Any]) -> None:
        self.sent.append((session_id, name, payload))


def stored(factory: sessionmaker[DbSession], session_id: str) -> list[int]:
    with factory() as db:
        return list(db.scalars(select(SessionEvent.seq).where(SessionEvent.session_id == session_id)
                               .order_by(SessionEvent.seq)))


def test_seqs_are_allocated_in_order_across_durable_events_and_tokens(factory, session_id):
    room = Room()
    log = SessionEventLog(factory, room)
    assert log.publish(session_id, "user_message_reception", {"text": "hi"}) == 1
    assert log.publish(session_id, "mojo_token", {"delta": "a"}, durable=False) == 2
    assert log.publish(session_id, "mojo_token", {"delta": "b"}, durable=False) == 3
    assert log.publish(session_id, "mojo_message", {"text": "ab"}) == 4
    assert [(n, p["seq"]) for _s, n, p in room.sent] == [
        ("user_message_reception", 1), ("mojo_token", 2), ("mojo_token", 3), ("mojo_message", 4)
    ]
    assert stored(factory, session_id) == [1, 4]  # tokens are not written to the database


def test_a_publication_is_sent_only_once_committed(factory, session_id):
    room = Room()
    log = SessionEventLog(factory, room)
    with log.publishing(session_id) as publication, transaction(factory) as db:
        assert publication.add(db, "a", {}) == 1
        assert publication.add(db, "b", {}) == 2
        assert room.sent == []  # not before the commit
    assert [p["seq"] for _s, _n, p in room.sent] == [1, 2]
    with pytest.raises(RuntimeError), log.publishing(session_id) as publication, transaction(factory) as db:
        publication.add(db, "lost", {})
        raise RuntimeError("rolled back")
    assert len(room.sent) == 2 and stored(factory, session_id) == [1, 2]
    assert log.publish(session_id, "c", {}) == 3  # the rolled-back seq is not skipped


def test_seqs_continue_after_a_restart(factory, session_id):
    SessionEventLog(factory).publish(session_id, "a", {})
    SessionEventLog(factory).publish(session_id, "b", {})
    assert SessionEventLog(factory).publish(session_id, "c", {}) == 3


def test_replay_merges_durable_events_and_buffered_tokens(factory, session_id):
    log = SessionEventLog(factory, token_buffer_size=4)
    kinds = ["d", "t", "t", "d", "t", "t", "t", "t", "d"]
    for kind in kinds:
        log.publish(session_id, "mojo_token" if kind == "t" else "final", {}, durable=kind == "d")
    assert [s for s, _n, _p in log.events_after(session_id, 0)] == [1, 4, 5, 6, 7, 8, 9]  # tokens 2, 3 aged out
    assert [s for s, _n, _p in log.events_after(session_id, 5)] == [6, 7, 8, 9]
    assert log.events_after(session_id, 9) == []
    replayed: list[tuple[str, int]] = []
    joined: list[bool] = []
    count = log.join_and_replay(session_id, 3, lambda: joined.append(True),
                                lambda name, payload: replayed.append((name, payload["seq"])))
    assert joined == [True] and count == 6
    assert replayed == [("final", 4), ("mojo_token", 5), ("mojo_token", 6), ("mojo_token", 7),
                        ("mojo_token", 8), ("final", 9)]


@pytest.mark.parametrize("round_", range(4))
def test_join_and_replay_is_exactly_once_while_publishing(factory, session_id, round_):
    total = 200
    members: list[list[int]] = []  # clients that joined the room; the transport sends to them
    lock = threading.Lock()

    def transport(_session_id: str, _name: str, payload: dict[str, Any]) -> None:
        with lock:
            for received in members:
                received.append(payload["seq"])

    log = SessionEventLog(factory, transport)
    published = threading.Event()

    def publisher() -> None:
        for i in range(total):
            log.publish(session_id, "e", {"i": i}, durable=i % 10 == 0)
            if i == total // 3:
                published.set()
            if i % 20 == 0:
                time.sleep(0.002)  # leave the joining clients room to land mid-stream
        published.set()

    clients: list[list[int]] = []
    replayed_counts: list[int] = []
    thread = threading.Thread(target=publisher)
    thread.start()
    published.wait(5)
    rng = random.Random(round_)
    for _ in range(3):  # clients join at different moments, each from a different last seq
        received: list[int] = []
        clients.append(received)
        last_seq = rng.randint(0, 20)

        def join(received: list[int] = received) -> None:
            with lock:
                members.append(received)

        count = log.join_and_replay(session_id, last_seq, join,
                                    lambda _n, p, received=received: received.append(p["seq"]))
        received.insert(0, last_seq)  # marks where this client started
        replayed_counts.append(count)
    thread.join(10)
    for received in clients:
        start, events = received[0], received[1:]
        assert events == list(range(start + 1, total + 1))
    # at least one client joined mid-stream: part replayed, part live
    assert any(0 < count < total - c[0] for count, c in zip(replayed_counts, clients, strict=True)), replayed_counts


def test_seqs_after_a_crash_mid_stream_are_above_the_lost_tokens(factory, session_id):
    # Before the fix, a restarted process continued from the last stored seq, reusing the
    # seqs of tokens a client had already seen, so that client missed the resumed turn.
    before = SessionEventLog(factory)
    before.publish(session_id, "user_message_reception", {})
    token_seqs = [before.publish(session_id, "mojo_token", {}, durable=False) for _ in range(5)]
    after = SessionEventLog(factory)  # the process died mid-turn: tokens were never stored
    new_seq = after.publish(session_id, "mojo_message", {})
    assert new_seq > max(token_seqs)
    assert [s for s, _n, _p in after.events_after(session_id, max(token_seqs))] == [new_seq]


def test_seqs_continue_without_a_jump_after_a_turn_that_ended(factory, session_id):
    before = SessionEventLog(factory)
    before.publish(session_id, "user_message_reception", {})
    before.publish(session_id, "mojo_token", {}, durable=False)
    closing = before.publish(session_id, "mojo_message", {})
    assert SessionEventLog(factory).publish(session_id, "user_message_reception", {}) == closing + 1


def test_seqs_after_a_crash_jump_when_a_message_was_left_unanswered(factory, session_id):
    # Before the fix, only a turn-opening last event triggered the jump: a message accepted
    # during the previous turn streams after that turn's final event, and a crash then made
    # the restarted process reuse seqs the client had already seen.
    from mojodex_core.db.models import Message

    before = SessionEventLog(factory)
    before.publish(session_id, "user_message_reception", {})
    before.publish(session_id, "user_message_reception", {})  # B, queued behind A
    closing = before.publish(session_id, "mojo_message", {})  # A answered
    token_seqs = [before.publish(session_id, "mojo_token", {}, durable=False) for _ in range(3)]  # B streams
    with transaction(factory) as db:
        db.add(Message(session_id=session_id, sender="user", message_id="b", event_name="user_message",
                       text="B", status="processing", data={}))
    after = SessionEventLog(factory)
    new_seq = after.publish(session_id, "mojo_message", {})
    assert new_seq > max(token_seqs) > closing
