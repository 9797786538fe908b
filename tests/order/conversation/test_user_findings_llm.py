"""With an LLM configured: a turn whose only doubt is a reference the deterministic parse kept ("honey" after a
bagel, "no olives on the small pizza") is not sent to the LLM parse, whose result has no reference to ask about."""

from __future__ import annotations

from tests.support.scripted_llm import Reply, ScriptedLLMServer

from .conftest import Session


def test_honey_after_a_bagel_is_offered_not_added_by_the_llm(llm: ScriptedLLMServer, provider, records, bagel_menu):
    """The LLM parse read "Honey" as a coffee with honey and it was added silently: no offer was made."""
    s = Session(bagel_menu, llm=provider)
    s.say("a plain bagel")
    llm.script(Reply(json={"intent": "order_entry", "reason": "a sweetener"}),
               Reply(json={"new_items": [{"item_type": "coffee", "fields": {"sweetener": "honey"}}],
                           "confidence": 0.9}))
    out = s.say("Honey")
    assert out.response_key == "clarify-new-item", out.reply
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["bagel"]
    assert "order_parse" not in [r.label for r in records]


def test_a_reference_to_no_line_is_asked_about_with_the_llm_too(llm: ScriptedLLMServer, provider, records,
                                                                 pizza_menu):
    s = Session(pizza_menu, llm=provider)
    s.say("a large pizza with olives")
    llm.script(Reply(json={"intent": "order_entry", "reason": "a change"}),
               Reply(json={"modifications": [{"item_index": 0, "field": "size", "new_value": "SMALL"}],
                           "confidence": 0.9}))
    out = s.say("no olives on the small pizza")
    assert out.response_key == "clarify-reference-one", out.reply
    assert s.conv.order.items.items[0].fields["size"] == "LARGE"
    assert "order_parse" not in [r.label for r in records]
