"""Home chat: free chat, routing to a task (tag or function call) and continuing it, refusals, leaving."""

from __future__ import annotations

import copy
import dataclasses
import json
import uuid

import pytest
import requests
from sqlalchemy import select

from mojodex_core.db.models import Message, UserTask, UserTaskExecution
from mojodex_core.home_chat.replies import home_chat_reply
from mojodex_core.home_chat.service import another_turn_in_line, home_chat_for_session
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from tests.integration._helpers import DRAFT, QUESTION, QUESTION_TEXT, message
from tests.support.live import TEST_TASK, live_settings, serving
from tests.support.scripted_llm import Hang, HTTPError, Reply, ToolCall

FREE = "<reasoning>small talk</reasoning><user_language>en</user_language>Hello! How can I help?"
ROUTE = "<reasoning>they want an email</reasoning><route_to_task>test_email</route_to_task>"


def _home(client, **body) -> dict:
    return client.ok("PUT", "/home_chat", json=body) if body else client.ok("PUT", "/home_chat")


def _say(client, session_id: str, text: str, message_id: str | None = None) -> dict:
    return client.ok("PUT", "/user_message", json={
        "origin": "home_chat", "session_id": session_id, "text": text, "message_id": message_id or uuid.uuid4().hex,
    })


def _executions(live, session_id: str) -> list[UserTaskExecution]:
    with live.db() as db:
        rows = list(db.scalars(select(UserTaskExecution).where(UserTaskExecution.session_id == session_id)))
        db.expunge_all()
        return rows


def _add_task(live, name: str) -> None:
    spec = copy.deepcopy(TEST_TASK)
    spec["name_for_system"] = name
    spec["definition_for_system"] = "A confidential task"
    with live.db() as db:
        store_spec(db, validate_spec(spec), "upsert")


def _route_to_the_task(live, llm, client, session_id: str, socket) -> int:
    """The chat routed to test_email by its first message, whose question is answered: the execution's pk."""
    llm.script(Reply(ROUTE), Reply(QUESTION))
    _say(client, session_id, "an email please")
    socket.wait_event("mojo_message")
    live.wait_idle()
    return socket.named("user_task_execution_start")[0]["user_task_execution_pk"]


def test_open_returns_the_same_chat_and_checks_input(live, llm):
    client, other = live.new_user(), live.new_user()
    first = _home(client)
    again = _home(client, platform="mobile")
    assert again["session_id"] == first["session_id"] and again["home_chat_pk"] == first["home_chat_pk"]
    assert again["platform"] == "mobile" and again["running_user_task_execution_pk"] is None
    assert _home(other)["session_id"] != first["session_id"]
    assert client.call("PUT", "/home_chat", json={"platform": "watch"}).status_code == 400
    assert client.call("PUT", "/home_chat", json={"leave_task": "yes"}).status_code == 400
    assert requests.put(live.base_url + "/home_chat", timeout=10).status_code == 401


def test_home_chat_messages_are_checked(live, llm):
    client, other = live.new_user(), live.new_user()
    home = _home(client)
    execution = client.new_execution()
    bad = [
        ({"session_id": execution["session_id"], "text": "hi"}, 400),  # a task's session, not the home chat
        ({"session_id": _home(other)["session_id"], "text": "hi"}, 404),  # someone else's home chat
        ({"session_id": home["session_id"], "text": "  "}, 400),
        ({"session_id": home["session_id"]}, 400),
    ]
    for body, status in bad:
        response = client.call("PUT", "/user_message", json={"origin": "home_chat", **body})
        assert response.status_code == status, (body, response.text)
        assert "error" in response.json()
    assert llm.requests == []


