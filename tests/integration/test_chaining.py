"""Task chaining: a predefined action starts a follow-up task with its parent's result in the prompt."""

from __future__ import annotations

import pytest

from tests.integration._edits import PREFIX, load_minutes_task
from tests.integration._helpers import INPUTS, run_form
from tests.support.scripted_llm import Reply

MINUTES_BODY = "Decisions: ship on Friday. Actions: Ana books the room."
MINUTES = f"<execution><title>Sprint review</title><draft>{MINUTES_BODY}</draft></execution>"
EMAIL = "<execution><title>Minutes</title><draft>Hi all, ship on Friday.</draft></execution>"


@pytest.fixture(scope="module", autouse=True)
def _minutes(live_server):
    load_minutes_task(live_server)


def finished_minutes(live, llm, client) -> int:
    parent = client.new_execution("test_minutes")
    socket = client.socket(parent["session_id"])
    try:
        llm.script(Reply(MINUTES))
        run_form(client, parent["user_task_execution_pk"])
        socket.wait_event("draft_message")
    finally:
        socket.close()
    return parent["user_task_execution_pk"]


def test_a_predefined_action_starts_the_follow_up_with_the_parent_result_and_prefix(live, llm):
    client = live.new_user(tasks=["test_email", "test_minutes"])
    parent_pk = finished_minutes(live, llm, client)
    actions = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": parent_pk})
    assert actions["parent_user_task_execution_pk"] is None
    started = client.ok("PUT", "/user_task_execution", json={
        "user_task_pk": client.user_task_pk("test_email"), "user_task_execution_fk": parent_pk})
    child_pk = started["user_task_execution_pk"]
    assert started["parent_user_task_execution_pk"] == parent_pk
    view = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": child_pk})
    assert view["parent_user_task_execution_pk"] == parent_pk
    listed = client.ok("GET", "/user_task_execution")["user_task_executions"]
    assert {e["user_task_execution_pk"]: e["parent_user_task_execution_pk"] for e in listed} == {
        child_pk: parent_pk, parent_pk: None}

    socket = client.socket(started["session_id"])
    try:
        llm.script(Reply(EMAIL))
        run_form(client, child_pk, INPUTS)
        socket.wait_event("draft_message")
    finally:
        socket.close()
    system = llm.last_request["messages"][0]["content"]
    assert MINUTES_BODY in system and PREFIX in system and "Sprint review" in system
    # the parent's own prompt had no such section
    assert "FOLLOWS A PREVIOUS TASK" not in llm.requests[0]["messages"][0]["content"]


def test_the_parent_must_be_the_callers_and_offer_the_follow_up(live, llm):
    owner = live.new_user(tasks=["test_email", "test_minutes"])
    stranger = live.new_user(tasks=["test_email", "test_minutes"])
    parent_pk = finished_minutes(live, llm, owner)
    response = stranger.call("PUT", "/user_task_execution", json={
        "user_task_pk": stranger.user_task_pk("test_email"), "user_task_execution_fk": parent_pk})
    assert response.status_code == 404 and response.json() == {"error": "user_task_execution not found"}

    email_parent = owner.new_execution("test_email")["user_task_execution_pk"]
    response = owner.call("PUT", "/user_task_execution", json={
        "user_task_pk": owner.user_task_pk("test_email"), "user_task_execution_fk": email_parent})
    assert response.status_code == 400 and response.json()["field"] == "user_task_execution_fk"
    assert "not a predefined action" in response.json()["error"]
    response = owner.call("PUT", "/user_task_execution", json={
        "user_task_pk": owner.user_task_pk("test_email"), "user_task_execution_fk": "abc"})
    assert response.status_code == 400
    # nothing half-created: the owner still has their two executions only
    assert owner.ok("GET", "/user_task_execution")["total"] == 2
