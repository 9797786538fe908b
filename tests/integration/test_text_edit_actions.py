"""Text edit actions on a live server: listed per text type, streamed, idempotent, owned, failing cleanly."""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import func, select

from mojodex_core.db.models import ProducedTextVersion
from tests.integration._edits import SHIPPED_ACTIONS, edited, load_edit_actions
from tests.integration._helpers import BODY, DRAFT, TITLE, message, new_execution, run_form, send, turn_deltas
from tests.support.live import live_settings, serving
from tests.support.row_locks import row_naming_the_execution
from tests.support.scripted_llm import HTTPError, Reply


@pytest.fixture(scope="module", autouse=True)
def _actions(live_server):
    load_edit_actions(live_server)


def drafted(live, llm, client):
    """A new execution with one draft; returns (pk, session_id, socket, draft event)."""
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    llm.script(Reply(DRAFT))
    run_form(client, pk)
    return pk, session_id, socket, socket.wait_event("draft_message")[0]


def actions_of(client, version_pk: int) -> list[dict]:
    return client.ok("GET", "/text_edit_action", params={"produced_text_version_pk": version_pk})["text_edit_actions"]


def version_count(live, produced_text_pk: int) -> int:
    with live.db() as db:
        return db.scalar(select(func.count()).where(ProducedTextVersion.produced_text_fk == produced_text_pk))


def test_every_shipped_action_streams_a_new_version(live, llm):
    client = live.new_user()
    created = client.new_execution()
    assert {a["name_for_system"] for a in created["text_edit_actions"]} >= set(SHIPPED_ACTIONS)
    pk, session_id, socket, draft = drafted(live, llm, client)
    try:
        listed = client.ok("GET", "/text_edit_action",
                           params={"produced_text_version_pk": draft["produced_text_version_pk"]})["text_edit_actions"]
        by_name = {a["name_for_system"]: a for a in listed}
        assert set(SHIPPED_ACTIONS) <= set(by_name)
        assert by_name["shorter"]["name"] == "Shorter" and by_name["shorter"]["description"]
        for index, name in enumerate(SHIPPED_ACTIONS, start=2):
            body = f"Edited body number {index}, by {name}"
            llm.script(Reply(edited(f"Title {index}", body)))
            accepted = client.ok("POST", "/text_edit_action", json={
                "produced_text_version_pk": draft["produced_text_version_pk"],
                "text_edit_action_pk": by_name[name]["text_edit_action_pk"], "message_id": f"edit-{name}"})
            assert accepted["status"] in ("pending", "processing", "answered")
            final = socket.wait_event("draft_message", index)[-1]
            assert final["produced_text_version_index"] == index
            assert (final["produced_text_title"], final["produced_text"]) == (f"Title {index}", body)
            assert final["origin"] == "text_edit"
            assert final["text_edit_action_pk"] == by_name[name]["text_edit_action_pk"]
            deltas = turn_deltas(list(socket.events), final)
            assert "".join(deltas["draft"]) == body and "".join(deltas["title"]) == f"Title {index}"
            assert deltas["mojo"] == []
            sent = llm.last_request["messages"]
            assert BODY in sent[0]["content"] and TITLE in sent[0]["content"]  # always the source version
            assert sent[1]["role"] == "user" and "{{" not in sent[1]["content"]
        assert 'language whose code is "en"' in sent[1]["content"]  # translate: the session language
        latest = client.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": pk})
        assert latest["produced_text_version_index"] == 1 + len(SHIPPED_ACTIONS)
        events = [m["event_name"] for m in client.ok("GET", "/message", params={"session_id": session_id})["messages"]]
        assert events.count("text_edit_action") == len(SHIPPED_ACTIONS)
    finally:
        socket.close()


def test_an_edit_leaves_its_decision_in_the_reasoning_trace(live, llm):
    """A tester found the text edit's LLM call, whose reasoning is hidden from the user, missing from the trace
    where every LLM decision goes."""
    client = live.new_user()
    pk, _sid, socket, draft = drafted(live, llm, client)
    try:
        action = actions_of(client, draft["produced_text_version_pk"])[0]
        llm.script(Reply("<reasoning>cut the greeting</reasoning>" + edited("Short", "Shorter body")))
        client.ok("POST", "/text_edit_action", json={"produced_text_version_pk": draft["produced_text_version_pk"],
                                                     "text_edit_action_pk": action["text_edit_action_pk"]})
        socket.wait_event("draft_message", 2)
    finally:
        socket.close()
    entries = client.ok("GET", "/user_task_execution/reasoning", params={"user_task_execution_pk": pk})["reasoning"]
    assert (entries[-1]["source"], entries[-1]["text"]) == ("TEXT_EDIT_ACTION", "[DIRECT] cut the greeting")


