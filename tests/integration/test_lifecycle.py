"""An execution's life outside the happy path: chat start, language, run twice, delete,
listing, title, message pages, llm_call records."""

from __future__ import annotations

from typing import Any

from mojodex_core.execution.turn import InstructTurn
from tests.integration._helpers import (
    DRAFT,
    INPUTS,
    QUESTION,
    QUESTION_TEXT,
    execution_row,
    llm_calls,
    message,
    new_execution,
    run_form,
    send,
    session_language,
)
from tests.support.scripted_llm import Reply


def test_first_chat_message_starts_the_execution(live, llm):
    client = live.new_user()
    created = client.ok("PUT", "/user_task_execution", json={"user_task_pk": client.user_task_pk(),
                                                              "platform": "mobile"})
    pk, session_id = created["user_task_execution_pk"], created["session_id"]
    assert client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})["start_date"] is None
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION))
        sent = send(client, pk, session_id, "an email to say the sync moves")
        answer = socket.wait_event("mojo_message")[0]
        names = [name for name, _ in socket.events]
    finally:
        socket.close()
    assert answer["user_message_pk"] == sent["message_pk"]
    assert names[:2] == ["user_message_reception", "user_task_execution_start"]
    start = socket.named("user_task_execution_start")
    assert start == [{"session_id": session_id, "user_task_execution_pk": pk, "seq": 2}]
    view = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
    assert view["start_date"] is not None and view["status"] == "started"
    assert llm.requests[0]["messages"][-1] == {"role": "user", "content": "an email to say the sync moves"}
    # a started execution cannot be started again from the form
    response = client.call("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk,
                                                                     "inputs": INPUTS})
    assert response.status_code == 409


def test_user_language_tag_updates_the_session_language(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    assert session_language(live, session_id) == "en"
    french = "<user_language>fr</user_language><ask_user_primary_info>À qui ?</ask_user_primary_info>"
    socket = client.socket(session_id)
    try:
        llm.script(Reply(french), Reply(QUESTION))
        send(client, pk, session_id, "un e-mail pour Anna")
        assert socket.wait_event("mojo_message")[0]["text"] == "À qui ?"
        assert session_language(live, session_id) == "fr"
        send(client, pk, session_id, "Anna")
        socket.wait_event("mojo_message", 2)
    finally:
        socket.close()
    assert 'preferred language is "fr"' in llm.requests[1]["messages"][0]["content"]


def test_llm_calls_are_recorded(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION, usage=(321, 12)), Reply(DRAFT))
        run_form(client, pk)
        socket.wait_event("mojo_message")
        send(client, pk, session_id, "Anna")
        socket.wait_event("draft_message")
    finally:
        socket.close()
    live.wait_idle()
    calls = llm_calls(live, pk)
    assert len(calls) == 2
    for call in calls:
        assert (call.label, call.model, call.status, call.attempts) == ("INSTRUCT_TASK", "gpt-4o-mini", "ok", 1)
        assert call.prompt_tokens > 0 and call.completion_tokens > 0 and call.latency_ms > 0
    assert (calls[0].prompt_tokens, calls[0].completion_tokens) == (321, 12)


def test_run_twice_is_a_conflict_once_started(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION))
        first = run_form(client, pk)
        socket.wait_event("mojo_message")
        live.wait_idle()
    finally:
        socket.close()
    for inputs in (INPUTS, {**INPUTS, "tone": "friendly"}):
        response = client.call("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk,
                                                                         "inputs": inputs})
        assert response.status_code == 409, response.text
    live.wait_idle()
    assert len(llm.requests) == 1
    assert execution_row(live, pk).json_input_values == INPUTS
    assert message(live, first["message_pk"]).status == "answered"