def test_a_message_that_matches_no_task_is_answered_in_free_chat(live, llm):
    client = live.new_user()
    client.ok("PUT", "/user_profile", json={"name": "Grace", "job": "Admiral"})
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(FREE))
        sent = _say(client, session_id, "hi there")
        answer = socket.wait_event("mojo_message")[0]
    finally:
        socket.close()
        live.wait_idle()
    assert answer["text"] == "Hello! How can I help?" and answer["user_task_execution_pk"] is None
    assert "".join(d["delta"] for d in socket.named("mojo_token")) == "Hello! How can I help?"
    assert message(live, sent["message_pk"]).status == "answered"
    assert _executions(live, session_id) == [] and socket.named("user_task_execution_start") == []
    request = llm.requests[0]
    prompt = request["messages"][0]["content"]
    assert "TASKS YOU CAN START FOR GRACE\n- test_email: Email. The user needs help writing an email" in prompt
    assert "- Job: Admiral" in prompt and "GLOBAL CONTEXT" in prompt and "<route_to_task>" in prompt
    tool = request["tools"][0]["function"]
    assert tool["name"] == "route_to_task" and tool["parameters"]["properties"]["task_name"]["enum"] == ["test_email"]


def test_a_long_task_definition_is_cut_in_the_routing_list(live, llm):
    """A tester stored a task whose definition was 1.9 MB: every home chat message of every user granted it sent
    1.9 MB to the LLM. The routing list gives the start of each definition."""
    from mojodex_core.home_chat.service import ROUTING_DEFINITION_CHARS

    name = f"long_{uuid.uuid4().hex[:8]}"
    spec = copy.deepcopy(TEST_TASK)
    spec.update(name_for_system=name, definition_for_system="Write a letter. " + "word " * 400_000)
    with live.db() as db:
        store_spec(db, validate_spec(spec), "upsert")
    client = live.new_user(tasks=[name])
    session_id = _home(client)["session_id"]
    llm.script(Reply(FREE))
    _say(client, session_id, "hi there")
    live.wait_idle()
    prompt = llm.requests[0]["messages"][0]["content"]
    line = next(row for row in prompt.splitlines() if row.startswith(f"- {name}:"))
    assert line.startswith(f"- {name}: Email. Write a letter. word word") and line.endswith("...")
    assert len(line) < ROUTING_DEFINITION_CHARS + 100 and len(prompt) < 20_000


def test_routing_by_tag_creates_the_execution_and_the_task_answers_until_its_result(live, llm):
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(ROUTE), Reply(QUESTION))
        _say(client, session_id, "write an email to say the sync moves to Friday")
        question = socket.wait_event("mojo_message")[0]
        [start] = socket.named("user_task_execution_start")
        pk = start["user_task_execution_pk"]
        assert question["text"] == QUESTION_TEXT and question["user_task_execution_pk"] == pk
        # the routing call's hidden tags never reach the client
        assert all("test_email" not in d["delta"] for d in socket.named("mojo_token"))
        [execution] = _executions(live, session_id)
        assert execution.user_task_execution_pk == pk and execution.status == "started"
        assert _home(client)["running_user_task_execution_pk"] == pk
        # the reply was regenerated with the task's prompt, on the same conversation
        task_prompt = llm.requests[1]["messages"]
        assert "The user needs help writing an email" in task_prompt[0]["content"]
        assert task_prompt[-1] == {"role": "user", "content": "write an email to say the sync moves to Friday"}
        trace = client.ok("GET", "/user_task_execution/reasoning", params={"user_task_execution_pk": pk})["reasoning"]
        assert trace[0]["text"] == "[TOOL_CALL] route_to_task: they want an email (routed by tag)"
        assert trace[0]["source"] == "HOME_CHAT_ROUTING"

        # the next message continues the task, which produces its result
        llm.script(Reply(DRAFT))
        _say(client, session_id, "to the whole team")
        draft = socket.wait_event("draft_message")[0]
        assert draft["user_task_execution_pk"] == pk
        live.wait_idle()
        assert "The user needs help writing an email" in llm.requests[2]["messages"][0]["content"]
        assert _home(client)["running_user_task_execution_pk"] is None

        # with the result produced, the chat is free again
        llm.script(Reply(FREE))
        _say(client, session_id, "thanks!")
        socket.wait_event("mojo_message", 2)
        live.wait_idle()
        assert "TASKS YOU CAN START" in llm.requests[3]["messages"][0]["content"]
        assert len(_executions(live, session_id)) == 1
    finally:
        socket.close()
        live.wait_idle()