def test_a_repeated_message_id_returns_the_same_version_never_a_second(live, llm):
    client = live.new_user()
    _pk, _sid, socket, draft = drafted(live, llm, client)
    try:
        action = actions_of(client, draft["produced_text_version_pk"])[0]
        body = {"produced_text_version_pk": draft["produced_text_version_pk"],
                "text_edit_action_pk": action["text_edit_action_pk"], "message_id": "same-edit"}
        llm.script(Reply(edited("Once", "Edited once"), delay_s=0.05))
        first = client.ok("POST", "/text_edit_action", json=body)
        during = client.ok("POST", "/text_edit_action", json=body)  # while it streams
        assert during["message_pk"] == first["message_pk"]
        final = socket.wait_event("draft_message", 2)[-1]
        live.wait_idle()
        after = client.ok("POST", "/text_edit_action", json=body)
        assert after["message_pk"] == first["message_pk"] and after["status"] == "answered"
        assert after["produced_text_version_pk"] == final["produced_text_version_pk"]
        assert version_count(live, draft["produced_text_pk"]) == 2
        assert len(llm.requests) == 2  # the draft and one edit
    finally:
        socket.close()


def test_another_users_version_is_not_found(live, llm):
    owner, stranger = live.new_user(), live.new_user()
    _pk, _sid, socket, draft = drafted(live, llm, owner)
    socket.close()
    version_pk = draft["produced_text_version_pk"]
    action = actions_of(owner, version_pk)[0]
    assert stranger.call("GET", "/text_edit_action", params={"produced_text_version_pk": version_pk}).status_code == 404
    response = stranger.call("POST", "/text_edit_action", json={
        "produced_text_version_pk": version_pk, "text_edit_action_pk": action["text_edit_action_pk"],
        "message_id": "steal"})
    assert response.status_code == 404 and response.json() == {"error": "produced_text_version not found"}
    assert version_count(live, draft["produced_text_pk"]) == 1


def test_an_llm_failure_stores_no_version_and_the_same_message_id_can_retry(live, llm):
    client = live.new_user()
    _pk, _sid, socket, draft = drafted(live, llm, client)
    try:
        version_pk = draft["produced_text_version_pk"]
        action = actions_of(client, version_pk)[0]
        body = {"produced_text_version_pk": version_pk, "text_edit_action_pk": action["text_edit_action_pk"],
                "message_id": "will-fail"}
        llm.script(HTTPError(400, "bad request"))
        accepted = client.ok("POST", "/text_edit_action", json=body)
        error = socket.wait_event("error")[0]
        assert error["kind"] == "text_edit_action" and error["message_id"] == "will-fail" and error["retryable"]
        live.wait_idle()
        assert message(live, accepted["message_pk"]).status == "failed"
        assert version_count(live, draft["produced_text_pk"]) == 1
        assert socket.named("draft_message") == [draft]

        llm.script(Reply(edited("Fixed", "Now it works")))
        retried = client.ok("POST", "/text_edit_action", json=body)
        assert retried["message_pk"] == accepted["message_pk"]
        assert socket.wait_event("draft_message", 2)[-1]["produced_text"] == "Now it works"
        assert version_count(live, draft["produced_text_pk"]) == 2
    finally:
        socket.close()


def test_bad_requests_are_clear_and_store_nothing(live, llm):
    client = live.new_user()
    _pk, _sid, socket, draft = drafted(live, llm, client)
    socket.close()
    version_pk = draft["produced_text_version_pk"]
    missing = client.call("POST", "/text_edit_action", json={"produced_text_version_pk": version_pk,
                                                               "text_edit_action_pk": 999999, "message_id": "x"})
    assert missing.status_code == 404 and missing.json()["error"] == "text_edit_action not found"
    no_pk = client.call("POST", "/text_edit_action", json={"text_edit_action_pk": 1})
    assert no_pk.status_code == 400 and no_pk.json()["field"] == "produced_text_version_pk"
    no_param = client.call("GET", "/text_edit_action")
    assert no_param.status_code == 400
    assert version_count(live, draft["produced_text_pk"]) == 1


