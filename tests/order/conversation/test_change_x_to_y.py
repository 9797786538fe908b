""""change the pepperoni to sausage": a whole message swapping a value held on one line for another of its field.

Read only in its narrowest shape (see ``mojodex_core/order/substitution.py``): X comes off that line and Y goes on
(in a list X is taken off, not excluded: the read-back says what is on the pizza). Any other shape reads as before.
"""

from __future__ import annotations

import pytest

from mojodex_core.order.lexicon import get_lexicon
from mojodex_core.order.substitution import substitution
from mojodex_core.order.tokens import tokenize

from .conftest import Session

PIZZA = {"quantity": 1, "size": "LARGE", "style": []}
SWAPPED = PIZZA | {"toppings": [{"name": "SAUSAGE"}]}  # no "no pepperoni": the read-back says what is on it


@pytest.mark.parametrize("said", [
    "change the pepperoni to sausage",
    "replace pepperoni with sausage",
    "swap the pepperoni for sausage please",
    "switch pepperoni to sausage, thanks",
    "Please change the pepperoni to sausage.",
    "replace the pepperoni with the sausage thank you",
])
def test_the_topping_is_swapped_not_excluded(pizza_menu, said):
    s = Session(pizza_menu)
    out = s.run("a large pepperoni pizza", said)
    assert s.lines() == [("pizza", SWAPPED)]
    assert out.reply == "No problem, large pizza with sausage. Is this for pickup or delivery?"


def test_the_cheese_of_a_cheese_pizza_is_swapped(pizza_menu):
    s = Session(pizza_menu)
    out = s.run("a small cheese pizza", "change the cheese to ham")
    assert s.lines() == [("pizza", {"quantity": 1, "size": "SMALL", "style": [], "toppings": [{"name": "HAM"}]})]
    assert out.reply == "No problem, small pizza with ham. Is this for pickup or delivery?"


def test_the_crust_is_swapped_not_excluded(pizza_menu):
    s = Session(pizza_menu)
    out = s.run("a large thin crust bacon pizza", "swap the thin crust for a stuffed crust")
    assert s.lines() == [("pizza", PIZZA | {"style": ["STUFFED_CRUST"], "toppings": [{"name": "BACON"}]})]
    assert out.reply == "No problem, large stuffed crust pizza with bacon. Is this for pickup or delivery?"


def test_the_other_toppings_stay(pizza_menu):
    s = Session(pizza_menu)
    s.run("a large pizza with extra ham and pepperoni", "change the pepperoni to sausage")
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "HAM", "quantity": "EXTRA"}, {"name": "SAUSAGE"}]})]


def test_a_value_excluded_before_comes_back_as_y(pizza_menu):
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza with no olives", "change the pepperoni to olives")
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "OLIVES"}]})]


def test_a_single_choice_is_replaced(pizza_menu):
    s = Session(pizza_menu)
    out = s.run("a large pepperoni pizza", "change the large to a medium")
    assert s.lines() == [("pizza", PIZZA | {"size": "MEDIUM", "toppings": [{"name": "PEPPERONI"}]})]
    assert out.reply.startswith("No problem, medium pizza with pepperoni.")


def test_the_line_holding_x_is_changed(pizza_menu):
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza and a small pizza with ham", "swap the pepperoni for sausage")
    assert [fields.get("toppings") for _, fields in s.lines()] == [[{"name": "SAUSAGE"}], [{"name": "HAM"}]]


def test_the_spread_is_swapped(bagel_menu):
    s = Session(bagel_menu)
    out = s.run("a plain bagel with butter", "change butter to cream cheese")
    # a single choice: set, which replaces the butter (no "and no butter")
    assert s.lines() == [("bagel", {"bagel_type": "plain", "quantity": 1, "toasted": None, "spread": "cream cheese",
                                    "extras": []})]
    # the question that was next is still asked
    assert out.reply == "No problem, plain bagel with cream cheese. Would you like the plain bagel toasted?"


def test_the_combo_drink_is_swapped_no_drink_added(drive_menu):
    s = Session(drive_menu)
    out = s.run("a number 1 combo medium with a coke", "change the coke to a sprite")
    assert s.lines() == [("combo", {"combo": "number 1", "quantity": 1, "size": "medium", "combo_drink": "sprite",
                                    "toppings": []})]
    assert out.reply.startswith("No problem, medium number 1 classic burger combo with sprite.")


def test_a_required_question_is_still_asked(pizza_menu):
    s = Session(pizza_menu)
    s.run("a pepperoni pizza")
    out = s.say("change the pepperoni to sausage")
    assert s.lines()[0][1]["toppings"] == [{"name": "SAUSAGE"}]
    assert s.conv.order.pending is not None and s.conv.order.pending.field == "size"
    out = s.say("large")
    assert s.lines() == [("pizza", SWAPPED)]
    assert "pickup or delivery" in out.reply