def test_delete_is_soft_and_hides_the_execution(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    kept_pk, _ = new_execution(client)
    client.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "production": "Hello"})
    assert client.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})["status"] == "deleted"
    assert client.call("GET", "/user_task_execution", params={"user_task_execution_pk": pk}).status_code == 404
    listed = client.ok("GET", "/user_task_execution")
    assert [e["user_task_execution_pk"] for e in listed["user_task_executions"]] == [kept_pk]
    assert listed["total"] == 1
    for method, path, kwargs in [
        ("DELETE", "/user_task_execution", {"params": {"user_task_execution_pk": pk}}),
        ("PUT", "/user_message", {"json": {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi"}}),
        ("POST", "/user_task_execution_run", {"json": {"user_task_execution_pk": pk, "inputs": INPUTS}}),
        ("GET", "/user_task_execution_produced_text", {"params": {"user_task_execution_pk": pk}}),
    ]:
        assert client.call(method, path, **kwargs).status_code == 404, (method, path)
    assert execution_row(live, pk).status == "deleted"  # the row is kept
    assert llm.requests == []


def test_a_deleted_executions_conversation_is_gone_from_messages_and_sockets(live, llm):
    """A tester deleted an execution: its routes answered 404, but GET /message still listed its conversation
    and a socket's start_session replayed its events."""
    client = live.new_user()
    pk, session_id = new_execution(client)
    llm.script(Reply("Hello there"))
    send(client, pk, session_id, "hi")
    live.wait_idle()
    assert client.ok("GET", "/message", params={"session_id": session_id})["messages"]
    client.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})
    answer = client.call("GET", "/message", params={"session_id": session_id})
    assert answer.status_code == 404 and answer.json()["error"], answer.text
    socket = client.socket()
    try:
        assert socket.start_session(session_id) == {"error": "session not found"}
        assert socket.events == []
    finally:
        socket.close()


def test_delete_during_a_turn_cancels_it(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(chunks=["word "] * 100, delay_s=0.05))
        sent = send(client, pk, session_id, "hello")
        socket.wait_event("mojo_token")
        client.ok("DELETE", "/user_task_execution", json={"user_task_execution_pk": pk})
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
    assert "cancelled" in error["error"]
    live.wait_idle()
    assert socket.named("mojo_message") == []
    assert message(live, sent["message_pk"]).status == "failed"


def test_list_is_newest_first_and_paginated(live):
    client = live.new_user()
    pks = [new_execution(client)[0] for _ in range(5)]
    newest_first = list(reversed(pks))
    seen = []
    for offset in (0, 2, 4):
        page = client.ok("GET", "/user_task_execution", params={"offset": offset, "limit": 2})
        assert (page["total"], page["offset"], page["limit"]) == (5, offset, 2)
        seen += [e["user_task_execution_pk"] for e in page["user_task_executions"]]
    assert seen == newest_first
    assert client.ok("GET", "/user_task_execution", params={"offset": 5})["user_task_executions"] == []
    # An empty parameter is an absent one (a form sends it so), as query_int reads it.
    blank = client.ok("GET", "/user_task_execution", params={"offset": "", "limit": ""})
    assert (blank["total"], blank["offset"], blank["limit"]) == (5, 0, 20)
    assert [e["user_task_execution_pk"] for e in blank["user_task_executions"]] == newest_first


def test_title_is_set(live):
    client = live.new_user()
    pk, _session = new_execution(client)
    assert client.ok("POST", "/user_task_execution_title",
                     json={"user_task_execution_pk": pk, "title": "  Sync moved  "})["title"] == "Sync moved"
    assert client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})["title"] == "Sync moved"
    listed = client.ok("GET", "/user_task_execution")["user_task_executions"]
    assert listed[0]["title"] == "Sync moved"


def test_messages_are_paginated_by_seq(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION), Reply(QUESTION), Reply(DRAFT))
        run_form(client, pk)
        socket.wait_event("mojo_message")
        send(client, pk, session_id, "Anna")
        socket.wait_event("mojo_message", 2)
        send(client, pk, session_id, "Anna Smith")
        socket.wait_event("draft_message")
    finally:
        socket.close()
    everything = client.ok("GET", "/message", params={"session_id": session_id})
    assert not everything["has_more"] and len(everything["messages"]) == 6
    assert [m["text"] for m in everything["messages"]][1] == QUESTION_TEXT
    pages, after = [], 0
    while True:
        page = client.ok("GET", "/message", params={"session_id": session_id, "after_seq": after, "limit": 4})
        pages += page["messages"]
        assert all(m["seq"] > after for m in page["messages"])
        after = page["last_seq"]
        if not page["has_more"]:
            break
    assert pages == everything["messages"]
    seqs = [m["seq"] for m in pages]
    assert seqs == sorted(set(seqs))
    empty = client.ok("GET", "/message", params={"session_id": session_id, "after_seq": seqs[-1]})
    assert (empty["messages"], empty["has_more"], empty["last_seq"]) == ([], False, seqs[-1])