def test_a_route_after_an_unclosed_reasoning_still_routes(live, llm):
    # was: the unclosed <reasoning> swallowed the <route_to_task> tag: no route, an "empty answer" error
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(chunks=list("<reasoning>they want an email\n<route_to_task>test_email</route_to_task>")),
                   Reply(QUESTION))
        _say(client, session_id, "an email please")
        assert socket.wait_event("mojo_message")[0]["text"] == QUESTION_TEXT
        [start] = socket.named("user_task_execution_start")
    finally:
        socket.close()
        live.wait_idle()
    pk = start["user_task_execution_pk"]
    trace = client.ok("GET", "/user_task_execution/reasoning", params={"user_task_execution_pk": pk})["reasoning"]
    assert trace[0]["text"] == "[TOOL_CALL] route_to_task: they want an email (routed by tag)"


def test_routing_by_function_call(live, llm):
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(ToolCall("route_to_task", json.dumps({"task_name": "test_email"}),
                            content_chunks=["<reasoning>an email request</reasoning>"]),
                   Reply(QUESTION))
        _say(client, session_id, "help me with an email")
        socket.wait_event("mojo_message")
        [start] = socket.named("user_task_execution_start")
    finally:
        socket.close()
        live.wait_idle()
    trace = client.ok("GET", "/user_task_execution/reasoning",
                      params={"user_task_execution_pk": start["user_task_execution_pk"]})["reasoning"]
    assert trace[0]["text"] == "[TOOL_CALL] route_to_task: an email request (routed by function)"


def test_a_task_the_user_lacks_is_never_routed_to(live, llm):
    _add_task(live, "test_secret_task")
    client = live.new_user()
    # a task granted then disabled is no access either
    with live.db() as db:
        user_task = db.scalar(select(UserTask).where(UserTask.user_id == client.user_id))
        user_task.enabled = False
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply("<reasoning>secret</reasoning><route_to_task>test_secret_task</route_to_task>"),
                   Reply("<route_to_task>test_email</route_to_task>"))
        _say(client, session_id, "do the secret task")
        first = socket.wait_event("mojo_message")[0]
        _say(client, session_id, "write an email")
        second = socket.wait_event("mojo_message", 2)[1]
    finally:
        socket.close()
        live.wait_idle()
    assert first["text"] == second["text"] == home_chat_reply("en", "not_your_task")
    assert _executions(live, session_id) == [] and socket.named("user_task_execution_start") == []
    prompt = llm.requests[0]["messages"][0]["content"]
    assert "test_secret_task" not in prompt and "test_email" not in prompt and "has no task" in prompt
    assert "tools" not in llm.requests[0]


def test_the_user_can_leave_the_task_and_return_to_free_chat(live, llm):
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        pk = _route_to_the_task(live, llm, client, session_id, socket)
        left = _home(client, leave_task=True)
        assert left["left_user_task_execution_pk"] == pk and left["running_user_task_execution_pk"] is None
        llm.script(Reply(FREE))
        _say(client, session_id, "never mind, how are you?")
        answer = socket.wait_event("mojo_message", 2)[1]
    finally:
        socket.close()
        live.wait_idle()
    assert answer["user_task_execution_pk"] is None
    assert "TASKS YOU CAN START" in llm.requests[2]["messages"][0]["content"]
    # the conversation so far goes with it, without the task's tags
    assert {"role": "assistant", "content": QUESTION_TEXT} in llm.requests[2]["messages"]


