"""Two backends, two workers: tokens cross processes, replay on another backend, order kept."""

from __future__ import annotations

import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests
from sqlalchemy import func, select

from mojodex_core.db.models import Message, SessionEvent, SessionRunner, UserTaskExecution
from tests.distributed.conftest import answer_for
from tests.integration._helpers import by_seq
from tests.integration.test_audio import wav_bytes
from tests.support.live import LiveServer
from tests.support.scripted_llm import Transcription


def _send(client, pk: int, session_id: str, text: str, message_id: str | None = None) -> dict:  # noqa: ANN001
    """PUT /user_message, sent again once if the connection drops (a keep-alive connection closed
    by the server as it was reused): the same message_id makes it idempotent."""
    body = {"session_id": session_id, "user_task_execution_pk": pk, "text": text,
            "message_id": message_id or uuid.uuid4().hex}
    try:
        return client.ok("PUT", "/user_message", json=body)
    except requests.ConnectionError:
        return client.ok("PUT", "/user_message", json=body)


def _session(backend):  # noqa: ANN001, ANN202
    client = backend.new_user()
    execution = client.new_execution()
    return client, execution["user_task_execution_pk"], execution["session_id"]


def _deltas_between(events, after_seq: int, before_seq: int) -> str:  # noqa: ANN001
    return "".join(d["delta"] for n, d in by_seq(events) if n == "mojo_token" and after_seq < d["seq"] < before_seq)


def test_a_turn_sent_through_one_backend_streams_to_a_client_of_the_other(backends):
    a, b = backends
    client_b, pk, session_id = _session(b)
    client_a = type(client_b)(a.base_url, client_b.token, client_b.user_id)
    socket = client_a.socket(session_id)
    try:
        _send(client_b, pk, session_id, "hello from B")
        final = socket.wait_event("mojo_message", timeout=30)[0]
        assert final["text"] == answer_for("hello from B")
        reception = socket.named("user_message_reception")[0]
        assert _deltas_between(socket.events, reception["seq"], final["seq"]).strip() == final["text"]
        seqs = [d["seq"] for _n, d in socket.events if isinstance(d, dict) and "seq" in d]
        assert len(seqs) == len(set(seqs)), "an event arrived twice"
    finally:
        socket.close()


def _answers(live, session_id: str) -> list[tuple[str, str]]:  # noqa: ANN001
    """(user text, its stored answer) in the order the user messages were accepted; None if unanswered."""
    with live.db() as db:
        rows = db.scalars(select(Message).where(Message.session_id == session_id).order_by(Message.message_pk)).all()
        by_pk = {r.message_pk: r for r in rows}
        return [(r.text, by_pk[r.answer_message_fk].text if r.answer_message_fk in by_pk else None, r.status)
                for r in rows if r.sender == "user"]


def _wait_answered(live, session_ids: list[str], timeout: float = 60.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with live.db() as db:
            busy = db.scalar(select(func.count()).select_from(Message).where(
                Message.session_id.in_(session_ids), Message.sender == "user",
                Message.status.in_(("pending", "processing"))))
        if busy == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"{busy} message(s) still unanswered")


