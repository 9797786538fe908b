"""A message accepted and stored whose job the runner then refuses (shut down, no thread to start): the
route answers 503 with a Retry-After and the message fails visibly, retryable; sent again with its
message_id, it runs. Before, the route answered 500 and the message stayed pending, answered as stored
(pending, never run) when sent again, until the process restarted."""

from __future__ import annotations

from sqlalchemy import update

from mojodex_core.db.models import Message
from mojodex_core.execution.failures import NOT_STARTED
from mojodex_core.execution.jobs import JobRefused
from tests.integration._helpers import INPUTS, QUESTION, QUESTION_TEXT, message, messages, new_execution, send
from tests.support.scripted_llm import Reply


def _put(client, pk: int, session_id: str, text: str, message_id: str):  # noqa: ANN001, ANN202
    return client.call("PUT", "/user_message", json={
        "session_id": session_id, "user_task_execution_pk": pk, "text": text, "message_id": message_id})


def test_a_message_is_answered_when_the_runner_takes_it(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    llm.script(Reply(QUESTION))
    accepted = send(client, pk, session_id, "hello", message_id="m-ok")
    assert accepted["status"] == "pending"
    live.wait_idle()
    assert message(live, accepted["message_pk"]).status == "answered"


def test_a_refused_message_answers_503_fails_visibly_and_runs_when_sent_again(live, llm, refuse):
    refuse(live)
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        refused = _put(client, pk, session_id, "hello", "m-1")
        assert refused.status_code == 503, refused.text
        assert refused.json() == {"error": NOT_STARTED}
        assert refused.headers["Retry-After"] == "5"
        error = socket.wait_event("error")[0]
        assert (error["error"], error["message_id"], error["retryable"]) == (NOT_STARTED, "m-1", True)
        stored = message(live, error["user_message_pk"])
        assert (stored.status, stored.error, stored.text) == ("failed", NOT_STARTED, "hello")

        refuse.undo()  # the runner takes jobs again (another process, or this one restarted)
        llm.script(Reply(QUESTION))
        retried = send(client, pk, session_id, "hello", message_id="m-1")
        assert (retried["message_pk"], retried["status"]) == (stored.message_pk, "pending")
        assert socket.wait_event("mojo_message")[0]["text"] == QUESTION_TEXT
    finally:
        socket.close()
    live.wait_idle()
    assert message(live, stored.message_pk).status == "answered"
    assert len(llm.requests) == 1


def test_a_refused_form_start_runs_when_posted_again(live, llm, refuse):
    refuse(live)
    client = live.new_user()
    pk, session_id = new_execution(client)
    body = {"user_task_execution_pk": pk, "inputs": INPUTS}
    refused = client.call("POST", "/user_task_execution_run", json=body)
    assert refused.status_code == 503, refused.text
    assert refused.json() == {"error": NOT_STARTED}
    refuse.undo()
    llm.script(Reply(QUESTION))
    started = client.ok("POST", "/user_task_execution_run", json=body)
    live.wait_idle()
    assert message(live, started["message_pk"]).status == "answered"


def test_a_refused_home_chat_message_runs_when_sent_again(live, llm, refuse):
    refuse(live)
    client = live.new_user()
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    body = {"origin": "home_chat", "session_id": session_id, "text": "hello", "message_id": "h-1"}
    refused = client.call("PUT", "/user_message", json=body)
    assert refused.status_code == 503, refused.text
    (stored,) = [m for m in messages(live, session_id) if m.sender == "user"]
    assert (stored.status, stored.error) == ("failed", NOT_STARTED)
    refuse.undo()
    llm.script(Reply("<user_language>en</user_language>Hello! How can I help?"))
    again = client.ok("PUT", "/user_message", json=body)
    assert (again["message_pk"], again["status"]) == (stored.message_pk, "pending")
    live.wait_idle()
    assert message(live, stored.message_pk).status == "answered"


def test_a_refused_message_a_run_claimed_meanwhile_is_answered_as_accepted(live, monkeypatch):
    # was: the route answered 503 whatever became of the message; one another process's start-up resume
    # claimed between the store and the refusal is being answered, so the route says so (200, pending)
    client = live.new_user()
    pk, session_id = new_execution(client)

    def claimed_then_refused(job) -> None:  # noqa: ANN001
        with live.db() as db:
            db.execute(update(Message).where(Message.message_pk == job.message_pk).values(status="processing"))
        raise JobRefused("the runner refused it")

    monkeypatch.setattr(live.platform.runner, "submit", claimed_then_refused)
    answer = _put(client, pk, session_id, "hello", "m-claimed")
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "pending"
    try:
        stored = message(live, answer.json()["message_pk"])
        assert (stored.status, stored.error) == ("processing", None)
        assert [m.event_name for m in messages(live, session_id) if m.sender == "system"] == []
    finally:  # nothing runs it here: left unanswered, no other test's resume must take it
        with live.db() as db:
            db.execute(update(Message).where(Message.session_id == session_id).values(status="answered"))