def test_version_navigation_over_manual_edits(live):
    client = live.new_user()
    pk, _session = new_execution(client)
    first = client.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "production": "one",
                                                      "title": "T"})
    second = client.ok("POST", "/produced_text", json={"produced_text_pk": first["produced_text_pk"],
                                                       "production": "two"})
    assert (first["produced_text_version_index"], second["produced_text_version_index"]) == (1, 2)
    assert second["produced_text_title"] == "T"  # kept from the previous version
    for index, text in ((1, "one"), (2, "two")):
        by_execution = client.ok("GET", "/user_task_execution_produced_text",
                                 params={"user_task_execution_pk": pk, "produced_text_version_index": index})
        by_text = client.ok("GET", "/produced_text", params={"produced_text_pk": first["produced_text_pk"],
                                                             "produced_text_version_index": index})
        assert by_execution["produced_text"] == by_text["produced_text"] == text
        assert by_text["produced_text_version_count"] == 2
    missing = client.call("GET", "/user_task_execution_produced_text",
                          params={"user_task_execution_pk": pk, "produced_text_version_index": 3})
    assert missing.status_code == 404
    # both ids given, naming different executions of this user: which was meant is unknown
    other_pk, _other_session = new_execution(client)
    both = client.call("POST", "/produced_text", json={"produced_text_pk": first["produced_text_pk"],
                                                       "user_task_execution_pk": other_pk, "production": "three"})
    assert both.status_code == 400 and both.json()["field"] == "user_task_execution_pk"  # was: 200, written
    same = client.ok("POST", "/produced_text", json={"produced_text_pk": first["produced_text_pk"],
                                                     "user_task_execution_pk": pk, "production": "three"})
    assert same["produced_text_version_index"] == 3


def test_a_turn_ending_after_a_delete_does_not_bring_the_execution_back(live, llm, monkeypatch):
    client = live.new_user()
    pk, session_id = new_execution(client)
    original = InstructTurn._complete

    def deleted_meanwhile(self: InstructTurn, context: Any, reply: Any) -> None:
        # The user deletes the execution after the reply was generated, before it is stored.
        client.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})
        original(self, context, reply)

    monkeypatch.setattr(InstructTurn, "_complete", deleted_meanwhile)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(DRAFT))
        send(client, pk, session_id, "write it")
        socket.wait_for(lambda evs: any(name in ("draft_message", "error") for name, _ in evs))
        live.wait_idle()
    finally:
        socket.close()
    assert execution_row(live, pk).status == "deleted"
    assert client.call("GET", "/user_task_execution", params={"user_task_execution_pk": pk}).status_code == 404
    assert client.ok("GET", "/user_task_execution")["total"] == 0
    assert socket.named("draft_message") == []


def test_delete_fails_queued_messages_visibly(live, llm):
    # Before the fix, DELETE dropped the queued turns: their messages stayed "pending" with
    # no error event, and a restart failed them silently.
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(chunks=["word "] * 100, delay_s=0.05))
        first = send(client, pk, session_id, "hello")
        socket.wait_event("mojo_token")
        queued = send(client, pk, session_id, "and this")
        client.ok("DELETE", "/user_task_execution", json={"user_task_execution_pk": pk})
        errors = socket.wait_event("error", 2)
    finally:
        socket.close()
    live.wait_idle()
    assert {e["user_message_pk"] for e in errors} == {first["message_pk"], queued["message_pk"]}
    assert message(live, queued["message_pk"]).status == "failed"
    assert "deleted" in message(live, queued["message_pk"]).error


def test_the_execution_list_costs_the_same_queries_for_any_page_size(live):
    # Before, each listed execution cost three more queries (task, user task, version count).
    from sqlalchemy import event

    client = live.new_user()
    statements: list[str] = []

    def count(_conn, _cursor, statement, *_args):  # noqa: ANN001, ANN002
        statements.append(statement)

    def queries_for_list() -> int:
        statements.clear()
        event.listen(live.platform.engine, "before_cursor_execute", count)
        try:
            client.ok("GET", "/user_task_execution", params={"limit": 50})
        finally:
            event.remove(live.platform.engine, "before_cursor_execute", count)
        return len(statements)

    new_execution(client)
    with_one = queries_for_list()
    for _ in range(6):
        new_execution(client)
    assert client.ok("GET", "/user_task_execution")["total"] == 7
    assert queries_for_list() == with_one