# not the shape: read as before (the frame grammar), never as a swap
@pytest.mark.parametrize("said", [
    "make that sausage",
    "make that sausage too",
    "don't change the pepperoni to sausage",
    "change the pepperoni to sausage and add ham",
    "change the pepperoni to sausage too",
    "change the pepperoni to sausage as well",
    "change the size to large",
    "change 2 pepperoni to 3 pepperoni",
    "change the pepperoni to extra pepperoni",
    "change the pepperoni to extra sausage",
    "change it to sausage",
    "change my mind",
    "change the pepperoni to sausage?",
    "can you change the pepperoni to sausage",
    "change the pepperoni on the large pizza to sausage",
    "change the pepperoni to sausage and ham",
    "change the pepperoni to sausage, and a coke",
    "change the ham to sausage",  # not on the order
    "change the pepperoni to pepperoni",
    "change the pepperoni to large",  # another field
    "change the pepperoni to a coke",  # another item
])
def test_other_shapes_are_not_a_swap(pizza_menu, said):
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza with olives")
    assert _swap(pizza_menu, s, said) is None


@pytest.mark.parametrize("turns, said", [
    (("a large pepperoni pizza and a small pepperoni pizza",), "swap the pepperoni for sausage"),  # two lines
    (("a large pizza with pepperoni and sausage",), "change the pepperoni to sausage"),  # Y already there
    (("a large pizza with extra pepperoni",), "change the pepperoni to sausage"),  # an amount: not guessed
])
def test_an_unclear_line_is_not_a_swap(pizza_menu, turns, said):
    s = Session(pizza_menu)
    s.run(*turns)
    assert _swap(pizza_menu, s, said) is None


def test_an_out_of_stock_y_is_not_a_swap(bagel_menu):
    s = Session(bagel_menu)
    s.run("a plain bagel with butter")
    assert _swap(bagel_menu, s, "change the plain to blueberry") is None
    assert _swap(bagel_menu, s, "change the plain to sesame") is not None


def _swap(menu, s, said):
    return substitution(said, get_lexicon(menu).chunk(tokenize(said)), menu, s.conv.order)


def test_the_bagel_holding_x_is_changed_when_another_holds_y(bagel_menu):
    s = Session(bagel_menu)
    s.run("a plain bagel with butter and a sesame bagel with cream cheese", "change the butter to cream cheese")
    assert [(f["bagel_type"], f["spread"]) for _, f in s.lines()] == [("plain", "cream cheese"),
                                                                      ("sesame", "cream cheese")]


def test_a_swap_back_comes_back(pizza_menu):
    s = Session(pizza_menu)
    out = s.run("a large pepperoni pizza", "change the pepperoni to sausage", "change the sausage to pepperoni")
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "PEPPERONI"}]})]
    assert out.reply.startswith("No problem, large pizza with pepperoni.")


def test_the_size_of_the_one_line_holding_it_changes(pizza_menu):
    s = Session(pizza_menu)
    s.run("a small pepperoni pizza and a large coke", "change the large to a medium")
    assert [f["size"] for _, f in s.lines()] == ["SMALL", "MEDIUM"]
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza and a large coke")
    assert _swap(pizza_menu, s, "change the large to a medium") is None  # two lines: which one? not guessed


@pytest.mark.parametrize("menu, order, said, question", [
    ("bagel_menu", "a plain bagel with butter", "change the butter to jam", "Would you like the plain bagel toasted?"),
    ("pizza_menu", "a large pepperoni pizza", "change the pepperoni to sausage", "Is this for pickup or delivery?"),
    ("pizza_menu", "a small cheese pizza", "change the cheese to ham", "Is this for pickup or delivery?"),
    ("pizza_menu", "a large thin crust pizza with ham", "swap the thin crust for a stuffed crust",
     "Is this for pickup or delivery?"),
    ("pizza_menu", "a large pepperoni pizza and a coke", "change the large to a medium",
     "Is this for pickup or delivery?"),
    ("drive_menu", "a number 1 combo medium with a coke", "change the coke to a sprite",
     "Is this for pickup or delivery?"),
])
def test_a_swap_said_again_is_done_already(request, menu, order, said, question):
    menu = request.getfixturevalue(menu)
    s = Session(menu)
    s.run(order, said)
    swapped = s.lines()
    mods = _swap(menu, s, said)
    assert mods is not None and len(mods) == 1  # the field set to what it holds: nothing changes
    assert s.conv.order.items.items[mods[0].item_index].fields[mods[0].field] == mods[0].new_value
    out = s.say(said)
    assert s.lines() == swapped  # not X put back, no line added
    assert out.reply == question  # understood: the conversation goes on, as after "make it large" on a large one


@pytest.mark.parametrize("turns, said", [
    (("a large sausage pizza and a small sausage pizza",), "change the pepperoni to sausage"),  # Y on two lines
    (("a large pizza with ham",), "change the pepperoni to sausage"),  # neither held
    (("a large pepperoni pizza", "change the pepperoni to sausage"), "change the pepperoni to large"),  # not X's field
])
def test_a_swap_not_held_is_not_done_already(pizza_menu, turns, said):
    s = Session(pizza_menu)
    s.run(*turns)
    assert _swap(pizza_menu, s, said) is None
