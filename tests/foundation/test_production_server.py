"""`mojodex serve` as production runs it (gunicorn's gevent worker), driven over HTTP and Socket.IO.

The rest of the suite serves the platform with werkzeug's threads; here every request, socket
and turn is a greenlet of one thread, so what one of them waits on must not hold the others.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import pytest

from backend.gevent_worker import WORKER_CLASS
from bench._clients import new_session, run_turn
from bench._hosts import QUESTION_CHUNKS, QUESTION_TEXT
from bench._production import ProductionServer
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.migrate import upgrade
from mojodex_core.execution.title_summary import unfinished_jobs
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from tests.support.live import TEST_TASK
from tests.support.scripted_llm import Hang, Reply, ScriptedLLMServer, asks_structured

HANG_S = 60.0


@pytest.fixture
def served(tmp_path):
    llm = ScriptedLLMServer().start()
    hung, title_hung = threading.Event(), threading.Event()
    titles = {"hang": False}

    def respond(body):  # noqa: ANN001, ANN202
        if asks_structured(body):  # the title/summary job's call
            if titles["hang"]:
                title_hung.set()
                return Hang(seconds=HANG_S, after_headers=True)
            return Reply(json={"title": "A title", "summary": "A summary."})
        if "please hang" in (body["messages"][-1].get("content") or ""):
            hung.set()
            return Hang(seconds=HANG_S, after_headers=True)
        return Reply(chunks=list(QUESTION_CHUNKS))

    llm.responder = respond
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    database_url = f"sqlite:///{tmp_path}/serve.db"
    upgrade(database_url)
    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    with transaction(factory) as db:
        store_spec(db, validate_spec(TEST_TASK), "upsert")
    server = ProductionServer(database_url, llm.base_url, var_dir, start_timeout_s=90)
    sessions = []
    try:
        yield server, factory, sessions, hung, (titles, title_hung)
    finally:
        for session in sessions:
            session.socket.close()
        server.stop()
        llm.stop()
        engine.dispose()


def test_a_hung_llm_stream_holds_only_its_own_session_and_stop_ends_it(served):
    server, factory, sessions, hung, _titles = served
    stalled, other = new_session(1, factory, server.base_url), new_session(2, factory, server.base_url)
    sessions += [stalled, other]
    # The worker and the Socket.IO mode are gevent's, patched before the app was loaded.
    started = server.log_tail(20000)
    assert f"Using worker: {WORKER_CLASS}" in started, started[-2000:]
    assert "concurrency=gevent" in started, started[-2000:]
    assert "MonkeyPatchWarning" not in started

    message_id = uuid.uuid4().hex
    put = stalled.client.call("PUT", "/user_message", json={
        "session_id": stalled.session_id, "user_task_execution_pk": stalled.pk,
        "text": "please hang", "message_id": message_id})
    assert put.status_code == 200, put.text
    message_pk = put.json()["message_pk"]
    assert hung.wait(20), "the stalled turn never reached the LLM"

    # The stalled stream waits on its socket; the other session's turns go on meanwhile.
    for _ in range(3):
        result = run_turn(other, "question", QUESTION_TEXT, timeout_s=20)
        assert result.ok and result.content_ok, (result.error, result.mismatch, server.log_tail())

    stop = stalled.client.call("POST", "/user_task_execution_stop", json={"user_task_execution_pk": stalled.pk})
    assert stop.status_code == 200, stop.text

    def failed(events):  # noqa: ANN001, ANN202
        return [data for name, data in events
                if name == "error" and isinstance(data, dict) and data.get("user_message_pk") == message_pk]

    errors = failed(stalled.socket.wait_for(failed, timeout=15))  # well before the LLM's hang would end it
    # The stop's own error, not the first-token timeout's (30 s) on a slow machine.
    assert "cancelled" in str(errors[0].get("error")), errors
    # The session answers again at once, with the stalled message's stream given up.
    result = run_turn(stalled, "question", QUESTION_TEXT, timeout_s=20)
    assert result.ok and result.content_ok, (result.error, result.mismatch, server.log_tail())
    assert "Traceback" not in server.log_tail(200000)


def test_ctrl_c_stops_the_server_at_once_and_without_a_traceback(served):
    # was: gunicorn's gevent worker exits through sys.exit(0) in a greenlet of its own, which
    # gevent reports as a failure: every Ctrl-C of `make run` ended the log with a traceback
    server, factory, sessions, _hung, _titles = served
    session = new_session(1, factory, server.base_url)
    sessions.append(session)
    turn = run_turn(session, "question", QUESTION_TEXT, 30)
    assert turn.ok and turn.content_ok, turn.error or turn.mismatch  # a turn ran: its pool is alive
    process = server.processes[0]
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends (to the whole group)
    assert process.wait(15) == 0
    assert time.monotonic() - started < 10
    log = server.log_tail(20000)
    assert "Traceback" not in log and "failed with SystemExit" not in log, log[-3000:]
    assert "Shutting down: Master" in log


def test_ctrl_c_does_not_wait_for_a_title_job_which_the_next_start_runs(served):
    # was: the interpreter waited for the job's thread, blocked on the LLM (a title on the local
    # model takes tens of seconds): the exit took as long, or gunicorn's master killed the worker
    # after 30 s ("Perhaps out of memory?"); had the job been given up, its title stayed failed.
    server, factory, sessions, _hung, (titles, title_hung) = served
    titles["hang"] = True
    session = new_session(1, factory, server.base_url)
    sessions.append(session)
    turn = run_turn(session, "question", QUESTION_TEXT, 30)  # the first input: the title job starts
    assert turn.ok and turn.content_ok, turn.error or turn.mismatch
    assert title_hung.wait(20), "the title job never reached the LLM"
    process = server.processes[0]
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(15) == 0
    assert time.monotonic() - started < 10
    log = server.log_tail(20000)
    assert "Traceback" not in log and "Perhaps out of memory" not in log, log[-3000:]
    assert "interrupted by shutdown" in log, log[-3000:]
    with factory() as db:  # still claimed ("pending"): what the next start submits again
        assert [job.user_task_execution_pk for job in unfinished_jobs(db)] == [session.pk]
