"""The instruct lifecycle end to end on a live server: REST, Socket.IO, scripted LLM."""

from __future__ import annotations

from tests.support.scripted_llm import Reply

QUESTION = (
    "<user_language>en</user_language>\n<missing_recipient>no recipient</missing_recipient>\n"
    "<missing_primary_info>recipient</missing_primary_info>\n"
    "<ask_user_primary_info>Who should receive this email?</ask_user_primary_info>"
)
DRAFT_1 = (
    "<user_language>en</user_language>\n<execution>\n<title>Project update</title>\n"
    "<draft>Hi Anna,\n\nThe project is on track.\n\nBest,\nSam</draft>\n</execution>"
)
DRAFT_2 = (
    "<user_language>en</user_language>\n<execution>\n<title>Project update</title>\n"
    "<draft>Hi Anna, all good. Sam</draft>\n</execution>"
)


def test_form_start_question_answer_draft_edit_versions(live, llm):
    client = live.new_user()
    execution = client.new_execution()
    assert {i["input_name"] for i in execution["json_input"]} == {"email_content", "tone"}
    pk, session_id = execution["user_task_execution_pk"], execution["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION), Reply(DRAFT_1), Reply(DRAFT_2))
        client.ok("POST", "/user_task_execution_run",
                  json={"user_task_execution_pk": pk, "inputs": {"email_content": "project update", "tone": "formal"}})
        question = socket.wait_event("mojo_message")[0]
        assert question["text"] == "Who should receive this email?"
        tokens = "".join(d["delta"] for d in socket.named("mojo_token"))
        assert tokens == "Who should receive this email?"

        client.ok("PUT", "/user_message",
                  json={"session_id": session_id, "user_task_execution_pk": pk, "text": "Anna", "message_id": "m1"})
        draft = socket.wait_event("draft_message")[0]
        assert draft["produced_text_title"] == "Project update"
        assert draft["produced_text"].startswith("Hi Anna,")
        assert draft["produced_text_version_index"] == 1

        client.ok("PUT", "/user_message", json={"session_id": session_id, "user_task_execution_pk": pk,
                                                "text": "make it shorter", "message_id": "m2"})
        second = socket.wait_event("draft_message", 2)[1]
        assert second["produced_text_version_index"] == 2
        assert second["produced_text_pk"] == draft["produced_text_pk"]

        edited = client.ok("POST", "/produced_text", json={"produced_text_pk": draft["produced_text_pk"],
                                                           "production": "Hi Anna. Sam"})
        assert edited["produced_text_version_index"] == 3
        assert edited["origin"] == "manual_edit"
        for index, expected in ((1, "The project is on track."), (2, "all good"), (3, "Hi Anna. Sam")):
            version = client.ok("GET", "/user_task_execution_produced_text",
                                params={"user_task_execution_pk": pk, "produced_text_version_index": index})
            assert expected in version["produced_text"]
        latest = client.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": pk})
        assert latest["produced_text_version_index"] == 3

        messages = client.ok("GET", "/message", params={"session_id": session_id})["messages"]
        assert [m["event_name"] for m in messages] == [
            "form_input", "mojo_message", "user_message", "draft_message", "user_message", "draft_message"
        ]
        seqs = [m["seq"] for m in messages]
        assert seqs == sorted(seqs)
        # what the LLM saw on the third call: the whole conversation, with the latest draft in the prompt
        third = llm.requests[2]["messages"]
        assert third[0]["role"] == "system" and "Hi Anna," in third[0]["content"]
        assert third[-1] == {"role": "user", "content": "make it shorter"}
    finally:
        socket.close()