def test_a_failed_free_chat_turn_is_retried_with_the_same_message_id(live, llm):
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(HTTPError(500), HTTPError(500), HTTPError(500))
        sent = _say(client, session_id, "hello", message_id="m-1")
        error = socket.wait_event("error")[0]
        assert error["retryable"] and error["message_id"] == "m-1"
        assert message(live, sent["message_pk"]).status == "failed"
        llm.script(Reply(FREE))
        again = _say(client, session_id, "hello", message_id="m-1")
        assert again["message_pk"] == sent["message_pk"]
        socket.wait_event("mojo_message")
    finally:
        socket.close()
        live.wait_idle()
    assert message(live, sent["message_pk"]).status == "answered"


def test_a_second_task_in_the_chat_does_not_see_the_first_ones_result(live, llm):
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(ROUTE), Reply(DRAFT))
        _say(client, session_id, "an email to say the sync moves")
        socket.wait_event("draft_message")
        live.wait_idle()
        llm.script(Reply(ROUTE), Reply(QUESTION))
        _say(client, session_id, "now another email, to my landlord")
        socket.wait_event("mojo_message")
        live.wait_idle()
    finally:
        socket.close()
        live.wait_idle()
    starts = socket.named("user_task_execution_start")
    assert len(starts) == 2 and starts[0]["user_task_execution_pk"] != starts[1]["user_task_execution_pk"]
    second_task = llm.requests[3]["messages"]
    assert "THE LATEST VERSION OF THE RESULT" not in second_task[0]["content"]
    assert all("<execution>" not in m["content"] and "Weekly sync" not in m["content"] for m in second_task[1:])
    assert second_task[-1] == {"role": "user", "content": "now another email, to my landlord"}
    # the home chat saw the first result as plain text, without its tags
    home = llm.requests[2]["messages"]
    assert any("Weekly sync" in m["content"] for m in home[1:])
    assert all("<execution>" not in m["content"] for m in home[1:])


def test_a_failed_regeneration_is_retried_on_the_routed_task(live, llm):
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(ROUTE), HTTPError(500), HTTPError(500), HTTPError(500))
        sent = _say(client, session_id, "an email please", message_id="route-1")
        error = socket.wait_event("error")[0]
        live.wait_idle()
        pk = socket.named("user_task_execution_start")[0]["user_task_execution_pk"]
        assert error["retryable"] and error["user_task_execution_pk"] == pk
        llm.script(Reply(QUESTION))
        assert _say(client, session_id, "an email please", message_id="route-1")["message_pk"] == sent["message_pk"]
        answer = socket.wait_event("mojo_message")[0]
    finally:
        socket.close()
        live.wait_idle()
    # answered by the task it was routed to, with no second routing call and no second execution
    assert answer["user_task_execution_pk"] == pk and len(llm.requests) == 5
    assert "TASKS YOU CAN START" not in llm.requests[4]["messages"][0]["content"]
    assert len(_executions(live, session_id)) == 1


def test_without_an_llm_the_home_chat_says_so_and_stays_retryable(no_llm):
    client = no_llm.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        sent = _say(client, session_id, "hello")
        error = socket.wait_event("error")[0]
    finally:
        socket.close()
        no_llm.wait_idle()
    assert error["error"].startswith("No LLM configured") and error["retryable"]
    assert message(no_llm, sent["message_pk"]).status == "failed"


@pytest.fixture(scope="module")
def quick_timeout_server(database_url, scripted_llm, live_server):
    base = live_settings(database_url, scripted_llm.base_url)
    with serving(dataclasses.replace(base, turn_timeout_s=1.0)) as live:
        yield live


def test_a_free_chat_turn_that_hangs_times_out_and_can_be_retried(quick_timeout_server, llm):
    live = quick_timeout_server
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Hang(seconds=5, after_headers=True))
        sent = _say(client, session_id, "hello", message_id="slow-1")
        error = socket.wait_event("error")[0]
        assert "took too long" in error["error"] and error["retryable"]
        live.wait_idle()
        llm.reset()
        llm.script(Reply(FREE))
        _say(client, session_id, "hello", message_id="slow-1")
        socket.wait_event("mojo_message")
    finally:
        socket.close()
        live.wait_idle()
    assert message(live, sent["message_pk"]).status == "answered"


