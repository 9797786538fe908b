"""Parser readings the conversation layer relies on: changes by reference over the order."""

from __future__ import annotations

from pathlib import Path

import pytest

from mojodex_core.order.menu import load_menu
from mojodex_core.order.parser import parse_deterministic, referenced_item
from mojodex_core.order.state import update_state
from mojodex_core.order.tree import new_order


def order(menu, *texts):
    tree = new_order(menu.id, menu.currency)
    for text in texts:
        tree, _ = update_state(tree, parse_deterministic(text, menu, tree), menu)
    return tree


def mods(parsed):
    return [(m.item_index, m.field, m.new_value) for m in parsed.modifications]


def test_both_values_over_the_items_already_ordered(drive_menu):
    tree = order(drive_menu, "a coke and fries")
    parsed = parse_deterministic("both large", drive_menu, tree)
    assert mods(parsed) == [(0, "size", "large"), (1, "size", "large")]
    assert parsed.confidence == 1.0 and not parsed.unparsed


def test_both_over_an_item_that_cannot_take_the_value_is_flagged(bagel_menu):
    tree = order(bagel_menu, "a sesame bagel toasted with cream cheese and a hot latte")
    parsed = parse_deterministic("both large", bagel_menu, tree)
    assert not parsed.modifications and parsed.unparsed


def test_should_be_is_a_change_of_the_item_named(bagel_menu):
    tree = order(bagel_menu, "a large iced latte and a plain bagel toasted")
    parsed = parse_deterministic("the bagel should be sesame", bagel_menu, tree)
    assert mods(parsed) == [(1, "bagel_type", "sesame")] and not parsed.new_items and not parsed.unparsed


def test_ordinal_to_no_item_keeps_the_change_asked_for(pizza_menu):
    tree = order(pizza_menu, "a large pizza and a coke")
    parsed = parse_deterministic("make the fourth one small", pizza_menu, tree)
    assert parsed.unparsed == ["the fourth one"] and not parsed.modifications
    assert parsed.reference is not None and parsed.reference.said == "the fourth one"
    assert parsed.reference.fields == {"pizza": {"size": "SMALL"}, "drink": {"size": "SMALL"}}
    assert "reference" not in parsed.model_json_schema()["properties"]  # never asked of the LLM


def test_ordinal_to_an_item_the_values_do_not_fit(pizza_menu):
    tree = order(pizza_menu, "two large pepperoni pizzas and a diet coke")
    parsed = parse_deterministic("make the second one thin crust", pizza_menu, tree)
    assert not parsed.modifications and parsed.unparsed
    assert parsed.reference is not None and parsed.reference.fields == {"pizza": {"style": ["THIN_CRUST"]}}


def test_referenced_item(pizza_menu):
    tree = order(pizza_menu, "two large pepperoni pizzas and a diet coke")
    assert [referenced_item(t, pizza_menu, tree) for t in ("the coke", "the second one", "the pizza", "the first one",
                                                          "blorp", "a pizza and a coke")] == [1, 1, 0, 0, None, None]


def test_pickup_answering_the_name_question_is_not_a_name(bagel_menu):
    from mojodex_core.order.tree import PendingQuestion

    tree = order(bagel_menu, "a large iced latte")
    tree.pending = PendingQuestion(task="customer_name")
    parsed = parse_deterministic("pickup", bagel_menu, tree)
    assert (parsed.order_type, parsed.customer_name, parsed.unparsed) == ("pickup", None, [])
    assert parse_deterministic("Dana", bagel_menu, tree).customer_name == "Dana"


def test_never_mind_alone_cancels_nothing(pizza_menu):
    tree = order(pizza_menu, "a large pizza and a coke")
    parsed = parse_deterministic("never mind", pizza_menu, tree)
    assert parsed.cancel_item_index is None and parsed.is_empty() and not parsed.unparsed
    assert parsed.confidence == 0.5  # nothing to act on, like "hold on"
    assert parse_deterministic("never mind the coke", pizza_menu, tree).cancel_item_index == 1
    assert parse_deterministic("forget it", pizza_menu, tree).cancel_item_index is not None


def test_a_second_removal_is_flagged_not_dropped(pizza_menu):
    """The parse holds one removal: "and the coke" is said, not silently kept (the conversation splits them)."""
    tree = order(pizza_menu, "a large pizza and a coke and a sprite")
    parsed = parse_deterministic("remove the pizza and the coke", pizza_menu, tree)
    assert parsed.cancel_item_index == 0 and parsed.unparsed == ["coke"]  # flagged: the LLM or a question
    kept = parse_deterministic("forget the pizza. Just the coke.", pizza_menu, tree)
    assert kept.cancel_item_index == 0 and not kept.unparsed


def test_a_street_address_said_unasked_is_not_items(pizza_menu):
    florist_menu = load_menu(Path(__file__).parent / "conversation" / "fixtures" / "florist.json")
    tree = order(florist_menu, "a bouquet of roses")
    parsed = parse_deterministic("12 Rose Lane", florist_menu, tree)  # not 12 bouquets of roses
    assert (parsed.address, parsed.order_type, parsed.new_items, parsed.unparsed) == (
        "12 Rose Lane", "delivery", [], [])
    assert parse_deterministic("2 large pizzas", pizza_menu).new_items[0].fields["quantity"] == 2


