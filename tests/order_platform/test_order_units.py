"""Unit tests of the order runtime's edges: settings, the live-state store, signatures, menu validation."""

from __future__ import annotations

import json
import logging
import os

import pytest

from mojodex_core.config import ConfigError, load_settings
from mojodex_core.order_runtime.menus import MenuInvalid, validate_menu
from mojodex_core.order_runtime.store import DatabaseOnlyStore, RedisStateStore, build_store, state_key
from mojodex_core.order_runtime.tickets import sign, verify
from tests.order_platform.florist_menu import FLORIST_MENU

BASE_ENV = {"MOJODEX_ADMIN_SECRET": "admin-secret-0123456789abcdef", "MOJODEX_SECRET_KEY": "b" * 20}


def test_order_settings_have_defaults_and_are_validated():
    settings = load_settings(BASE_ENV)
    assert settings.order_state_ttl_s == 3600 and settings.pos_webhook_attempts == 5
    assert settings.pos_webhook_secret is None
    settings = load_settings({**BASE_ENV, "MOJODEX_ORDER_STATE_TTL_S": "60", "MOJODEX_POS_WEBHOOK_SECRET": "s" * 20,
                              "MOJODEX_POS_WEBHOOK_ATTEMPTS": "2", "MOJODEX_POS_WEBHOOK_BACKOFF_S": "0.5"})
    assert (settings.order_state_ttl_s, settings.pos_webhook_attempts, settings.pos_webhook_backoff_s) == (60, 2, 0.5)
    assert settings.pos_webhook_secret == "s" * 20
    with pytest.raises(ConfigError, match="MOJODEX_ORDER_STATE_TTL_S"):
        load_settings({**BASE_ENV, "MOJODEX_ORDER_STATE_TTL_S": "0"})
    with pytest.raises(ConfigError, match="MOJODEX_POS_WEBHOOK_ATTEMPTS"):
        load_settings({**BASE_ENV, "MOJODEX_POS_WEBHOOK_ATTEMPTS": "many"})


def test_state_key_and_store_choice():
    assert state_key("shop", "2", "abc") == "session:shop:2:abc"
    assert isinstance(build_store(None, 10), DatabaseOnlyStore)
    store = DatabaseOnlyStore()
    store.save("k", "v")
    assert store.load("k") is None


def test_unreachable_redis_is_logged_once_and_never_raises(caplog):
    caplog.set_level(logging.WARNING, logger="mojodex.order.store")
    store = RedisStateStore("redis://127.0.0.1:1/0", 10)
    for _ in range(3):
        store.save("k", "v")
        assert store.load("k") is None
        store.drop("k")
    assert store.down
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 1


@pytest.mark.skipif(not os.environ.get("TEST_REDIS_URL"), reason="needs TEST_REDIS_URL")
def test_redis_store_round_trip_with_ttl():
    store = RedisStateStore(os.environ["TEST_REDIS_URL"], 30)
    key = state_key("unit", "0", os.urandom(8).hex())
    store.save(key, '{"turn": 1}')
    assert store.load(key) == '{"turn": 1}' and 0 < store.ttl(key) <= 30
    store.drop(key)
    assert store.load(key) is None


def test_signature_is_hmac_sha256_of_the_body():
    import hashlib
    import hmac

    body = b'{"ticket_id":"x"}'
    assert sign("secret-0123456789abc", body) == "sha256=" + hmac.new(
        b"secret-0123456789abc", body, hashlib.sha256).hexdigest()
    assert verify("secret-0123456789abc", body, sign("secret-0123456789abc", body))
    assert not verify("secret-0123456789abc", body + b" ", sign("secret-0123456789abc", body))


def test_menu_validation_reports_paths_and_rules():
    assert validate_menu(FLORIST_MENU).id == "florist_petal"
    with pytest.raises(MenuInvalid) as info:
        validate_menu({"id": "x", "name": "X", "item_types": {"a": {"label": "a", "fields": {}}}})
    assert info.value.errors == [{"path": "item_types.a", "rule": "every item type needs a 'quantity' field"}]
    with pytest.raises(MenuInvalid) as info:
        validate_menu([1, 2])
    assert info.value.errors[0]["path"] == "<root>"


class _MemoryStore:
    """A live store that keeps what it is given, as Redis does."""

    name = "memory"

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def load(self, key: str) -> str | None:
        return self.values.get(key)

    def save(self, key: str, data: str) -> None:
        self.values[key] = data

    def drop(self, key: str) -> None:
        self.values.pop(key, None)


class _StoredConversation:
    """The database's side of OrderTurn._conversation: the durable record of one execution."""

    def __init__(self, conversation) -> None:  # noqa: ANN001
        self.conversation = conversation

    def scalar(self, _query) -> dict:  # noqa: ANN001
        return json.loads(self.conversation.to_json())


def test_a_live_copy_of_another_execution_under_the_same_key_is_not_trusted():
    # Two orders in one session (a home chat's hosts every order it routes to) share the live key:
    # trusted on its turn count alone, the other order's copy ran this turn on the other's conversation
    from pathlib import Path

    from mojodex_core.order.conversation import TurnInput, converse, start_conversation
    from mojodex_core.order.menu import load_menu
    from mojodex_core.order_runtime.context import OrderTurnContext
    from mojodex_core.order_runtime.turn import OrderTurn

    menu = load_menu(Path(__file__).resolve().parents[2] / "tasks_config" / "menus" / "pizzeria.json")
    empty, _ = start_conversation(menu, "en")
    mine = converse(empty, TurnInput(text="a large pepperoni pizza"), menu, llm=None).conversation
    theirs = converse(empty, TurnInput(text="a small cola"), menu, llm=None).conversation
    store = _MemoryStore()
    turn = OrderTurn(None, None, None, store, None, None)  # only its _conversation is called
    key = state_key("order_pizzeria", "0", "the-home-chat-session")
    context = OrderTurnContext(session_id="the-home-chat-session", message_pk=1, message_id="m",
                               user_task_execution_pk=1, user_id="u", output_text_type_fk=None, webhook_url=None,
                               key=key, conversation=None, turn=1, menu=menu, turn_input=None)
    # the second execution's copy, at turn 1 too
    store.save(key, json.dumps({"execution": 2, "turn": 1, "conversation": json.loads(theirs.to_json())}))
    assert turn._conversation(_StoredConversation(mine), context).to_json() == mine.to_json()
    # its own copy is used (the database is not read)
    store.save(key, json.dumps({"execution": 1, "turn": 1, "conversation": json.loads(mine.to_json())}))
    assert turn._conversation(None, context).to_json() == mine.to_json()
