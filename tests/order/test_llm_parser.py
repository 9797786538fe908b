from __future__ import annotations

import json

import openai
import pytest

from mojodex_core.order import (
    OpenAIStructuredLLM,
    OrderParseError,
    ParsedInput,
    build_messages,
    new_order,
    parse_order,
    update_state,
)
from mojodex_core.order.parser import parse_deterministic

from .fake_openai import FakeOpenAI

GOOD = {"new_items": [{"item_type": "pizza", "fields": {"size": "LARGE", "toppings": [{"name": "HAM"}]}}],
        "confidence": 0.9}


@pytest.fixture()
def server():
    with FakeOpenAI() as srv:
        yield srv


def _llm(server: FakeOpenAI) -> OpenAIStructuredLLM:
    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)
    return OpenAIStructuredLLM(client, "fake-model")


def test_valid_json_is_parsed_and_request_carries_schema(server, pizza_menu):
    server.push(json.dumps(GOOD))
    parsed = parse_order("something odd about a big ham pie", pizza_menu, mode="llm", llm=_llm(server))
    assert parsed.new_items[0].fields["size"] == "LARGE"
    assert len(server.requests) == 1
    body = server.requests[0]["body"]
    assert body["model"] == "fake-model"
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "ParsedInput"
    assert rf["json_schema"]["schema"] == ParsedInput.model_json_schema()
    assert rf["json_schema"]["strict"] is False
    system = body["messages"][0]["content"]
    assert "BANANA_PEPPERS" in system and "item_type \"pizza\"" in system
    assert body["messages"][-1] == {"role": "user", "content": "something odd about a big ham pie"}


def test_invalid_json_then_retry_succeeds(server, pizza_menu):
    server.push("this is not json {")
    server.push(json.dumps(GOOD))
    parsed = parse_order("x", pizza_menu, mode="llm", llm=_llm(server))
    assert parsed.new_items[0].item_type == "pizza"
    assert len(server.requests) == 2
    retry_msgs = server.requests[1]["body"]["messages"]
    assert retry_msgs[-2] == {"role": "assistant", "content": "this is not json {"}
    assert "invalid" in retry_msgs[-1]["content"]


def test_schema_violation_twice_raises(server, pizza_menu):
    bad = json.dumps({"new_items": [{"fields": {}}], "confidence": 3})
    server.push(bad)
    server.push(bad)
    with pytest.raises(OrderParseError, match="invalid ParsedInput twice"):
        parse_order("x", pizza_menu, mode="llm", llm=_llm(server))
    assert len(server.requests) == 2


def test_auto_mode_skips_llm_when_confident(server, pizza_menu):
    parsed = parse_order("two large pepperoni pizzas and a diet coke", pizza_menu, llm=_llm(server))
    assert len(parsed.new_items) == 2 and server.requests == []


def test_auto_mode_falls_back_to_llm_on_unknown_words(server, pizza_menu):
    server.push(json.dumps(GOOD))
    parsed = parse_order("a large calzone-ish thing with ham", pizza_menu, llm=_llm(server))
    assert len(server.requests) == 1 and parsed.confidence == 0.9


def test_auto_mode_keeps_deterministic_parse_when_llm_fails(server, pizza_menu):
    server.push("nope")
    server.push("still nope")
    text = "a large blorptastic pizza"
    parsed = parse_order(text, pizza_menu, llm=_llm(server))
    assert parsed == parse_deterministic(text, pizza_menu)


def test_llm_mode_requires_llm(pizza_menu):
    with pytest.raises(ValueError):
        parse_order("a pizza", pizza_menu, mode="llm")


def test_prompt_includes_order_and_pending_question(bagel_menu):
    tree, _ = update_state(new_order(bagel_menu.id), parse_deterministic("a plain bagel", bagel_menu), bagel_menu)
    system = build_messages("yes", bagel_menu, tree)[0]["content"]
    assert '[0] bagel (in_progress)' in system and "'field': 'toasted'" in system


def test_llm_items_outside_the_menu_become_errors(bagel_menu):
    parsed = ParsedInput.model_validate({"new_items": [{"item_type": "hot dog", "fields": {}}]})
    tree, diff = update_state(new_order(bagel_menu.id), parsed, bagel_menu)
    assert not tree.items.items and diff.errors[0].subject == "hot dog"
