"""Supervision of the embedded local model server, with a stand-in server that dies the ways a
broken llama.cpp build does (tests/support/fake_model_server.py): refused at start-up when it
cannot answer a completion, restarted once when it dies later, and the user's error naming the
cause when it keeps dying."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import uuid

import pytest

from backend.local_llm import LocalModelError, LocalModelServer, _free_port
from tests.support.live import live_settings, serving


def fake_server(tmp_path, *flags: str, watch: bool = False, **kwargs) -> LocalModelServer:  # noqa: ANN001
    port = _free_port()
    command = [sys.executable, "-m", "tests.support.fake_model_server", "--port", str(port), *flags]
    return LocalModelServer(
        port=port, command=command, log_file=tmp_path / "model.log", check_timeout_s=10, watch=watch, **kwargs
    )


def kill(server: LocalModelServer) -> None:
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=10)


def test_a_server_that_exits_at_start_is_refused_with_its_status_and_output(tmp_path):  # noqa: ANN001
    with pytest.raises(LocalModelError) as failure:
        fake_server(tmp_path, "--exit-at-start", "3").start(wait_s=20)
    assert "exit status 3" in str(failure.value)
    assert "cannot load the model file" in str(failure.value)


def test_a_server_that_crashes_on_its_first_completion_is_refused(tmp_path):  # noqa: ANN001
    # It lists its models (the old start-up check passed here), then dies on the first completion.
    server = fake_server(tmp_path, "--crash-on-completion")
    with pytest.raises(LocalModelError) as failure:
        server.start(wait_s=20)
    assert "SIGSEGV" in str(failure.value), str(failure.value)
    assert "crashing on a completion" in str(failure.value)
    assert not server.alive()


def test_a_server_that_dies_in_the_middle_of_its_first_answer_is_refused(tmp_path):  # noqa: ANN001
    # Headers sent, then SIGSEGV: the client sees an incomplete body, not a refused connection.
    with pytest.raises(LocalModelError) as failure:
        fake_server(tmp_path, "--crash-mid-answer").start(wait_s=20)
    assert "SIGSEGV" in str(failure.value), str(failure.value)


def test_a_foreign_server_on_the_port_is_not_taken_for_the_model(tmp_path):  # noqa: ANN001
    # Our server cannot bind the port (another one holds it): it must not be mistaken for ours.
    import http.server
    import threading

    foreign = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    try:
        port = foreign.server_address[1]
        command = [sys.executable, "-m", "tests.support.fake_model_server", "--port", str(port)]
        server = LocalModelServer(port=port, command=command, log_file=tmp_path / "m.log", watch=False)
        with pytest.raises(LocalModelError) as failure:
            server.start(wait_s=20)
        assert "exit status 1" in str(failure.value)  # it could not bind, and says so
    finally:
        foreign.shutdown()


def test_a_model_like_server_of_another_process_is_not_taken_for_ours(tmp_path):  # noqa: ANN001
    # The port chosen for our server is answered by another process that lists the same model and
    # answers completions (another checkout's model, a test's stand-in) while ours has not bound it
    # yet: that used to pass the start-up check (a flaky "DID NOT RAISE" under load).
    import subprocess

    port = _free_port()
    other = subprocess.Popen([sys.executable, "-m", "tests.support.fake_model_server", "--port", str(port)])
    try:
        ours = LocalModelServer(port=port, command=["sleep", "30"], log_file=tmp_path / "m.log", watch=False)
        with pytest.raises(LocalModelError) as failure:
            ours.start(wait_s=20)
        assert "another process" in str(failure.value)
        assert not ours.alive()
    finally:
        other.kill()
        other.wait(timeout=10)


def _turn(live, text: str = "Hello") -> tuple[str, dict]:  # noqa: ANN001
    client = live.new_user()
    execution = client.new_execution()
    socket = client.socket(execution["session_id"])
    try:
        client.ok("PUT", "/user_message", json={
            "session_id": execution["session_id"], "user_task_execution_pk": execution["user_task_execution_pk"],
            "message_id": uuid.uuid4().hex, "text": text,
        })
        events = socket.wait_for(lambda evs: any(e in ("mojo_message", "draft_message", "error") for e, _ in evs),
                                 timeout=30)
        return next((e, d) for e, d in events if e in ("mojo_message", "draft_message", "error"))
    finally:
        socket.close()


@pytest.fixture
def supervised(tmp_path, database_url):  # noqa: ANN001, ANN201
    server = fake_server(tmp_path).start(wait_s=20)
    settings = live_settings(database_url, server.base_url)
    try:
        with serving(settings, local_model=server) as live:
            yield live, server
    finally:
        server.stop()


def test_a_dead_server_is_restarted_once_and_the_turn_retried(supervised, caplog):  # noqa: ANN001
    live, server = supervised
    assert _turn(live)[0] == "mojo_message"
    kill(server)
    assert live.admin().get(live.base_url + "/health").json()["llm"].startswith("error: local model server")
    with caplog.at_level(logging.ERROR, logger="mojodex.local_llm"):
        name, payload = _turn(live)
    assert name == "mojo_message", payload
    assert "fake model" in payload["text"].lower() or payload["text"].strip()
    assert server.restarts == 1 and server.alive()
    died = [r.getMessage() for r in caplog.records if "exited with" in r.getMessage()]
    assert died and "SIGKILL" in died[0] and "listening on" in died[0]  # exit status and last output lines
    health = live.admin().get(live.base_url + "/health")
    assert health.status_code == 200 and health.json()["llm"] == "ok"


def test_a_server_that_keeps_dying_gives_the_user_the_cause(supervised):  # noqa: ANN001
    live, server = supervised
    kill(server)
    assert _turn(live)[0] == "mojo_message"  # restarted once
    kill(server)
    name, payload = _turn(live)
    assert name == "error"
    assert "local model server stopped" in payload["error"] and "SIGKILL" in payload["error"], payload
    assert "restarted once" in payload["error"]
    health = live.admin().get(live.base_url + "/health")
    assert health.status_code == 503
    assert "SIGKILL" in health.json()["llm"]


def test_the_watcher_restarts_a_dead_server_before_any_turn(tmp_path, caplog):  # noqa: ANN001
    server = fake_server(tmp_path, watch=True).start(wait_s=20)
    try:
        with caplog.at_level(logging.WARNING, logger="mojodex.local_llm"):
            kill(server)
            deadline = time.monotonic() + 20
            while not (server.alive() and server.restarts == 1) and time.monotonic() < deadline:
                time.sleep(0.1)
        assert server.alive() and server.restarts == 1
        assert any("restarted" in r.getMessage() for r in caplog.records)
        assert server.status() == "ok"
    finally:
        server.stop()


def test_without_a_local_model_the_user_is_told_why(database_url):  # noqa: ANN001
    reason = "the local model is not installed (run `make local-llm`)"
    with serving(live_settings(database_url, None), no_llm_reason=reason) as live:
        name, payload = _turn(live)
    assert name == "error"
    assert payload["error"].startswith(f"No LLM configured ({reason})"), payload