def test_a_value_no_ordered_item_takes_is_reported_and_kept_not_added(bagel_menu):
    """"honey" after a bagel: refused words are never also applied (a coffee with honey added anyway)."""
    tree = order(bagel_menu, "a plain bagel toasted")
    parsed = parse_deterministic("honey", bagel_menu, tree)
    assert not parsed.new_items and not parsed.modifications and parsed.unparsed == ["honey"]
    assert parsed.reference is not None and parsed.reference.new_item
    assert parsed.reference.fields == {"coffee": {"sweetener": "honey"}}


def test_a_definite_reference_to_nothing_ordered_is_not_a_new_line(pizza_menu):
    tree = order(pizza_menu, "a coke")
    parsed = parse_deterministic("pepperoni on the large pizza", pizza_menu, tree)
    assert not parsed.new_items and parsed.unparsed
    assert parsed.reference is not None and parsed.reference.new_item
    assert parsed.reference.fields == {"pizza": {"toppings": [{"name": "PEPPERONI"}], "size": "LARGE"}}


def test_values_several_lines_fit_keep_the_change_and_the_lines(pizza_menu, bagel_menu):
    tree = order(pizza_menu, "a large pizza with olives and a medium pizza with ham")
    parsed = parse_deterministic("make it small", pizza_menu, tree)
    assert not parsed.modifications and parsed.unparsed == ["small"]
    assert parsed.reference is not None and not parsed.reference.new_item
    assert (parsed.reference.fields, parsed.reference.items) == ({"pizza": {"size": "SMALL"}}, [0, 1])
    tree = order(bagel_menu, "a plain bagel with bacon and a sesame bagel with bacon")
    parsed = parse_deterministic("remove the bacon", bagel_menu, tree)
    assert not parsed.modifications and parsed.reference is not None
    assert (parsed.reference.fields, parsed.reference.items) == ({"bagel": {"excluded_extras": ["bacon"]}}, [0, 1])


def test_a_reference_doubt_keeps_only_the_change_not_what_names_the_lines(pizza_menu):
    tree = order(pizza_menu, "a diet coke and a cherry coke")
    parsed = parse_deterministic("make the coke large", pizza_menu, tree)
    assert parsed.reference is not None and parsed.reference.fields == {"drink": {"size": "LARGE"}}


@pytest.mark.parametrize("text", ["remove the bacon from both", "no bacon on either", "take the bacon off both"])
def test_values_taken_off_both_lines_that_hold_them(bagel_menu, text):
    tree = order(bagel_menu, "a plain bagel with bacon and a sesame bagel with bacon", "a latte")
    parsed = parse_deterministic(text, bagel_menu, tree)
    assert mods(parsed) == [(0, "excluded_extras", ["bacon"]), (1, "excluded_extras", ["bacon"])]
    assert parsed.confidence == 1.0 and not parsed.unparsed


def test_both_over_one_line_holding_the_value_is_flagged(bagel_menu):
    tree = order(bagel_menu, "a plain bagel with bacon and a sesame bagel with lox", "an onion bagel with lox")
    parsed = parse_deterministic("remove the bacon from both", bagel_menu, tree)
    assert not parsed.modifications and parsed.unparsed


@pytest.mark.parametrize("text, item", [("no olives on the large pizza", 0), ("no olives on the small one", 1),
                                        ("hold the olives on the large thin crust pizza", 0)])
def test_a_description_after_the_values_names_the_line(pizza_menu, text, item):
    tree = order(pizza_menu, "a large thin crust pizza with olives and a small pizza with olives")
    parsed = parse_deterministic(text, pizza_menu, tree)
    assert mods(parsed) == [(item, "excluded_toppings", [{"name": "OLIVES"}])] and not parsed.new_items
    assert not parsed.unparsed


@pytest.mark.parametrize("text, field", [("no spread", "spread"), ("no extras", "extras"), ("no toppings", "extras"),
                                         ("without any spread", "spread")])
def test_a_field_named_as_a_whole_and_negated_is_cleared(bagel_menu, text, field):
    tree = order(bagel_menu, "a plain bagel toasted with butter and lox", "a latte")
    parsed = parse_deterministic(text, bagel_menu, tree)
    assert mods(parsed) == [(0, field, None)] and parsed.confidence == 1.0 and not parsed.unparsed


def test_field_nouns_leave_counts_and_qualifiers_alone(pizza_menu, bagel_menu):
    parsed = parse_deterministic("a large two topping pizza with ham and olives", pizza_menu)
    assert parsed.new_items[0].fields["toppings"] == [{"name": "HAM"}, {"name": "OLIVES"}] and not parsed.unparsed
    parsed = parse_deterministic("a large pizza with extra cheese", pizza_menu)
    assert parsed.new_items[0].fields["toppings"] == [{"name": "CHEESE", "quantity": "EXTRA"}]
    parsed = parse_deterministic("a plain bagel with extra lox", bagel_menu)
    assert parsed.new_items[0].fields["extras"] == ["lox"] and parsed.unparsed == ["extra lox"]
