"""When the LLM misbehaves: rate limits, failures and retries by message_id, timeouts,
no LLM at all, a prompt that does not render."""

from __future__ import annotations

import pytest

import mojodex_core.execution.turn as turn_module
from mojodex_core.execution.prompt import PromptError
from tests.integration._helpers import (
    QUESTION,
    QUESTION_TEXT,
    llm_calls,
    message,
    messages,
    new_execution,
    run_form,
    send,
)
from tests.integration.conftest import TIGHT_TURN_TIMEOUT_S
from tests.support.scripted_llm import Hang, HTTPError, Reply


def test_rate_limited_then_answered(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(HTTPError(429), Reply(QUESTION))
        run_form(client, pk)
        assert socket.wait_event("mojo_message")[0]["text"] == QUESTION_TEXT
        assert socket.named("error") == []
    finally:
        socket.close()
    live.wait_idle()
    assert len(llm.requests) == 2
    [call] = llm_calls(live, pk)
    assert (call.status, call.attempts) == ("ok", 2)


def test_failure_then_retry_by_message_id(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(HTTPError(500), HTTPError(500), HTTPError(500))  # the first attempt and 2 retries
        first = send(client, pk, session_id, "hello", message_id="m-1")
        error = socket.wait_event("error")[0]
        assert "unavailable" in error["error"] and "500" in error["error"]
        assert error["user_message_pk"] == first["message_pk"] and error["message_id"] == "m-1"
        assert error["retryable"] is True
        live.wait_idle()
        user_message = message(live, first["message_pk"])
        assert (user_message.status, user_message.text) == ("failed", "hello")
        stored_error = message(live, error["message_pk"])
        assert (stored_error.sender, stored_error.event_name, stored_error.text) == ("system", "error", error["error"])
        assert len(llm.requests) == 3

        llm.script(Reply(QUESTION))
        retried = send(client, pk, session_id, "hello", message_id="m-1")
        assert retried["message_pk"] == first["message_pk"]
        answer = socket.wait_event("mojo_message")[0]
        assert answer["user_message_pk"] == first["message_pk"]
        live.wait_idle()
        assert message(live, first["message_pk"]).status == "answered"

        again = send(client, pk, session_id, "hello", message_id="m-1")
        assert (again["message_pk"], again["status"]) == (first["message_pk"], "answered")
        live.wait_idle()
        assert len(llm.requests) == 4  # no second generation
        assert len(socket.named("mojo_message")) == 1
    finally:
        socket.close()
    assert [(c.status, c.attempts) for c in llm_calls(live, pk)] == [("error", 3), ("ok", 1)]
    rows = messages(live, session_id)
    assert [(m.sender, m.event_name) for m in rows] == [
        ("user", "user_message"), ("system", "error"), ("assistant", "mojo_message")
    ]
    listed = client.ok("GET", "/message", params={"session_id": session_id})["messages"]
    assert [m["status"] for m in listed] == ["answered", "error", "final"]


@pytest.mark.parametrize("after_headers", [False, True], ids=["no_answer", "stalled_stream"])
def test_provider_timeout_is_a_clear_error(tight, llm, after_headers: bool):
    client = tight.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        # longer than the 0.3 s read timeout, on the first attempt and on the retry
        llm.script(Hang(seconds=5, after_headers=after_headers), Hang(seconds=5, after_headers=after_headers))
        send(client, pk, session_id, "hello")
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
        llm.reset()  # release the hanging handlers
    assert "did not answer in time" in error["error"]
    assert socket.named("mojo_message") == []


def test_turn_watchdog_ends_a_reply_that_streams_too_long(tight, llm):
    client = tight.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        # Each gap (0.1 s) is within the provider's read timeout; the whole is not within the turn's.
        llm.script(Reply(chunks=["word "] * 40, delay_s=0.1))
        sent = send(client, pk, session_id, "hello")
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
        llm.reset()
    assert "took too long" in error["error"] and f"{TIGHT_TURN_TIMEOUT_S:.0f} s" in error["error"]
    tight.wait_idle()
    assert message(tight, sent["message_pk"]).status == "failed"


def test_no_llm_configured_is_an_error_event(no_llm, llm):
    client = no_llm.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        sent = run_form(client, pk)
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
    assert error["error"].startswith("No LLM configured")
    no_llm.wait_idle()
    assert message(no_llm, sent["message_pk"]).status == "failed"
    assert llm.requests == []


def test_a_prompt_that_fails_to_render_fails_the_turn_visibly(live, llm, monkeypatch: pytest.MonkeyPatch):
    real_render = turn_module.render

    def broken_render(template: str, **context):
        if template == "instruct_task.jinja2":
            raise PromptError("prompt instruct_task.jinja2 failed to render: 'task' is undefined")
        return real_render(template, **context)

    monkeypatch.setattr(turn_module, "render", broken_render)
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        sent = send(client, pk, session_id, "hello", message_id="p-1")
        error = socket.wait_event("error")[0]
        live.wait_idle()
        assert message(live, sent["message_pk"]).status == "failed"
        assert llm.requests == []

        monkeypatch.setattr(turn_module, "render", real_render)
        llm.script(Reply(QUESTION))
        assert send(client, pk, session_id, "hello", message_id="p-1")["message_pk"] == sent["message_pk"]
        assert socket.wait_event("mojo_message")[0]["text"] == QUESTION_TEXT
    finally:
        socket.close()
    assert error["user_message_pk"] == sent["message_pk"] and "template failed to render" in error["error"]


def test_a_failed_form_start_runs_again_when_resubmitted(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(HTTPError(503), HTTPError(503), HTTPError(503), Reply(QUESTION))
        first = run_form(client, pk)
        socket.wait_event("error")
        live.wait_idle()
        again = run_form(client, pk)
        answer = socket.wait_event("mojo_message")[0]
    finally:
        socket.close()
    assert again["message_pk"] == first["message_pk"] == answer["user_message_pk"]
    assert len([m for m in messages(live, session_id) if m.sender == "user"]) == 1


def test_an_answer_with_nothing_to_show_is_an_error(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply("<user_language>en</user_language>"))
        sent = send(client, pk, session_id, "hello")
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
    assert "empty answer" in error["error"] and error["user_message_pk"] == sent["message_pk"]


def test_a_draft_with_an_empty_body_is_an_error_and_no_version(live, llm):
    """Seen by a user: a draft_message with produced_text '' was stored as a version and completed the task."""
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply("<execution><title>Minutes</title><draft>  </draft></execution>"))
        send(client, pk, session_id, "write the minutes")
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
    assert "empty draft" in error["error"] and error["retryable"] is True
    assert not socket.named("draft_message")
    assert client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})["status"] != "completed"


def test_a_failure_while_announcing_the_start_still_fails_the_message(live, llm, monkeypatch):
    # Before the fix, an error publishing user_task_execution_start (after the message was
    # committed as "processing") escaped the turn: no error event, the message stuck forever.
    client = live.new_user()
    pk, session_id = new_execution(client)
    events = live.platform.events
    real_publish = events.publish

    def failing_publish(sid, name, payload, **kwargs):  # noqa: ANN001, ANN003
        if name == "user_task_execution_start":
            raise RuntimeError("database is locked")
        return real_publish(sid, name, payload, **kwargs)

    monkeypatch.setattr(events, "publish", failing_publish)
    socket = client.socket(session_id)
    try:
        sent = send(client, pk, session_id, "hello")
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
    live.wait_idle()
    assert error["user_message_pk"] == sent["message_pk"]
    assert message(live, sent["message_pk"]).status == "failed"
    assert llm.requests == []
