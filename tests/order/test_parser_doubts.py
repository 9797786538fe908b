"""Structural doubts found in the honesty work's second round: each test failed before its fix.

A parse the platform takes as-is (confidence >= the threshold and nothing unparsed) must be right; what
the parse can't represent must lower confidence (and name the words) instead of being dropped or guessed.
Utterances here are written for the tests: none is taken from the held-out sets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mojodex_core.order import get_next_action, new_order, parse_deterministic, update_state
from mojodex_core.order.llm_parser import DEFAULT_THRESHOLD
from mojodex_core.order.menu import load_menu

FLORIST = Path(__file__).parent / "conversation" / "fixtures" / "florist.json"


@pytest.fixture(scope="module")
def florist_menu():
    return load_menu(FLORIST)


def flagged(parsed):
    return parsed.confidence < DEFAULT_THRESHOLD or bool(parsed.unparsed)


def run(menu, *texts):
    tree = new_order(menu.id)
    parsed = None
    for text in texts:
        parsed = parse_deterministic(text, menu, tree)
        tree, _diff = update_state(tree, parsed, menu)
        get_next_action(tree, menu)
    return parsed, tree


def live(tree):
    return [it for it in tree.items.items if it.status != "skipped"]


# -- a pause at the end: the order isn't finished -----------------------------------------------
def test_trailing_hold_on_is_a_pause_not_a_finished_order(pizza_menu):
    parsed, _tree = run(pizza_menu, "a medium pizza with sausage, hold on")
    assert flagged(parsed) and "hold on" in parsed.unparsed


def test_trailing_wait_is_a_pause(drive_menu):
    parsed, _tree = run(drive_menu, "two hamburgers and um wait")
    assert flagged(parsed)


def test_wait_then_a_correction_is_still_read(bagel_menu):
    parsed, _tree = run(bagel_menu, "a sesame bagel with butter, wait, with jam")
    assert parsed.new_items and "hold on" not in parsed.unparsed and "wait" not in parsed.unparsed


# -- an amount of an item ("a double espresso") ------------------------------------------------
def test_an_amount_of_an_item_is_a_doubt(bagel_menu):
    parsed, _tree = run(bagel_menu, "a double mocha")
    assert flagged(parsed)


def test_an_extra_item_inside_another_is_a_doubt(bagel_menu):
    parsed, _tree = run(bagel_menu, "a cappuccino with extra espresso")
    assert flagged(parsed)


def test_a_count_of_more_items_is_not_an_amount(drive_menu):
    parsed, tree = run(drive_menu, "a cheeseburger and a sprite", "three more sprites")
    assert not flagged(parsed)
    assert [it.fields.get("quantity") for it in live(tree)][-1] == 3


# -- "but" straight before a value --------------------------------------------------------------
def test_but_before_a_value_is_a_doubt_not_an_addition(pizza_menu):
    parsed, _tree = run(pizza_menu, "a large pizza with the works but olives")
    assert flagged(parsed)


def test_but_before_a_negation_is_fine(bagel_menu):
    parsed, tree = run(bagel_menu, "a plain bagel with lox but no red onion")
    assert not flagged(parsed)
    assert live(tree)[0].fields["excluded_extras"] == ["red onion"]


# -- a negation must leave a trace ---------------------------------------------------------------
def test_a_negated_item_noun_is_not_dropped(drive_menu):
    parsed, _tree = run(drive_menu, "a number 1 with no fries")
    assert flagged(parsed)


def test_actually_no_value_is_not_taken_as_the_value_again(bagel_menu):
    parsed, tree = run(bagel_menu, "a garlic bagel with jam", "actually no jam")
    assert flagged(parsed) or live(tree)[0].fields.get("excluded_spread") == ["jam"]


def test_no_comma_answers_and_does_not_flip_the_next_value(bagel_menu):
    parsed, tree = run(bagel_menu, "an onion bagel", "no, not toasted")
    assert not flagged(parsed)
    assert live(tree)[0].fields["toasted"] is False


def test_instead_of_replaces_without_a_doubt(drive_menu):
    parsed, tree = run(drive_menu, "a number 1 combo with a lemonade instead of coke")
    assert not flagged(parsed)
    assert live(tree)[0].fields["combo_drink"] == "lemonade"


# -- a value said "with" an item that can't take it ---------------------------------------------
def test_a_with_value_of_another_item_type_is_not_a_new_line(bagel_menu):
    parsed, tree = run(bagel_menu, "a plain bagel with hazelnut")  # hazelnut sweetens a coffee here
    assert flagged(parsed)
    assert [it.item_type for it in live(tree)] == ["bagel"]


def test_with_an_item_name_is_still_an_item(drive_menu):
    parsed, tree = run(drive_menu, "a veggie burger with root beer")
    assert not flagged(parsed)
    assert [it.item_type for it in live(tree)] == ["burger", "drink"]


# -- references among several lines of one type -------------------------------------------------
TWO_PIZZAS = ("a small pizza with sausage", "a medium pizza with mushrooms")


def test_remove_the_pizza_with_a_topping_removes_that_pizza(pizza_menu):
    parsed, tree = run(pizza_menu, *TWO_PIZZAS, "remove the pizza with sausage")
    assert not flagged(parsed)
    assert [it.fields["size"] for it in live(tree)] == ["MEDIUM"]


def test_cancel_the_one_with_a_topping_removes_that_one(pizza_menu):
    parsed, tree = run(pizza_menu, *TWO_PIZZAS, "cancel the one with sausage")
    assert not flagged(parsed)
    assert [it.fields["size"] for it in live(tree)] == ["MEDIUM"]


def test_remove_the_pizza_with_two_pizzas_is_ambiguous(pizza_menu):
    parsed, tree = run(pizza_menu, *TWO_PIZZAS, "remove the pizza")
    assert flagged(parsed)
    assert len(live(tree)) == 2


def test_a_change_of_the_coke_with_two_coke_lines_is_ambiguous_not_a_new_line(drive_menu):
    parsed, tree = run(drive_menu, "a sprite and a hamburger and a sprite", "make the sprite small")
    assert flagged(parsed)
    assert [it.fields.get("size") for it in live(tree) if it.item_type == "drink"] == ["medium", "medium"]


def test_a_described_reference_changes_that_line(pizza_menu):
    parsed, tree = run(pizza_menu, *TWO_PIZZAS, "make the pizza with mushrooms thin crust")
    assert not flagged(parsed)
    assert [it.fields.get("style") for it in live(tree)] == [[], ["THIN_CRUST"]]


def test_the_one_with_a_value_is_a_reference_not_a_new_line(pizza_menu):
    parsed, tree = run(pizza_menu, *TWO_PIZZAS, "the one with mushrooms thin crust")
    assert not flagged(parsed)
    assert [it.fields.get("style") for it in live(tree)] == [[], ["THIN_CRUST"]]


# -- part of a line ------------------------------------------------------------------------------
def test_remove_one_of_a_line_of_three_leaves_two(drive_menu):
    parsed, tree = run(drive_menu, "three lemonades and a hamburger", "remove one lemonade")
    assert not flagged(parsed)
    assert [(it.item_type, it.fields["quantity"]) for it in live(tree)] == [("drink", 2), ("burger", 1)]


def test_remove_more_than_the_line_holds_is_a_doubt(drive_menu):
    parsed, tree = run(drive_menu, "two lemonades", "remove three lemonades")
    assert flagged(parsed)
    assert live(tree)[0].fields["quantity"] == 2


# -- changes the order can't take as said --------------------------------------------------------
def test_make_it_an_item_of_another_type_is_a_doubt_not_a_second_line(drive_menu):
    parsed, tree = run(drive_menu, "a veggie burger", "make it a meal")
    assert flagged(parsed)
    assert [it.item_type for it in live(tree)] == ["burger"]


def test_a_new_item_that_a_missing_required_field_could_take_is_a_doubt(drive_menu):
    parsed, _tree = run(drive_menu, "a number 3 combo", "large, and a root beer")
    assert flagged(parsed)  # the combo's drink, or a root beer of its own?


def test_a_new_item_after_the_field_is_filled_is_a_new_line(drive_menu):
    parsed, tree = run(drive_menu, "a number 3 combo, large, with a lemonade", "and a root beer")
    assert not flagged(parsed)
    assert [it.item_type for it in live(tree)] == ["combo", "drink"]


def test_the_large_one_is_a_reference_not_a_new_large_line(pizza_menu):
    parsed, tree = run(pizza_menu, *TWO_PIZZAS, "the large one with mushrooms")
    assert flagged(parsed)  # no large pizza was ordered: which one is meant?
    assert len(live(tree)) == 2


def test_the_medium_one_plus_a_new_value_changes_the_medium_one(pizza_menu):
    parsed, tree = run(pizza_menu, *TWO_PIZZAS, "the medium one thin crust")
    assert not flagged(parsed)
    assert [it.fields.get("style") for it in live(tree)] == [[], ["THIN_CRUST"]]


# -- amounts ------------------------------------------------------------------------------------
def test_two_different_amounts_of_one_value_are_a_doubt(pizza_menu):
    parsed, _tree = run(pizza_menu, "a small pizza with extra light onions")
    assert flagged(parsed)


def test_an_amount_at_a_menu_without_amounts_is_a_doubt(florist_menu):
    parsed, _tree = run(florist_menu, "a bouquet of peonies with extra kraft paper")
    assert flagged(parsed)


def test_an_extra_item_at_a_menu_without_amounts_is_one_more(florist_menu):
    parsed, _tree = run(florist_menu, "an extra bouquet of tulips")
    assert not flagged(parsed) and parsed.new_items[0].fields["flower"] == "tulips"


def test_no_drinks_for_the_whole_order_is_not_a_doubt(drive_menu):
    parsed, _tree = run(drive_menu, "a bacon burger and i won't need a drink")
    assert not flagged(parsed)


# -- an item named by a topping ------------------------------------------------------------------
def test_a_hamburger_at_the_pizzeria_is_not_a_beef_pizza(pizza_menu):
    parsed, _tree = run(pizza_menu, "a hamburger")
    assert flagged(parsed)


def test_and_a_topping_after_a_pizza_is_a_doubt_not_a_topping(pizza_menu):
    parsed, _tree = run(pizza_menu, "a medium pizza and a sausage")
    assert flagged(parsed)


def test_a_size_then_a_topping_is_still_a_pizza(pizza_menu):
    parsed, _tree = run(pizza_menu, "a small sausage")
    assert not flagged(parsed)
    assert parsed.new_items[0].fields == {"size": "SMALL", "toppings": [{"name": "SAUSAGE"}]}


def test_and_a_crust_is_still_the_pizzas_crust(pizza_menu):
    parsed, _tree = run(pizza_menu, "a medium pizza and a thin crust")
    assert not flagged(parsed)


# -- an announced quantity and its named parts ---------------------------------------------------
def test_two_drinks_then_their_names_are_two_drinks_not_four(drive_menu):
    parsed, _tree = run(drive_menu, "two drinks, a lemonade and a root beer")
    assert not flagged(parsed)
    assert [i.fields for i in parsed.new_items] == [{"drink_type": "lemonade"}, {"drink_type": "root beer"}]


def test_two_cokes_and_a_sprite_are_still_three(drive_menu):
    parsed, _tree = run(drive_menu, "two lemonades and a root beer")
    assert [i.fields for i in parsed.new_items] == [{"quantity": 2, "drink_type": "lemonade"},
                                                    {"drink_type": "root beer"}]
