"""LLM parser over the platform provider (``LLMProvider``) and the scripted OpenAI-compatible server."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mojodex_core.llm import LLMProvider, LLMUnavailable
from mojodex_core.order import (
    OrderParseError,
    ParsedInput,
    build_messages,
    new_order,
    parse_order,
    update_state,
)
from mojodex_core.order.llm_parser import needs_llm
from mojodex_core.order.parser import parse_deterministic
from tests.support.scripted_llm import HTTPError, Reply, ScriptedLLMServer

GOOD = {"new_items": [{"item_type": "pizza", "fields": {"size": "LARGE", "toppings": [{"name": "HAM"}]}}],
        "confidence": 0.9}



def test_valid_json_is_parsed_and_request_carries_schema_menu_and_order(llm: ScriptedLLMServer, provider,
                                                                        records, pizza_menu):
    tree, _ = update_state(new_order(pizza_menu.id), parse_deterministic("a small pizza", pizza_menu), pizza_menu)
    llm.script(Reply(json=GOOD))

    parsed = parse_order("something odd about a big ham pie", pizza_menu, tree, mode="llm", llm=provider)

    assert isinstance(parsed, ParsedInput)
    assert parsed.new_items[0].fields == {"size": "LARGE", "toppings": [{"name": "HAM"}]}
    assert parsed.confidence == 0.9
    assert len(llm.requests) == 1
    body = llm.last_request
    assert body["model"] == "gpt-4o-mini"
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "ParsedInput"
    assert rf["json_schema"]["schema"] == ParsedInput.model_json_schema()
    assert rf["json_schema"]["strict"] is False
    system = body["messages"][0]["content"]
    assert "BANANA_PEPPERS" in system and 'item_type "pizza"' in system  # the menu
    assert '[0] pizza (in_progress): {"quantity": 1, "size": "SMALL"' in system  # the current order
    assert "Pending question: {'task': 'item', 'item_index': 0, 'field': 'toppings'" in system
    assert body["messages"][-1] == {"role": "user", "content": "something odd about a big ham pie"}
    assert [(r.label, r.status, r.attempts) for r in records] == [("order_parse", "ok", 1)]


def test_invalid_json_then_valid_succeeds_after_one_retry(llm: ScriptedLLMServer, provider, pizza_menu):
    llm.script(Reply("this is not json {"), Reply(json=GOOD))

    parsed = parse_order("x", pizza_menu, mode="llm", llm=provider)

    assert parsed.new_items[0].item_type == "pizza"
    assert len(llm.requests) == 2
    retry = llm.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "this is not json {"}
    assert retry[-1]["role"] == "user" and "not valid JSON" in retry[-1]["content"]


def test_schema_violation_twice_raises_order_parse_error(llm: ScriptedLLMServer, provider, records, pizza_menu):
    bad = {"new_items": [{"fields": {}}], "confidence": 3}
    llm.script(Reply(json=bad), Reply(json=bad))

    with pytest.raises(OrderParseError, match="invalid ParsedInput twice") as info:
        parse_order("x", pizza_menu, mode="llm", llm=provider)

    assert "item_type" in str(info.value) and "confidence" in str(info.value)
    assert len(llm.requests) == 2
    assert records[-1].status == "error" and records[-1].attempts == 2


def test_auto_mode_makes_no_request_for_a_clean_utterance(llm: ScriptedLLMServer, provider, pizza_menu):
    parsed = parse_order("two large pepperoni pizzas and a diet coke", pizza_menu, llm=provider)
    assert [i.item_type for i in parsed.new_items] == ["pizza", "drink"]
    assert parsed.confidence == 1.0 and not parsed.unparsed
    assert llm.requests == []


def test_auto_mode_asks_the_llm_when_words_stay_unresolved(llm: ScriptedLLMServer, provider, pizza_menu):
    text = "a large calzone-ish thing with ham"
    assert parse_deterministic(text, pizza_menu).unparsed  # precondition
    llm.script(Reply(json=GOOD))
    parsed = parse_order(text, pizza_menu, llm=provider)
    assert len(llm.requests) == 1 and parsed.confidence == 0.9
    assert llm.last_request["messages"][-1]["content"] == text


def test_auto_mode_asks_the_llm_below_the_confidence_threshold(llm: ScriptedLLMServer, provider, pizza_menu):
    det = parse_deterministic("yes please", pizza_menu)  # nothing to answer: empty parse, confidence 0.5
    assert det.is_empty() and det.confidence == 0.5 and not det.unparsed
    assert needs_llm(det) and not needs_llm(det, threshold=0.5)

    assert parse_order("yes please", pizza_menu, llm=provider, threshold=0.5) == det
    assert llm.requests == []
    llm.script(Reply(json={"wants_checkout": True, "confidence": 0.7}))
    assert parse_order("yes please", pizza_menu, llm=provider).wants_checkout
    assert len(llm.requests) == 1


def test_auto_mode_keeps_the_deterministic_parse_when_the_llm_fails(llm: ScriptedLLMServer, provider,
                                                                    llm_settings, pizza_menu):
    text = "a large blorptastic pizza"
    llm.script(Reply("nope"), Reply("still nope"))
    assert parse_order(text, pizza_menu, llm=provider) == parse_deterministic(text, pizza_menu)
    assert len(llm.requests) == 2

    llm.reset()
    llm.script(HTTPError(503))
    down = LLMProvider(dataclasses.replace(llm_settings, max_retries=0))
    try:
        assert parse_order(text, pizza_menu, llm=down) == parse_deterministic(text, pizza_menu)
        with pytest.raises(LLMUnavailable):  # mode="llm" has nothing to fall back on
            llm.script(HTTPError(503))
            parse_order(text, pizza_menu, mode="llm", llm=down)
    finally:
        down.close()


@pytest.mark.parametrize("bad", [
    pytest.param({"new_items": [{"item_type": "pizza", "fields": {"size": "SMALL", "toppings": [{"nom": "HAM"}]}}]},
                 id="entry-without-name"),
    pytest.param({"answers": {"toppings": {"a": 1}}}, id="answer-object"),
    pytest.param({"new_items": [{"item_type": "pizza", "fields": {"toppings": [["HAM"]]}}]}, id="list-of-lists"),
    pytest.param({"modifications": [{"field": "size", "new_value": {"name": ["LARGE"]}}]}, id="nested-name"),
])
def test_a_malformed_value_from_the_llm_keeps_the_deterministic_parse(llm: ScriptedLLMServer, provider,
                                                                      pizza_menu, bad):
    """A tester's scripted model answered a topping as {"nom": "HAM"}: the schema let it through, and the state
    update crashed the turn (KeyError) where it should have kept the deterministic parse."""
    text = "a large blorptastic pizza"
    llm.script(Reply(json=bad))
    assert parse_order(text, pizza_menu, llm=provider) == parse_deterministic(text, pizza_menu)
    llm.script(Reply(json=bad))
    with pytest.raises(OrderParseError, match="malformed value"):
        parse_order(text, pizza_menu, mode="llm", llm=provider)


def test_a_topping_entry_without_a_name_is_refused_not_a_crash(pizza_menu):
    parsed = ParsedInput.model_validate(
        {"new_items": [{"item_type": "pizza", "fields": {"size": "SMALL", "toppings": [{"nom": "HAM"}]}}]})
    tree, _ = update_state(new_order(pizza_menu.id), parsed, pizza_menu)
    assert tree.items.items[0].fields["toppings"] == [] and tree.last_turn.errors


def test_deterministic_mode_never_calls_the_llm(llm: ScriptedLLMServer, provider, pizza_menu):
    parse_order("a large blorptastic pizza", pizza_menu, mode="deterministic", llm=provider)
    assert llm.requests == []


def test_llm_mode_requires_llm(pizza_menu):
    with pytest.raises(ValueError):
        parse_order("a pizza", pizza_menu, mode="llm")


def test_prompt_includes_order_and_pending_question(bagel_menu):
    tree, _ = update_state(new_order(bagel_menu.id), parse_deterministic("a plain bagel", bagel_menu), bagel_menu)
    system = build_messages("yes", bagel_menu, tree)[0]["content"]
    assert '[0] bagel (in_progress)' in system and "'field': 'toasted'" in system
    assert json.dumps("plain") in system


def test_llm_items_outside_the_menu_become_errors(bagel_menu):
    parsed = ParsedInput.model_validate({"new_items": [{"item_type": "hot dog", "fields": {}}]})
    tree, diff = update_state(new_order(bagel_menu.id), parsed, bagel_menu)
    assert not tree.items.items and diff.errors[0].subject == "hot dog"