def test_messages_sent_at_once_through_both_backends_are_answered_in_order(backends):
    sessions = [_session(backends[i % 2]) for i in range(8)]
    per_session = 5

    def send_all(index: int) -> None:
        client, pk, session_id = sessions[index]
        for n in range(per_session):
            other = type(client)(backends[n % 2].base_url, client.token, client.user_id)
            _send(other, pk, session_id, f"fast {index}-{n}", message_id=f"m{n}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(send_all, range(len(sessions))))
    _wait_answered(backends[0], [s[2] for s in sessions])
    for index, (_client, _pk, session_id) in enumerate(sessions):
        answers = _answers(backends[0], session_id)
        assert answers == [(f"fast {index}-{n}", answer_for(f"fast {index}-{n}"), "answered")
                           for n in range(per_session)]
        with backends[0].db() as db:
            assistant = db.scalar(select(func.count()).select_from(Message).where(
                Message.session_id == session_id, Message.sender == "assistant"))
        assert assistant == per_session, "an answer was stored twice"



def test_a_delete_through_one_backend_cancels_the_turn_on_a_worker(backends):
    a, b = backends
    client, pk, session_id = _session(a)
    socket = client.socket(session_id)
    try:
        sent = _send(client, pk, session_id, "cancel me " + " ".join(f"w{i}" for i in range(60)))
        socket.wait_event("mojo_token", timeout=30)
        other = type(client)(b.base_url, client.token, client.user_id)
        other.ok("DELETE", "/user_task_execution", json={"user_task_execution_pk": pk})
        error = socket.wait_event("error", timeout=15)[0]
    finally:
        socket.close()
    assert "cancelled" in error["error"]
    assert socket.named("mojo_message") == []
    _wait_answered(a, [session_id])
    assert _answers(a, session_id)[0][2] == "failed"
    assert sent["message_pk"] == error["user_message_pk"]


def test_a_stop_sent_while_the_turn_waits_for_a_worker_stops_it(cluster, backends):
    # Before the fix a worker ignored a cancel flag raised before its job started: the turn that
    # waited for a worker (here: every worker paused) answered anyway.
    a, _b = backends
    client, pk, session_id = _session(a)
    workers = [r for r in cluster.roles if r.name.startswith("worker")]
    socket = client.socket(session_id)
    try:
        for worker in workers:
            cluster.kill(worker, signal.SIGSTOP)
        try:
            sent = _send(client, pk, session_id, "fast stop me before I start")
            assert client.ok("POST", "/user_task_execution_stop", json={"user_task_execution_pk": pk})["stopped"]
        finally:
            for worker in workers:
                cluster.kill(worker, signal.SIGCONT)
        error = socket.wait_event("error", timeout=30)[0]
    finally:
        socket.close()
    assert error["user_message_pk"] == sent["message_pk"] and error["retryable"]
    assert socket.named("mojo_message") == []
    _wait_answered(a, [session_id])
    assert _answers(a, session_id)[0][2] == "failed"
    # The stop was consumed by that turn: the same message sent again is answered.
    _send(client, pk, session_id, "fast stop me before I start", message_id=error["message_id"])
    _wait_answered(a, [session_id])
    assert _answers(a, session_id)[0][1:] == (answer_for("fast stop me before I start"), "answered")


def test_an_audio_message_is_transcribed_on_a_worker_that_ran_turns_before(cluster_llm, backends):
    # was: a worker knew only of the audio messages waiting when it ran its first job: a later
    # one was answered on its empty text and its transcription stayed "pending"
    a, _b = backends
    client, pk, session_id = _session(a)
    socket = client.socket(session_id)
    try:
        _send(client, pk, session_id, "fast first")
        socket.wait_event("mojo_message", timeout=30)
        cluster_llm.script_transcription(Transcription("fast spoken words", duration=1.0))
        sent = client.call("PUT", "/user_message", data={"session_id": session_id, "user_task_execution_pk": str(pk),
                                                          "message_id": "voice-1"},
                           files={"file": ("voice.wav", wav_bytes(1.0), "audio/wav")})
        assert sent.status_code == 200, sent.text
        transcribed = socket.wait_event("user_message_transcription", timeout=30)[0]
        answer = socket.wait_event("mojo_message", 2, timeout=30)[1]
    finally:
        socket.close()
    assert transcribed["text"] == "fast spoken words"
    assert answer["text"] == answer_for("fast spoken words")


def test_the_title_job_runs_on_a_worker(backends):
    a, _b = backends
    client, pk, session_id = _session(a)
    _send(client, pk, session_id, "fast title please")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with a.db() as db:
            row = db.get(UserTaskExecution, pk)
            if row.title_status == "done":
                break
        time.sleep(0.2)
    assert (row.title, row.summary, row.title_status) == ("A title", "A summary", "done")

def _owner_pid(live, session_id: str, timeout: float = 10.0) -> int:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with live.db() as db:
            owner = db.scalar(select(SessionRunner.owner).where(SessionRunner.session_id == session_id))
        if owner:
            return int(owner.split(":")[1])
        time.sleep(0.05)
    raise AssertionError("no worker claimed the session")


def test_a_worker_killed_mid_stream_its_turn_is_rerun_and_answered_once(cluster, backends):
    a, _b = backends
    client, pk, session_id = _session(a)
    socket = client.socket(session_id)
    text = "please write a long answer " + " ".join(f"w{i}" for i in range(30))
    try:
        sent = _send(client, pk, session_id, text)
        socket.wait_event("mojo_token", count=3, timeout=30)
        pid = _owner_pid(a, session_id)
        victim = next(r for r in cluster.roles if r.process.pid == pid)
        cluster.kill(victim)  # SIGKILL, mid-stream
        retrying = socket.wait_event("mojo_message_retrying", timeout=30)
        assert [set(r) for r in retrying] == [{"session_id", "message_pk", "user_task_execution_pk", "seq"}]
        assert retrying[0]["message_pk"] == sent["message_pk"]
        final = socket.wait_event("mojo_message", timeout=30)
        time.sleep(0.5)  # nothing else may follow
        assert [f["text"] for f in socket.named("mojo_message")] == [answer_for(text)]
        # The rerun's stream, after the retrying event, is the whole stored answer.
        assert _deltas_between(socket.events, retrying[0]["seq"], final[0]["seq"]).strip() == answer_for(text)
        assert _answers(a, session_id) == [(text, answer_for(text), "answered")]
    finally:
        socket.close()
        index = int(victim.name.removeprefix("worker")) if "victim" in locals() else None
        if index is not None:
            cluster.roles.remove(victim)
            cluster.start_worker(index)



def test_sigterm_lets_a_worker_finish_its_turn_and_hand_the_rest_back(cluster, backends):
    a, _b = backends
    client, pk, session_id = _session(a)
    texts = [f"slow {n} " + " ".join(f"w{i}" for i in range(12)) for n in range(3)]
    for n, text in enumerate(texts):
        _send(client, pk, session_id, text, message_id=f"t{n}")
    pid = _owner_pid(a, session_id)
    victim = next(r for r in cluster.roles if r.process.pid == pid)
    try:
        cluster.kill(victim, signal.SIGTERM)  # warm shutdown: the running turn ends, no retry needed
        victim.process.wait(30)
        _wait_answered(a, [session_id])
        assert _answers(a, session_id) == [(t, answer_for(t), "answered") for t in texts]
        with a.db() as db:
            retried = db.scalar(select(func.count()).select_from(SessionEvent).where(
                SessionEvent.session_id == session_id, SessionEvent.event_name == "mojo_message_retrying"))
        assert retried == 0, "a turn was cut off instead of finished"
    finally:
        cluster.roles.remove(victim)
        cluster.start_worker(int(victim.name.removeprefix("worker")))

def test_a_backend_killed_mid_stream_its_client_replays_on_the_other_exactly_once(cluster, backends):
    a, b = backends
    client, pk, session_id = _session(a)
    socket = client.socket(session_id)
    text = "a long one " + " ".join(f"w{i}" for i in range(30))
    try:
        _send(client, pk, session_id, text)
        socket.wait_event("mojo_token", count=5, timeout=30)
        victim = next(r for r in cluster.roles if r.port == int(a.base_url.rsplit(":", 1)[1]))
        cluster.kill(victim)
        before = [(n, d) for n, d in socket.events if isinstance(d, dict) and "seq" in d]
    finally:
        socket.close()
        if "victim" in locals():  # a fresh backend in its place, for the next tests
            cluster.roles.remove(victim)
            restarted = cluster.start_backend(int(victim.name.removeprefix("backend")))
            cluster.wait_serving(restarted)
            backends[0] = LiveServer(restarted.url, a.platform)
    last_seq = max(d["seq"] for _n, d in before)
    client_b = type(client)(b.base_url, client.token, client.user_id)
    again = client_b.socket(session_id, last_seq=last_seq)
    try:
        again.wait_event("mojo_message", timeout=30)
        time.sleep(0.5)
        after = [(n, d) for n, d in again.events if isinstance(d, dict) and "seq" in d]
    finally:
        again.close()
    seqs = [d["seq"] for _n, d in before + after]
    assert len(seqs) == len(set(seqs)), "an event arrived twice"
    assert all(d["seq"] > last_seq for _n, d in after)
    final = [d for n, d in after if n == "mojo_message"][0]
    assert final["text"] == answer_for(text)
    reception = [d for n, d in before if n == "user_message_reception"][0]
    assert _deltas_between(before + after, reception["seq"], final["seq"]).strip() == final["text"]
