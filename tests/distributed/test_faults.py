"""Faults of the shared services, seen through the real cluster: Postgres unreachable for 5 s,
the cluster's Redis (a private ``redis-server``, conftest.py) killed and restarted empty in the
middle of turns."""

from __future__ import annotations

import time
import uuid

from sqlalchemy import func, select

from mojodex_core.db.models import Message
from tests.distributed.conftest import answer_for
from tests.distributed.test_cluster import _answers, _send, _session


def _settled(live, session_ids: list[str], timeout: float = 60.0) -> None:  # noqa: ANN001
    """Waits until no message of these sessions is pending or processing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with live.db() as db:
            stuck = db.scalars(select(Message.status).where(
                Message.session_id.in_(session_ids), Message.sender == "user",
                Message.status.in_(("pending", "processing")))).all()
        if not stuck:
            return
        time.sleep(0.25)
    raise AssertionError(f"messages stuck: {stuck}")


def _wait_processing(live, session_ids: list[str], timeout: float = 10.0) -> None:  # noqa: ANN001
    """Waits until a turn of these sessions is running (a message ``processing``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with live.db() as db:
            if db.scalar(select(func.count()).select_from(Message).where(
                    Message.session_id.in_(session_ids), Message.status == "processing")):
                return
        time.sleep(0.05)
    raise AssertionError("no turn started")


def _answer_counts(live, session_id: str) -> list[int]:  # noqa: ANN001
    with live.db() as db:
        return list(db.scalars(select(func.count(Message.message_pk)).where(
            Message.session_id == session_id, Message.sender == "assistant").group_by(Message.event_name)))


def test_postgres_unreachable_for_5_s_answers_503_and_half_writes_nothing(cluster, backends):
    a, b = backends
    client, pk, session_id = _session(a)
    in_flight = "during the outage " + " ".join(f"w{i}" for i in range(20))
    _send(client, pk, session_id, in_flight, message_id="before")
    time.sleep(0.5)  # its turn is streaming
    cluster.pg_proxy.cut()
    cut_at = time.monotonic()
    try:
        refused = client.call("PUT", "/user_message", json={
            "session_id": session_id, "user_task_execution_pk": pk, "text": "hello", "message_id": "during"})
        assert refused.status_code == 503, refused.text
        assert refused.json() == {"error": "database unavailable"}
        other = type(client)(b.base_url, client.token, client.user_id)
        assert other.call("GET", "/message", params={"session_id": session_id}).status_code == 503
        assert client.call("GET", "/health").status_code == 503
        time.sleep(max(0.0, 5.0 - (time.monotonic() - cut_at)))
    finally:
        cluster.pg_proxy.restore()
    with a.db() as db:  # nothing of the refused request was stored
        assert db.scalar(select(Message).where(Message.session_id == session_id,
                                               Message.message_id == "during")) is None
    _send(client, pk, session_id, "hello", message_id="during")  # the client retries: accepted now
    _settled(a, [session_id])
    answers = _answers(a, session_id)
    assert [text for text, _answer, _status in answers] == [in_flight, "hello"]
    assert answers[1] == ("hello", answer_for("hello"), "answered")
    # The turn cut by the outage ends answered (re-run) or failed (retryable), never twice.
    assert answers[0][2] in ("answered", "failed")
    with a.db() as db:
        assistant = db.scalar(select(func.count()).select_from(Message).where(
            Message.session_id == session_id, Message.sender == "assistant"))
    assert assistant == sum(1 for _t, _a, status in answers if status == "answered")


def test_a_redis_restart_mid_turns_leaves_none_stuck_and_none_answered_twice(cluster, backends):
    sessions = [_session(backends[i % 2]) for i in range(4)]
    for index, (client, pk, session_id) in enumerate(sessions):
        for n in range(2):
            _send(client, pk, session_id, f"restart {index}-{n} " + " ".join(f"w{i}" for i in range(10)),
                  message_id=f"r{n}")
    session_ids = [s[2] for s in sessions]
    _wait_processing(backends[0], session_ids)  # turns are streaming
    # SIGKILL, down for 2 s, then a new redis-server on the same port: no persistence, so the
    # queued drain tasks, the token streams and the seqs are gone.
    killed_at = time.monotonic()
    old_pid = cluster.redis_server.process.pid
    cluster.redis_server.restart(down_s=2.0)
    assert cluster.redis_server.process.pid != old_pid
    _settled(backends[0], session_ids, timeout=45)
    for client, pk, session_id in sessions:
        answers = _answers(backends[0], session_id)
        assert all(status in ("answered", "failed") for _t, _a, status in answers), answers
        with backends[0].db() as db:
            assistant = db.scalar(select(func.count()).select_from(Message).where(
                Message.session_id == session_id, Message.sender == "assistant"))
        assert assistant == sum(1 for _t, _a, status in answers if status == "answered"), "answered twice"
        for n, (text, _answer, status) in enumerate(answers):  # a failed one is retryable: retry it
            if status == "failed":
                _send(client, pk, session_id, text, message_id=f"r{n}")
    _settled(backends[0], session_ids, timeout=30)
    assert time.monotonic() - killed_at < 60
    for _client, _pk, session_id in sessions:
        assert [(a, s) for t, a, s in _answers(backends[0], session_id)] == [
            (answer_for(t), "answered") for t, _a, _s in _answers(backends[0], session_id)]


def test_the_cluster_still_streams_after_the_faults(backends):
    a, b = backends
    client, pk, session_id = _session(b)
    socket = type(client)(a.base_url, client.token, client.user_id).socket(session_id)
    try:
        _send(client, pk, session_id, f"after {uuid.uuid4().hex[:6]}")
        final = socket.wait_event("mojo_message", timeout=60)[0]
        assert final["text"].startswith("Answer to after")
    finally:
        socket.close()
