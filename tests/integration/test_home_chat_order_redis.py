"""Home chat orders on the live store the deployment uses (Redis): each order of the chat's shared session
keeps its own conversation."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

import pytest

from mojodex_core.db.models import OrderSession, UserTaskExecution
from mojodex_core.order_runtime.store import state_key
from tests.order_platform.conftest import load_order_specs, order_settings
from tests.support.home_chat import PIZZA_ROUTE as PIZZA
from tests.support.home_chat import answer as _answer
from tests.support.home_chat import say as _say
from tests.support.live import LiveServer, serving
from tests.support.scripted_llm import Reply

needs_redis = pytest.mark.skipif(not os.environ.get("TEST_REDIS_URL"), reason="needs TEST_REDIS_URL")


@pytest.fixture(scope="module")
def shop_server(database_url: str, scripted_llm, live_server) -> Iterator[LiveServer]:  # noqa: ANN001
    """An LLM (the home chat needs one) and the live store the deployment uses (TEST_REDIS_URL)."""
    with serving(order_settings(database_url, scripted_llm.base_url), configure=load_order_specs) as live:
        yield live


@pytest.fixture
def shop(shop_server: LiveServer, llm) -> Iterator[LiveServer]:  # noqa: ANN001
    yield shop_server
    shop_server.wait_idle(10)


def _forget_recent(shop: LiveServer) -> None:
    """As if the next turn ran on another worker: no in-process copy, the live store's is read."""
    shop.platform.dispatcher.handler("order")._recent.clear()


def _key(shop: LiveServer, pk: int) -> str:
    with shop.db() as db:
        row = db.get(OrderSession, pk)
        return state_key(row.location, row.lane, db.get(UserTaskExecution, pk).session_id)


@needs_redis
def test_redis_two_orders_in_one_home_chat_each_keep_their_conversation(shop, llm):
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    socket = client.socket(session_id)
    try:
        assert shop.platform.order_store.name == "redis"
        llm.script(Reply(PIZZA), Reply(PIZZA))
        first = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])
        client.ok("PUT", "/home_chat", json={"leave_task": True})
        second = _answer(socket, _say(client, session_id, "a small coke please")["message_pk"])
        a, b = first["user_task_execution_pk"], second["user_task_execution_pk"]
        assert a != b
        _forget_recent(shop)  # A's next turn on another worker: the key holds B's copy, at the same turn
        sent = client.ok("PUT", "/user_message", json={
            "session_id": session_id, "user_task_execution_pk": a, "text": "pepperoni", "message_id": uuid.uuid4().hex})
        reply = _answer(socket, sent["message_pk"])
    finally:
        socket.close()
        shop.wait_idle()
    assert reply["text"].startswith("Got it, a large pizza with pepperoni."), reply["text"]
    order_a = client.ok("GET", "/order", params={"user_task_execution_pk": a})["order"]
    order_b = client.ok("GET", "/order", params={"user_task_execution_pk": b})["order"]
    assert [i["item_type"] for i in order_a["items"]] == ["pizza"]
    assert [i["item_type"] for i in order_b["items"]] == ["drink"]


@needs_redis
def test_redis_a_live_copy_written_before_the_change_is_ignored(shop, llm):
    # a deploy mid-order: the value has no "execution"; a turn reads the database instead
    client = shop.new_user(tasks=["order_pizzeria"])
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(PIZZA))
        a = _answer(socket, _say(client, session_id, "I'd like to order a large pizza")["message_pk"])[
            "user_task_execution_pk"]
        key = _key(shop, a)
        stored = json.loads(shop.platform.order_store.load(key))
        assert stored["execution"] == a and stored["turn"] == 1
        # an old-format copy at the same turn, of another conversation (a small coke)
        from mojodex_core.order.conversation import TurnInput, converse, start_conversation
        with shop.db() as db:
            row = db.get(OrderSession, a)
            menu = shop.platform.menus.resolve(db, row.menu_ref)
        empty, _ = start_conversation(menu, "en")
        other = converse(empty, TurnInput(text="a small coke"), menu, llm=None).conversation
        shop.platform.order_store.save(key, json.dumps({"turn": 1, "conversation": json.loads(other.to_json())}))
        _forget_recent(shop)
        reply = _answer(socket, _say(client, session_id, "pepperoni")["message_pk"])
    finally:
        socket.close()
        shop.wait_idle()
    assert reply["text"].startswith("Got it, a large pizza with pepperoni."), reply["text"]
