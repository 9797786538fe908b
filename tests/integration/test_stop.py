"""POST /user_task_execution_stop: the web app's stop button cancels the running turn."""

from __future__ import annotations

from tests.integration._helpers import new_execution
from tests.support.scripted_llm import Reply


def test_stop_fails_the_running_turn_with_a_retryable_error(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(chunks=[f"w{i} " for i in range(100)], delay_s=0.05))
        client.ok("PUT", "/user_message", json={"session_id": session_id, "user_task_execution_pk": pk,
                                                 "text": "hi", "message_id": "m-stop"})
        socket.wait_event("mojo_token")
        assert client.ok("POST", "/user_task_execution_stop", json={"user_task_execution_pk": pk})["stopped"]
        error = socket.wait_event("error")[0]
        assert error["retryable"] and error["message_id"] == "m-stop"
        assert not socket.named("mojo_message")
    finally:
        socket.close()


def test_stop_refuses_another_users_execution_and_bad_input(live):
    owner, intruder = live.new_user(), live.new_user()
    pk, _session_id = new_execution(owner)
    response = intruder.call("POST", "/user_task_execution_stop", json={"user_task_execution_pk": pk})
    assert response.status_code == 404
    bad = owner.call("POST", "/user_task_execution_stop", json={})
    assert bad.status_code == 400 and bad.json()["field"] == "user_task_execution_pk"
    # Nothing running: a stop is harmless.
    assert owner.ok("POST", "/user_task_execution_stop", json={"user_task_execution_pk": pk})["stopped"]
