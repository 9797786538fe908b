"""A home chat message routed to an order task, answered on Celery workers (Redis live store)."""

from __future__ import annotations

import time
import uuid

from sqlalchemy import select

from mojodex_core.db.models import HomeChat
from tests.distributed.conftest import _responder
from tests.order_platform.conftest import store_order_specs
from tests.support.home_chat import PIZZA_ROUTE as PIZZA
from tests.support.home_chat import answer
from tests.support.scripted_llm import HTTPError, Reply, asks_structured


def _route_or_answer(body: dict):  # noqa: ANN202
    system = str(body.get("messages", [{}])[0].get("content", ""))
    if "TASKS YOU CAN START" in system:
        return Reply(PIZZA)
    if asks_structured(body) and "menu" in system.lower():
        return HTTPError(400)  # the order engine's classify/parse: the deterministic parse is kept
    return _responder(body)


def _say(client, session_id: str, text: str, pk: int | None = None) -> dict:  # noqa: ANN001
    body = {"session_id": session_id, "text": text, "message_id": uuid.uuid4().hex}
    body |= {"user_task_execution_pk": pk} if pk else {"origin": "home_chat"}
    return client.ok("PUT", "/user_message", json=body)


def _answer(socket, message_pk: int) -> dict:  # noqa: ANN001 - workers take longer than one process
    return answer(socket, message_pk, timeout=40)


def test_a_home_chat_order_runs_on_celery_workers(backends, cluster_llm):
    a, b = backends
    store_order_specs(a.platform.session_factory)
    client = a.new_user(tasks=["order_pizzeria"])
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    socket = client.socket(session_id)
    cluster_llm.responder = _route_or_answer
    try:
        first = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])
        assert first["text"] == "Any toppings on the large pizza?", first
        pk_a = first["user_task_execution_pk"]
        texts = []
        for text in ("pepperoni", "that's all"):
            texts.append(_answer(socket, _say(client, session_id, text)["message_pk"])["text"])
        assert texts[0].startswith("Got it, a large pizza with pepperoni."), texts
        client.ok("PUT", "/home_chat", json={"leave_task": True})
        second = _answer(socket, _say(client, session_id, "a small coke please")["message_pk"])
        pk_b = second["user_task_execution_pk"]
        assert pk_b not in (None, pk_a), second
        # each order goes on with its own conversation, whichever worker answers
        for _ in range(3):
            _answer(socket, _say(client, session_id, "and a garlic bread", pk=pk_b)["message_pk"])
        orders = {pk: client.ok("GET", "/order", params={"user_task_execution_pk": pk})
                  for pk in (pk_a, pk_b)}
        assert orders[pk_a]["state"] == "Confirming", orders[pk_a]
        assert [i["item_type"] for i in orders[pk_a]["order"]["items"]] == ["pizza"]
        assert "pizza" not in [i["item_type"] for i in orders[pk_b]["order"]["items"]]
        # finish A by its pk: Idle, completed
        for text in ("pickup", "Ada", "555 0100", "in store", "yes"):
            last = _answer(socket, _say(client, session_id, text, pk=pk_a)["message_pk"])
        assert "error" not in last, last
        deadline = time.monotonic() + 20
        while client.ok("GET", "/order", params={"user_task_execution_pk": pk_a})["state"] != "Idle":
            assert time.monotonic() < deadline, "order A never reached Idle"
            time.sleep(0.2)
        with a.db() as db:
            running = db.scalar(select(HomeChat.running_user_task_execution_fk)
                                .where(HomeChat.session_id == session_id))
        assert running == pk_b
    finally:
        cluster_llm.responder = _responder
        socket.close()


def test_a_cancelled_home_chat_order_frees_the_chat_on_celery_workers(backends, cluster_llm):
    a, _ = backends
    store_order_specs(a.platform.session_factory)
    client = a.new_user(tasks=["order_pizzeria"])
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    socket = client.socket(session_id)
    cluster_llm.responder = _route_or_answer
    try:
        pk = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])[
            "user_task_execution_pk"]
        _answer(socket, _say(client, session_id, "cancel the order")["message_pk"])
        cancelled = _answer(socket, _say(client, session_id, "yes")["message_pk"])
        assert cancelled["text"] == "No problem, I've cancelled the order.", cancelled
        deadline = time.monotonic() + 20
        while client.ok("PUT", "/home_chat")["running_user_task_execution_pk"] is not None:
            assert time.monotonic() < deadline, "the chat never left the cancelled order"
            time.sleep(0.2)
        assert client.ok("GET", "/order", params={"user_task_execution_pk": pk})["state"] == "Idle"
    finally:
        cluster_llm.responder = _responder
        socket.close()