def test_a_message_id_of_a_chat_message_is_refused_and_a_deleted_execution_is_gone(live, llm):
    client = live.new_user()
    pk, session_id, socket, draft = drafted(live, llm, client)
    socket.close()
    version_pk = draft["produced_text_version_pk"]
    action = actions_of(client, version_pk)[0]
    llm.script(Reply("<ask_user_primary_info>ok?</ask_user_primary_info>"))
    send(client, pk, session_id, "hello", message_id="chat-1")
    live.wait_idle()
    clash = client.call("POST", "/text_edit_action", json={
        "produced_text_version_pk": version_pk, "text_edit_action_pk": action["text_edit_action_pk"],
        "message_id": "chat-1"})
    assert clash.status_code == 409 and clash.json()["field"] == "message_id"
    # And the other way round (seen by a user: the chat text was silently dropped, 200 with the edit's message).
    llm.script(Reply("<execution><title>T</title><draft>Shorter.</draft></execution>"))
    client.ok("POST", "/text_edit_action", json={
        "produced_text_version_pk": version_pk, "text_edit_action_pk": action["text_edit_action_pk"],
        "message_id": "edit-1"})
    live.wait_idle()
    reuse = client.call("PUT", "/user_message", json={
        "session_id": session_id, "user_task_execution_pk": pk, "text": "hi", "message_id": "edit-1"})
    assert reuse.status_code == 409 and reuse.json()["field"] == "message_id"
    client.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})
    assert client.call("GET", "/text_edit_action", params={"produced_text_version_pk": version_pk}).status_code == 404
    assert version_count(live, draft["produced_text_pk"]) == 2  # the draft and the edit-1 version


@pytest.fixture(scope="module")
def quick_timeout_server(database_url, scripted_llm, live_server):
    base = live_settings(database_url, scripted_llm.base_url)
    with serving(dataclasses.replace(base, turn_timeout_s=1.0)) as live:
        load_edit_actions(live)
        yield live


def test_an_edit_that_streams_past_the_turn_timeout_fails_and_stores_no_version(quick_timeout_server, llm):
    live = quick_timeout_server
    client = live.new_user()
    _pk, _sid, socket, draft = drafted(live, llm, client)
    try:
        version_pk = draft["produced_text_version_pk"]
        action = actions_of(client, version_pk)[0]
        # Each gap is within the provider's read timeout; the whole is not within the turn's 1 s.
        llm.script(Reply(chunks=["<execution><title>Slow</title><draft>"] + ["word "] * 40, delay_s=0.1))
        accepted = client.ok("POST", "/text_edit_action", json={
            "produced_text_version_pk": version_pk, "text_edit_action_pk": action["text_edit_action_pk"],
            "message_id": "too-slow"})
        error = socket.wait_event("error")[0]
        assert error["kind"] == "text_edit_action" and "took too long" in error["error"] and error["retryable"]
        live.wait_idle()
    finally:
        socket.close()
        llm.reset()
    assert message(live, accepted["message_pk"]).status == "failed"
    assert version_count(live, draft["produced_text_pk"]) == 1


def test_a_row_naming_the_execution_does_not_hold_an_edit(live, llm, is_postgres):
    # was: the edit's completion locked the execution FOR UPDATE, which waits for the foreign key's
    # lock of every uncommitted row naming it (an llm_call of the spool, a message)
    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database")
    client = live.new_user()
    pk, _sid, socket, draft = drafted(live, llm, client)
    try:
        action = actions_of(client, draft["produced_text_version_pk"])[0]
        llm.script(Reply(edited("Held", "Edited while a row names the execution")))
        with row_naming_the_execution(live.platform.engine, pk):
            client.ok("POST", "/text_edit_action", json={
                "produced_text_version_pk": draft["produced_text_version_pk"],
                "text_edit_action_pk": action["text_edit_action_pk"], "message_id": "edit-held"})
            final = socket.wait_event("draft_message", 2)[-1]
        assert final["produced_text_title"] == "Held"
        assert version_count(live, draft["produced_text_pk"]) == 2
    finally:
        socket.close()
