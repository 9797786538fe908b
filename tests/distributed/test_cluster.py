"""Two backends, two workers: tokens cross processes, replay on another backend, order kept."""

from __future__ import annotations

import uuid

from tests.distributed.conftest import answer_for
from tests.integration._helpers import by_seq


def _send(client, pk: int, session_id: str, text: str, message_id: str | None = None) -> dict:  # noqa: ANN001
    return client.ok("PUT", "/user_message", json={
        "session_id": session_id, "user_task_execution_pk": pk, "text": text,
        "message_id": message_id or uuid.uuid4().hex,
    })


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
