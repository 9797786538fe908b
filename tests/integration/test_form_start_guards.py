"""A form start cannot be hijacked by a chat message_id, nor its inputs changed mid-turn."""

from __future__ import annotations

from tests.integration._helpers import new_execution
from tests.support.scripted_llm import Reply

QUESTION = "<user_language>en</user_language><ask_user_primary_info>Who is it for?</ask_user_primary_info>"
INPUTS = {"email_content": "project update", "tone": "formal"}


def test_the_form_message_id_is_reserved(live, llm):
    # Before the fix, a chat message with this id was taken for the form start.
    client = live.new_user()
    pk, session_id = new_execution(client)
    response = client.call("PUT", "/user_message", json={
        "session_id": session_id, "user_task_execution_pk": pk, "text": "hi", "message_id": "form_start"})
    assert response.status_code == 400
    assert response.json()["field"] == "message_id"
    assert client.ok("GET", "/message", params={"session_id": session_id})["messages"] == []
    assert llm.requests == []


def test_other_inputs_while_the_form_turn_is_on_its_way_are_refused(live, llm):
    # Before the fix, a second run with other inputs, sent before the turn had started,
    # silently replaced the inputs of the first.
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(chunks=[QUESTION[:20], QUESTION[20:]], delay_s=0.4))
        client.ok("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk, "inputs": INPUTS})
        other = {**INPUTS, "tone": "friendly"}
        response = client.call("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk, "inputs": other})
        assert response.status_code == 409
        same = client.call("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk, "inputs": INPUTS})
        assert same.status_code in (200, 409)  # idempotent while pending, refused once answered
        socket.wait_event("mojo_message")
        execution = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
        assert execution["json_inputs_values"] == INPUTS
        assert len(llm.requests) == 1
    finally:
        socket.close()


def test_concurrent_form_starts_never_mix_their_inputs(live, llm):
    # Before the fix, two racing starts with different inputs both got 200: one's inputs were
    # stored while the other's text became the form message.
    from concurrent.futures import ThreadPoolExecutor

    llm.responder = lambda _request: Reply(QUESTION)
    for _ in range(5):
        client = live.new_user()
        pk, session_id = new_execution(client)
        tones = ["formal", "friendly"] * 3
        with ThreadPoolExecutor(6) as pool:
            responses = list(pool.map(
                lambda tone, client=client, pk=pk: client.call("POST", "/user_task_execution_run", json={
                    "user_task_execution_pk": pk, "inputs": {**INPUTS, "tone": tone}}),
                tones,
            ))
        won = {tone for tone, r in zip(tones, responses, strict=True) if r.status_code == 200}
        assert len(won) == 1, [(t, r.status_code) for t, r in zip(tones, responses, strict=True)]
        assert {r.status_code for r in responses} <= {200, 409}
        live.wait_idle()
        stored = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
        assert stored["json_inputs_values"]["tone"] in won
        form = client.ok("GET", "/message", params={"session_id": session_id})["messages"][0]
        assert form["event_name"] == "form_input" and stored["json_inputs_values"]["tone"] in form["text"]


def test_the_form_message_reads_with_the_users_own_labels(live, llm):
    # Before, the message the user sees in the conversation used the labels written for the LLM.
    client = live.new_user()
    pk, session_id = new_execution(client)
    llm.script(Reply(QUESTION))
    client.ok("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk, "inputs": INPUTS})
    live.wait_idle()
    form = client.ok("GET", "/message", params={"session_id": session_id})["messages"][0]
    assert "What is the email about?" in form["text"] and "project update" in form["text"]
    assert "What the email is about" in llm.requests[0]["messages"][0]["content"]  # the prompt keeps its own
