"""PUT /home_chat's input: unknown fields refused, a form post read as a JSON body is, datetime ignored."""

from __future__ import annotations

import pytest

from mojodex_core.db.models import HomeChat


def _running(live, client) -> tuple[str, int]:
    """The caller's home chat, running a task: (its session_id, the execution's pk)."""
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    pk = client.ok("PUT", "/user_task_execution", json={"user_task_pk": client.user_task_pk()})[
        "user_task_execution_pk"]
    with live.db() as db:
        db.query(HomeChat).filter(HomeChat.session_id == session_id).update({"running_user_task_execution_fk": pk})
    return session_id, pk


def test_unknown_fields_are_refused_as_the_profile_refuses_them(live, llm):
    # was: accepted and ignored, so a misspelt "leave_tasks": true silently kept the task running
    client = live.new_user()
    for send in ({"json": {"leave_tasks": True}}, {"json": {"platform": "mobile", "colour": "red"}},
                 {"data": {"platform": "mobile", "colour": "red"}}):
        response = client.call("PUT", "/home_chat", **send)
        assert response.status_code == 400, (send, response.text)
        [name] = [k for k in next(iter(send.values())) if k not in ("platform",)]
        assert response.json()["error"] == f"{name}: unknown field" and response.json()["field"] == name, send
        # a form post answers as a JSON body does (was: no `errors` for a form post)
        assert response.json()["errors"] == [{"path": name, "rule": "unknown field", "type": "extra_forbidden"}]
    # the same words as PUT /user_profile's
    assert client.call("PUT", "/user_profile", json={"colour": "red"}).json()["error"] == "colour: unknown field"


@pytest.mark.parametrize("value", ["true", "True", "1", "on"])
def test_a_form_post_leaves_the_task_with_the_usual_form_booleans(live, llm, value):
    # was: 400 "leave_task must be of type bool": a form field is always text
    client = live.new_user()
    session_id, pk = _running(live, client)
    left = client.ok("PUT", "/home_chat", data={"leave_task": value, "platform": "mobile"})
    assert (left["session_id"], left["left_user_task_execution_pk"]) == (session_id, pk)
    assert left["running_user_task_execution_pk"] is None and left["platform"] == "mobile"


@pytest.mark.parametrize("value", ["false", "0", "off", "OFF"])
def test_a_form_post_saying_false_keeps_the_task(live, llm, value):
    client = live.new_user()
    _session_id, pk = _running(live, client)
    kept = client.ok("PUT", "/home_chat", data={"leave_task": value})
    assert (kept["running_user_task_execution_pk"], kept["left_user_task_execution_pk"]) == (pk, None)


def test_json_booleans_stay_strict_and_a_form_post_wants_a_boolean(live, llm):
    client = live.new_user()
    _session_id, pk = _running(live, client)
    for send in ({"json": {"leave_task": "true"}}, {"json": {"leave_task": 1}}, {"data": {"leave_task": "yes"}}):
        response = client.call("PUT", "/home_chat", **send)
        assert response.status_code == 400, (send, response.text)
        assert response.json()["field"] == "leave_task" and response.json()["errors"][0]["path"] == "leave_task"
    assert client.ok("PUT", "/home_chat")["running_user_task_execution_pk"] == pk


@pytest.mark.parametrize(
    "value", ["2024-02-14T10:53:06.502Z", "Wed Feb 14 2024 11:53:06 GMT+0100 (Central European Standard Time)",
              "x" * 300, "", 1707908000, 1707908000.502, None],
)
def test_the_mojodex_clients_datetime_is_accepted_and_ignored(live, llm, value):
    # was: a number, or a string over 64 characters, answered 400 (the other bodies ignore it)
    client = live.new_user()
    home = client.ok("PUT", "/home_chat")
    assert client.ok("PUT", "/home_chat", json={"platform": "webapp", "datetime": value})["session_id"] == \
        home["session_id"]
    if value is not None:
        assert client.ok("PUT", "/home_chat", data={"datetime": str(value)})["session_id"] == home["session_id"]
