"""A line never holds a value and its exclusion at once: what was said later wins."""

from __future__ import annotations

import pytest

from .conftest import Session


@pytest.mark.parametrize("turns, fields, said", [
    (("a large pizza with ham", "no ham", "add ham"),
     {"toppings": [{"name": "HAM"}]}, "No problem, large pizza with ham."),
    (("a large pizza with olives", "mushrooms instead of olives", "olives instead of mushrooms"),
     {"toppings": [{"name": "OLIVES"}], "excluded_toppings": [{"name": "MUSHROOMS"}]},
     "No problem, large pizza with olives and no mushrooms."),
])
def test_a_pizza_topping_taken_off_and_put_back_is_on(pizza_menu, turns, fields, said):
    s = Session(pizza_menu)
    out = s.run(*turns)
    assert s.lines() == [("pizza", {"quantity": 1, "size": "LARGE", "style": []} | fields)]
    assert out.reply.startswith(said)


def test_a_burger_topping_taken_off_and_put_back_is_on(drive_menu):
    s = Session(drive_menu)
    out = s.run("a cheeseburger with onions", "no onions", "add onions")
    assert s.lines() == [("burger", {"burger_type": "cheeseburger", "quantity": 1, "toppings": [{"name": "onion"}]})]
    assert out.reply.startswith("No problem, cheeseburger with onion.")


@pytest.mark.parametrize("turns, line", [
    (("a plain bagel, no cream cheese", "with cream cheese"),
     ("bagel", {"bagel_type": "plain", "quantity": 1, "toasted": None, "spread": "cream cheese", "extras": []})),
    (("a small coffee with oat milk", "no oat milk", "with oat milk"),
     ("coffee", {"drink_type": None, "quantity": 1, "size": "small", "iced": None, "milk": "oat milk",
                 "sweetener": None})),
])
def test_a_single_choice_excluded_then_asked_for_is_set(bagel_menu, turns, line):
    s = Session(bagel_menu)
    s.run(*turns)
    assert s.lines() == [line]
