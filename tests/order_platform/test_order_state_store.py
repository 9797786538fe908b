"""Live state: Redis key and TTL, a backend restart resuming the conversation, Redis unreachable,
and the LLM fallback failing."""

from __future__ import annotations

import logging
import os
import time
import uuid

import pytest

from mojodex_core.order_runtime.store import state_key
from tests.integration._helpers import messages
from tests.order_platform._helpers import customer, items, open_order
from tests.order_platform.conftest import load_order_specs, order_settings
from tests.support.live import serving

REDIS_URL = os.environ.get("TEST_REDIS_URL")
needs_redis = pytest.mark.skipif(not REDIS_URL, reason="needs TEST_REDIS_URL")


def _redis():  # noqa: ANN202
    import redis

    return redis.Redis.from_url(REDIS_URL)


def test_a_restart_within_the_ttl_resumes_the_conversation(database_url, order_server):
    """Stop the server, start a new one on the same database (and Redis when configured), go on."""
    settings = order_settings(database_url)
    with serving(settings, configure=load_order_specs) as first:
        chat = open_order(customer(first))
        chat.say("I'd like an everything bagel with lox and a large iced latte")
        before = chat.order()
        key = state_key("order_bagel_shop", "0", chat.session_id)
        chat.close()
        client, pk, session_id = chat.client, chat.pk, chat.session_id
    if REDIS_URL:
        assert _redis().ttl(key) > 0  # still live after the process is gone
    with serving(settings, configure=load_order_specs) as second:
        client.base_url = second.base_url
        socket = client.socket(session_id)
        try:
            from tests.order_platform._helpers import OrderChat

            resumed = OrderChat(client, pk, session_id, socket, {})
            assert resumed.order()["order"] == before["order"]
            resumed.say("yes please")  # the toasted question of the bagel
            after = resumed.order()
            assert items(after["order"])[0]["fields"]["toasted"] is True
            assert [e["seq"] for e in resumed.audit()] == [1, 2]
        finally:
            socket.close()
            second.wait_idle()


@needs_redis
def test_redis_holds_the_live_state_with_a_ttl_and_drops_it_at_idle(orders):
    chat = open_order(customer(orders))
    key = state_key("order_bagel_shop", "0", chat.session_id)
    try:
        chat.say("a plain bagel")
        redis = _redis()
        ttl = redis.ttl(key)
        assert 0 < ttl <= orders.platform.settings.order_state_ttl_s
        assert b'"turn": 1' in redis.get(key)
        chat.event("session_end")
        assert chat.wait_state("Idle")
        assert redis.exists(key) == 0
    finally:
        chat.close()


def test_with_redis_unreachable_turns_complete_and_the_log_says_so_once(database_url, order_server, caplog):
    settings = order_settings(database_url, redis_url="redis://127.0.0.1:1/0")
    caplog.set_level(logging.WARNING, logger="mojodex.order.store")
    with serving(settings, configure=load_order_specs) as live:
        chat = open_order(customer(live))
        try:
            chat.say("I'd like a plain bagel")
            chat.say("toasted please")
            chat.say("and a small latte")
            lines = items(chat.order()["order"])
            assert [i["item_type"] for i in lines] == ["bagel", "coffee"]
        finally:
            chat.close()
            live.wait_idle()
    warnings = [r for r in caplog.records if "redis unreachable" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]


@pytest.fixture(scope="module")
def llm_order_server(database_url, scripted_llm, order_server):  # noqa: ANN001, ANN201
    """Order turns with the LLM configured (the scripted server): the engine may use it as a fallback."""
    with serving(order_settings(database_url, scripted_llm.base_url), configure=load_order_specs) as live:
        yield live


def test_the_llm_fallback_failing_still_answers_or_fails_retryably(llm_order_server, llm):
    live = llm_order_server
    chat = open_order(customer(live))
    try:
        # No scripted step: every LLM request gets HTTP 500.
        message_id = uuid.uuid4().hex
        response = chat.put("blorf the wizzle, quantum marmalade", message_id)
        assert response.status_code == 200
        pk = response.json()["message_pk"]
        events = chat.socket.wait_for(lambda evs: any(
            e in ("mojo_message", "error") and d.get("user_message_pk") == pk for e, d in evs))
        final = next(d for e, d in events if e in ("mojo_message", "error") and d.get("user_message_pk") == pk)
        live.wait_idle()
        row = next(m for m in messages(live, chat.session_id) if m.message_pk == pk)
        if "error" in final and "text" not in final:
            assert final["retryable"] is True and row.status == "failed"
            # Retried with the same message_id, with the LLM back, it is answered.
            llm.responder = lambda body: None
            again = chat.put("blorf the wizzle, quantum marmalade", message_id)
            assert again.json()["message_pk"] == pk
        else:
            assert final["text"] and row.status == "answered"
        assert row.status in ("answered", "failed")  # never stuck pending/processing
        assert llm.requests, "the engine was expected to try the LLM on an utterance it cannot parse"
        assert all(r.get("model") for r in llm.requests)
        # A plain order still goes through deterministically afterwards.
        chat.say("a plain bagel")
    finally:
        chat.close()
        live.wait_idle()


def test_barge_in_cancels_the_turn_in_flight(llm_order_server, llm):
    """A turn waiting on the LLM is cancelled by barge_in (runner cancel): it fails retryably, and the
    barge_in's own reply follows."""
    from tests.support.scripted_llm import Hang

    live = llm_order_server
    chat = open_order(customer(live))
    try:
        llm.script(Hang(seconds=2.0))
        pending = chat.put("blorf the wizzle, quantum marmalade")
        pk = pending.json()["message_pk"]
        deadline = time.monotonic() + 5
        while not llm.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        assert llm.requests, "the turn never reached the LLM"
        reply = chat.event("barge_in")
        assert reply
        events = chat.socket.events
        error = next(d for e, d in events if e == "error" and d.get("user_message_pk") == pk)
        assert error["error"] == "The turn was cancelled." and error["retryable"] is True
        assert chat.last_state()["cancel_reply"] is True
    finally:
        llm.reset()
        chat.close()
        live.wait_idle()
