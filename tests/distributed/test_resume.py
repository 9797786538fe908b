"""At start-up the distributed platform resumes what a stopped process left unfinished, once:
title jobs claimed but never finished, POS ticket deliveries and audio files no message names (the
beat sends ``mojodex.resume`` when it starts; a worker runs it)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mojodex_core.audio.store import AudioStore
from mojodex_core.db.models import Message, OrderTicket, UserTaskExecution
from mojodex_core.order_runtime.tickets import IDEMPOTENCY_HEADER
from tests.distributed.conftest import answer_for
from tests.distributed.test_cluster import _answers, _send, _session


@pytest.fixture
def pos() -> Iterator[tuple[str, list[str]]]:
    """A POS webhook on 127.0.0.1: records the Idempotency-Key of every delivery it accepts."""
    received: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append(self.headers.get(IDEMPOTENCY_HEADER))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/tickets", received
    finally:
        server.shutdown()
        server.server_close()


def _wait(predicate, timeout: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("not resumed in time")


def test_a_beat_start_resumes_unfinished_title_jobs_and_ticket_deliveries(cluster, backends, pos):
    url, received = pos
    live = backends[0]
    client, pk, session_id = _session(live)
    _send(client, pk, session_id, "resume me")
    _wait(lambda: _answers(live, session_id) == [("resume me", answer_for("resume me"), "answered")])
    key = uuid.uuid4().hex
    # What a worker killed mid-job leaves: a title job claimed (pending) and a ticket not delivered.
    with live.db() as db:
        _wait(lambda: db.get(UserTaskExecution, pk, populate_existing=True).title_status == "done")
        execution = db.get(UserTaskExecution, pk)
        execution.title_status, execution.title, execution.summary = "pending", None, None
        db.add(OrderTicket(user_task_execution_fk=pk, ticket={"text": "1 x pizza"}, lines=[], total=9.5,
                           idempotency_key=key, webhook_url=url, delivery_status="pending"))
    beat = next(r for r in cluster.roles if r.name == "beat" and r.alive())
    cluster.kill(beat)
    cluster.start_beat()

    def resumed() -> bool:
        with live.db() as db:
            execution = db.get(UserTaskExecution, pk)
            ticket = db.query(OrderTicket).filter_by(idempotency_key=key).one()
            return execution.title_status == "done" and ticket.delivery_status == "delivered"

    _wait(resumed)
    with live.db() as db:
        assert db.get(UserTaskExecution, pk).title == "A title"
        ticket = db.query(OrderTicket).filter_by(idempotency_key=key).one()
        assert (ticket.delivery_attempts, ticket.delivered_at is not None) == (1, True)
    time.sleep(1.0)  # resumed once: no second delivery comes later
    assert received == [key]


def test_a_beat_start_deletes_the_audio_files_no_message_names_once_old(cluster, backends):
    # The cluster's processes share one var dir (as backends and workers share the uploads' folder).
    live = backends[0]
    client, pk, session_id = _session(live)
    store = AudioStore(Path(cluster.env["MOJODEX_VAR_DIR"]) / "audio")
    named, orphan, fresh = (AudioStore.new_name(session_id, m, "wav") for m in ("named", "orphan", "fresh"))
    for name in (named, orphan, fresh):
        store.save(name, b"RIFF....WAVE")
    staged = store.stage(b"RIFF").name
    with live.db() as db:
        db.add(Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id="named",
                       event_name="user_message", text="spoken", status="answered",
                       data={"audio": {"file": named, "mime": "audio/wav", "transcription": "done"}}))
    old = time.time() - 2 * 3600
    for name in (named, orphan, staged):
        os.utime(store.directory / name, (old, old))
    beat = next(r for r in cluster.roles if r.name == "beat" and r.alive())
    cluster.kill(beat)
    cluster.start_beat()
    _wait(lambda: not (store.directory / orphan).exists() and not (store.directory / staged).exists())
    assert (store.directory / named).exists() and (store.directory / fresh).exists()