@pytest.mark.parametrize("how", ["stop", "delete"])
def test_stopping_or_deleting_a_routed_task_leaves_the_free_chat_turn_running(live, llm, how):
    # was: the stop was sent to the session's running turn, whichever it was: in a home chat's
    # session, shared by the tasks it routed to, that was the free chat's reply
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        pk = _route_to_the_task(live, llm, client, session_id, socket)
        _home(client, leave_task=True)
        llm.script(Reply(chunks=["Hello! ", "How can ", "I help?"], delay_s=0.3))
        tokens = len(socket.named("mojo_token"))
        sent = _say(client, session_id, "never mind, how are you?")
        socket.wait_event("mojo_token", tokens + 1)  # the free chat's reply is streaming
        if how == "stop":
            stopped = client.ok("POST", "/user_task_execution_stop", json={"user_task_execution_pk": pk})
            assert stopped["stopped"] is False
        else:
            client.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})
        answer = socket.wait_event("mojo_message", 2)[1]
    finally:
        socket.close()
        live.wait_idle()
    assert answer["user_task_execution_pk"] is None and answer["text"] == "Hello! How can I help?"
    assert not [e for e in socket.named("error") if e.get("user_message_pk") == sent["message_pk"]]


def test_stopping_a_routed_task_while_it_answers_stops_it(live, llm):
    client = live.new_user()
    session_id = _home(client)["session_id"]
    socket = client.socket(session_id)
    try:
        pk = _route_to_the_task(live, llm, client, session_id, socket)
        llm.script(Reply(chunks=["<user_language>en</user_language>", "Which ", "tone?"], delay_s=0.5))
        tokens = len(socket.named("mojo_token"))
        sent = _say(client, session_id, "to the whole team")
        socket.wait_event("mojo_token", tokens + 1)  # the task's own reply is streaming
        assert client.ok("POST", "/user_task_execution_stop", json={"user_task_execution_pk": pk})["stopped"] is True
        error = socket.wait_for(lambda evs: any(e == "error" and d.get("user_message_pk") == sent["message_pk"]
                                                for e, d in evs))
    finally:
        socket.close()
        live.wait_idle()
    assert any(e == "error" and d["retryable"] for e, d in error)


def test_a_chat_message_waiting_for_its_turn_counts_as_the_running_task_s(live, llm):
    # was: a waiting chat message (tied to no execution until its turn starts) counted as the free
    # chat's, so stopping the chat's running task before that turn started stopped nothing
    client = live.new_user()
    session_id = _home(client)["session_id"]
    llm.script(Reply(ROUTE), Reply(QUESTION))
    _say(client, session_id, "an email please")
    live.wait_idle()
    [execution] = _executions(live, session_id)
    with live.db() as db:  # the next chat message, accepted and not yet taken by its turn
        waiting = Message(session_id=session_id, user_task_execution_fk=None, sender="user", message_id="queued",
                          event_name="user_message", text="to the whole team", status="pending", data={})
        db.add(waiting)
        db.flush()
        assert not another_turn_in_line(db, session_id, execution.user_task_execution_pk)
        assert another_turn_in_line(db, session_id, execution.user_task_execution_pk + 1000)
        # deleting the task: the waiting message goes to the free chat, so its turn is another's
        assert another_turn_in_line(db, session_id, execution.user_task_execution_pk, deleting=True)
        home_chat_for_session(db, session_id).running_user_task_execution_fk = None  # left: the free chat's
        assert another_turn_in_line(db, session_id, execution.user_task_execution_pk)
        waiting.status = "failed"  # leave nothing pending for the next tests
