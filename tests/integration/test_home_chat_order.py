"""Home chat routing to an order task (started in the chat, the message its first utterance) and to a
workflow (answered with how to start it)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from mojodex_core.db import transaction
from mojodex_core.db.models import OrderSession, Session, Task, UserTask, UserTaskExecution
from mojodex_core.home_chat.replies import home_chat_reply
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import load_spec_file
from tests.integration._helpers import message, session_socket
from tests.order_platform.conftest import store_order_specs
from tests.support.home_chat import PIZZA_ROUTE as PIZZA
from tests.support.home_chat import answer as _answer
from tests.support.home_chat import say as _say
from tests.support.live import REPO_ROOT
from tests.support.scripted_llm import HTTPError, Reply, ToolCall

POEM = "<reasoning>they want a poem</reasoning><route_to_task>write_poem</route_to_task>"
FIRST_REPLY = "Any toppings on the large pizza?"


@pytest.fixture
def shop(live):  # noqa: ANN001, ANN201
    """The live server with the shipped order tasks and the poem workflow stored."""
    store_order_specs(live.platform.session_factory)
    with transaction(live.platform.session_factory) as db:
        store_spec(db, load_spec_file(Path(REPO_ROOT / "tasks_config" / "write_poem.json")), "upsert")
    return live


def _home(client) -> str:  # noqa: ANN001
    return client.ok("PUT", "/home_chat")["session_id"]


def _executions(live, session_id: str) -> list[UserTaskExecution]:  # noqa: ANN001
    with live.db() as db:
        rows = list(db.scalars(select(UserTaskExecution).where(UserTaskExecution.session_id == session_id)))
        db.expunge_all()
        return rows


def test_an_order_request_starts_the_order_in_the_home_chat(shop, llm):
    # was: order tasks were not offered, and a route to one was refused as "not one of your tasks"
    client = shop.new_user(tasks=["test_email", "order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(PIZZA))
        sent = _say(client, session_id, "I'd like to order a large pizza")
        reply = _answer(socket, sent["message_pk"])
        [start] = socket.named("user_task_execution_start")
        pk = start["user_task_execution_pk"]
        assert reply["text"] == FIRST_REPLY and reply["user_task_execution_pk"] == pk
        assert socket.named("order_state")[-1]["state"] == "Ordering"
        assert client.ok("PUT", "/home_chat")["running_user_task_execution_pk"] == pk
        [execution] = _executions(shop, session_id)
        assert execution.user_task_execution_pk == pk and execution.status == "started"
        order = client.ok("GET", "/order", params={"user_task_execution_pk": pk})
        [item] = order["order"]["items"]
        assert item["item_type"] == "pizza" and item["fields"]["size"] == "LARGE"
        # the order task is offered to the model like the others
        request = llm.requests[0]
        assert "- order_pizzeria: Pizzeria order. The user orders pizzas" in request["messages"][0]["content"]
        assert request["tools"][0]["function"]["parameters"]["properties"]["task_name"]["enum"] == [
            "order_pizzeria", "test_email"]
        trace = client.ok("GET", "/user_task_execution/reasoning", params={"user_task_execution_pk": pk})["reasoning"]
        assert trace[0]["text"] == "[TOOL_CALL] route_to_task: they want to order a pizza (routed by tag)"
        assert {"HOME_CHAT_ROUTING", "ORDER_TURN"} <= {entry["source"] for entry in trace}

        # the next message goes to the order, with no routing call
        calls = len(llm.requests)
        again = _say(client, session_id, "pepperoni")
        assert _answer(socket, again["message_pk"])["text"].startswith("Got it, a large pizza with pepperoni.")
        assert not [r for r in llm.requests[calls:] if "TASKS YOU CAN START" in r["messages"][0]["content"]]
        assert message(shop, again["message_pk"]).user_task_execution_fk == pk


def test_a_finished_order_frees_the_home_chat(shop, llm):
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(ToolCall("route_to_task", json.dumps({"task_name": "order_pizzeria"})))
        sent = _say(client, session_id, "I'd like to order a large pizza")
        pk = _answer(socket, sent["message_pk"])["user_task_execution_pk"]
        for text in ("pepperoni", "that's all", "pickup", "Ada", "555 0100", "in store", "yes"):
            _answer(socket, _say(client, session_id, text)["message_pk"])
        shop.wait_idle()
        assert client.ok("GET", "/order", params={"user_task_execution_pk": pk})["state"] == "Idle"
        assert client.ok("PUT", "/home_chat")["running_user_task_execution_pk"] is None
        llm.script(Reply("<user_language>en</user_language>You're welcome!"))
        thanks = _say(client, session_id, "thanks!")
        assert _answer(socket, thanks["message_pk"])["text"] == "You're welcome!"
        assert "TASKS YOU CAN START" in llm.requests[-1]["messages"][0]["content"]


def test_a_cancelled_order_frees_the_home_chat(shop, llm):
    # an order the chat routed to, cancelled (confirmed), is finished: the next request goes to the free chat
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(PIZZA))
        pk = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])[
            "user_task_execution_pk"]
        _answer(socket, _say(client, session_id, "cancel the order")["message_pk"])
        cancelled = _answer(socket, _say(client, session_id, "yes")["message_pk"])
        assert cancelled["text"] == "No problem, I've cancelled the order."
        shop.wait_idle()
        assert client.ok("GET", "/order", params={"user_task_execution_pk": pk})["state"] == "Idle"
        assert client.ok("PUT", "/home_chat")["running_user_task_execution_pk"] is None
        llm.script(Reply("<user_language>en</user_language>Here is a draft for Bob."))
        reply = _answer(socket, _say(client, session_id, "write an email to Bob")["message_pk"])
        assert (reply["text"], reply["user_task_execution_pk"]) == ("Here is a draft for Bob.", None)
        with shop.db() as db:
            assert db.get(UserTaskExecution, pk).status == "completed"


def test_the_model_s_language_tag_is_not_a_path_for_the_routed_order(shop, llm, tmp_path):
    # the order is opened in the model's <user_language>: it names the responses file every later turn reads
    from mojodex_core.order.conversation.resources import RESPONSES_DIR
    english = json.loads((RESPONSES_DIR / "en.json").read_text())
    (tmp_path / "leak.json").write_text(json.dumps(dict.fromkeys(english, "LEAKED")))
    language = "/".join([".."] * len(RESPONSES_DIR.parts)) + str(tmp_path / "leak")
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(f"<user_language>{language}</user_language>{PIZZA}"))
        reply = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])
    with shop.db() as db:
        stored = db.get(OrderSession, reply["user_task_execution_pk"]).conversation["language"]
        session_language = db.get(Session, session_id).language
    assert (reply["text"], stored) == (FIRST_REPLY, "en")
    assert session_language == "en"


def test_a_barge_in_of_a_left_order_leaves_the_free_chat_reply_running(shop, llm):
    # as POST /user_task_execution_stop: a barge-in cancels the session's turn only when it is this order's
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(PIZZA))
        pk = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])[
            "user_task_execution_pk"]
        client.ok("PUT", "/home_chat", json={"leave_task": True})
        llm.script(Reply(chunks=["Hello! ", "How can ", "I help?"], delay_s=0.3))
        tokens = len(socket.named("mojo_token"))
        sent = _say(client, session_id, "never mind, how are you?")
        socket.wait_event("mojo_token", tokens + 1)  # the free chat's reply is streaming
        client.ok("POST", "/order_event", json={"user_task_execution_pk": pk, "event": "barge_in"})
        answer = _answer(socket, sent["message_pk"])
    assert answer.get("text") == "Hello! How can I help?", answer


@pytest.mark.parametrize("text", ["I want to place an order", "I want to order from the pizzeria"])
def test_a_routing_message_naming_no_item_is_greeted(shop, llm, text):
    # not 'Sorry, we don't have "pizzeria"': the order's greeting, and the order goes on from there
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(PIZZA))
        reply = _answer(socket, _say(client, session_id, text)["message_pk"])
        then = _answer(socket, _say(client, session_id, "a large pizza")["message_pk"])
    assert reply["user_task_execution_pk"] is not None
    assert reply["text"] == "Hi, welcome to Corner Slice Pizzeria! What can I get for you today?"
    assert then["text"] == FIRST_REPLY


def test_a_left_order_goes_on_by_its_pk_beside_the_next_one(shop, llm):
    # the orders a home chat routed to share its session: each goes on with its own conversation
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(PIZZA), Reply(PIZZA))
        first = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])
        assert client.ok("PUT", "/home_chat", json={"leave_task": True})["running_user_task_execution_pk"] is None
        second = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])
        assert first["user_task_execution_pk"] != second["user_task_execution_pk"]
        sent = client.ok("PUT", "/user_message", json={
            "session_id": session_id, "user_task_execution_pk": first["user_task_execution_pk"], "text": "pepperoni",
            "message_id": uuid.uuid4().hex})
        reply = _answer(socket, sent["message_pk"])
    assert reply["user_task_execution_pk"] == first["user_task_execution_pk"]
    assert reply["text"].startswith("Got it, a large pizza with pepperoni.")
    orders = [client.ok("GET", "/order", params={"user_task_execution_pk": r["user_task_execution_pk"]})["order"]
              for r in (first, second)]
    assert [[t["name"] for t in o["items"][0]["fields"]["toppings"]] for o in orders] == [["PEPPERONI"], []]
    assert client.ok("PUT", "/home_chat")["running_user_task_execution_pk"] == second["user_task_execution_pk"]


def test_a_workflow_request_is_answered_with_how_to_start_it(shop, llm):
    # was: workflows were not offered, and a route to one was refused as "not one of your tasks"
    client = shop.new_user(tasks=["write_poem"])
    session_id = _home(client)
    with shop.db() as db:
        user_task_pk = db.scalar(select(UserTask.user_task_pk).where(UserTask.user_id == client.user_id))
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(POEM))
        sent = _say(client, session_id, "write me a poem about the sea")
        reply = _answer(socket, sent["message_pk"])
    assert reply["text"] == home_chat_reply("en", "start_from_its_page", task="Write a poem")
    assert reply["user_task_execution_pk"] is None
    assert reply["start_task"] == {
        "user_task_pk": user_task_pk, "name_for_system": "write_poem", "name_for_user": "Write a poem",
        "task_type": "workflow", "start_with": "PUT /user_task_execution",
    }
    stored = message(shop, reply["message_pk"])
    assert stored.data["start_task"] == reply["start_task"]
    assert _executions(shop, session_id) == [] and socket.named("user_task_execution_start") == []
    assert "- write_poem: Write a poem. The user wants a poem" in llm.requests[0]["messages"][0]["content"]


def test_an_order_whose_menu_is_gone_is_not_started(shop, llm):
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with shop.db() as db:
        task = db.scalar(select(Task).where(Task.name_for_system == "order_pizzeria"))
        menu = task.menu
        task.menu = "menus/no_such_menu.json"
    socket = client.socket(session_id)
    try:
        llm.script(Reply(PIZZA))
        sent = _say(client, session_id, "I'd like to order a large pizza")
        reply = _answer(socket, sent["message_pk"])
    finally:
        with shop.db() as db:
            db.scalar(select(Task).where(Task.name_for_system == "order_pizzeria")).menu = menu
        socket.close()
        shop.wait_idle()
    assert reply["text"] == home_chat_reply("en", "task_unavailable", task="Pizzeria order")
    assert reply["user_task_execution_pk"] is None and "start_task" not in reply
    assert _executions(shop, session_id) == [] and socket.named("user_task_execution_start") == []
    assert client.ok("PUT", "/home_chat")["running_user_task_execution_pk"] is None
    assert message(shop, sent["message_pk"]).status == "answered"


def test_a_disabled_order_task_is_never_routed_to(shop, llm):
    client = shop.new_user(tasks=["order_pizzeria"])
    with shop.db() as db:
        db.scalar(select(UserTask).where(UserTask.user_id == client.user_id)).enabled = False
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(PIZZA))
        sent = _say(client, session_id, "I'd like to order a large pizza")
        reply = _answer(socket, sent["message_pk"])
    assert reply["text"] == home_chat_reply("en", "not_your_task")
    assert _executions(shop, session_id) == [] and "order_pizzeria" not in llm.requests[0]["messages"][0]["content"]


def test_a_failed_routing_call_starts_the_order_on_retry(shop, llm):
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = _home(client)
    with session_socket(shop, client, session_id) as socket:
        llm.script(HTTPError(500), HTTPError(500), HTTPError(500))
        sent = _say(client, session_id, "I'd like to order a large pizza", message_id="pizza-1")
        error = _answer(socket, sent["message_pk"])
        assert error["retryable"] and error["message_id"] == "pizza-1"
        shop.wait_idle()
        assert _executions(shop, session_id) == [] and message(shop, sent["message_pk"]).status == "failed"
        llm.script(Reply(PIZZA))
        again = _say(client, session_id, "I'd like to order a large pizza", message_id="pizza-1")
        assert again["message_pk"] == sent["message_pk"]
        reply = socket.wait_for(lambda evs: any(e == "order_state" for e, _ in evs))
        reply = next(d for e, d in reply if e == "mojo_message" and d.get("user_message_pk") == sent["message_pk"])
    [execution] = _executions(shop, session_id)
    assert reply["text"] == FIRST_REPLY and reply["user_task_execution_pk"] == execution.user_task_execution_pk
    assert message(shop, sent["message_pk"]).status == "answered"


def test_a_task_disabled_while_the_model_routes_is_not_started(shop, llm):
    # was: the task was checked when the prompt was built only, and started once the model chose it
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    with session_socket(shop, client, session_id) as socket:
        llm.script(Reply(chunks=["<reasoning>they want a pizza</reasoning>", " ",
                                 "<route_to_task>order_pizzeria</route_to_task>"], delay_s=0.5))
        sent = _say(client, session_id, "I'd like to order a large pizza")
        time.sleep(0.6)  # the routing call is streaming: the admin disables the task now
        with shop.db() as db:
            db.scalar(select(UserTask).where(UserTask.user_id == client.user_id)).enabled = False
        reply = _answer(socket, sent["message_pk"])
    with shop.db() as db:
        created = db.scalars(select(UserTaskExecution).where(UserTaskExecution.session_id == session_id)).all()
    assert created == [], (reply.get("text"), [e.status for e in created])
    assert reply["text"] == home_chat_reply("en", "task_unavailable", task="Pizzeria order")
