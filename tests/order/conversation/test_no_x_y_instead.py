""""no olives, mushrooms instead": the clause closed by a bare "instead" replaces the negated value.

The negation ends at the comma (or dash); the values after it are added, as "mushrooms instead of olives"
already reads. Without that closing "instead" (or with "instead of" naming another value) the negation
keeps its scope, as before.
"""

from __future__ import annotations

import pytest

from .conftest import Session

PIZZA = {"quantity": 1, "size": "LARGE", "style": []}


@pytest.mark.parametrize("said", [
    "no olives, mushrooms instead",
    "no olives - mushrooms instead",
    "no olives, mushrooms instead please",
    "no olives, i'll have mushrooms instead",
    "not olives, mushrooms instead",
    "mushrooms instead of olives",
])
def test_no_olives_mushrooms_instead_swaps_the_topping(pizza_menu, said):
    s = Session(pizza_menu)
    out = s.run("a large pizza with olives", said)
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "MUSHROOMS"}],
                                            "excluded_toppings": [{"name": "OLIVES"}]})]
    assert out.reply == "No problem, large pizza with mushrooms and no olives. Is this for pickup or delivery?"


def test_the_swap_keeps_the_other_toppings(pizza_menu):
    s = Session(pizza_menu)
    s.run("a large pizza with olives and ham", "no olives, mushrooms instead")
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "HAM"}, {"name": "MUSHROOMS"}],
                                            "excluded_toppings": [{"name": "OLIVES"}]})]


def test_the_swap_said_with_the_pizza(pizza_menu):
    s = Session(pizza_menu)
    out = s.run("a large pizza no olives, mushrooms instead")
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "MUSHROOMS"}],
                                            "excluded_toppings": [{"name": "OLIVES"}]})]
    assert out.reply.startswith("Got it, a large pizza with mushrooms and no olives.")


def test_no_butter_jam_instead_swaps_the_spread(bagel_menu):
    s = Session(bagel_menu)
    out = s.run("a plain bagel with butter", "no butter, jam instead")
    assert s.lines() == [("bagel", {"bagel_type": "plain", "quantity": 1, "toasted": None, "spread": "jam",
                                    "extras": [], "excluded_spread": ["butter"]})]
    assert out.reply == "No problem, plain bagel with jam and no butter. Would you like the plain bagel toasted?"


def test_no_pickles_onions_instead_swaps_the_burger_topping(drive_menu):
    s = Session(drive_menu)
    out = s.run("a hamburger with pickles", "no pickles, onions instead")
    assert s.lines() == [("burger", {"burger_type": "hamburger", "quantity": 1, "toppings": [{"name": "onion"}],
                                     "excluded_toppings": [{"name": "pickles"}]})]
    assert out.reply == "No problem, hamburger with onion and no pickles. Is this for pickup or delivery?"


# near misses: the negation keeps its scope, as before
@pytest.mark.parametrize("said", [
    "no olives, mushrooms",  # no "instead": both negated
    "no olives and mushrooms instead",  # no comma or dash: "and" keeps the list negated
    "no olives, mushrooms instead of ham",  # "instead of" names what the mushrooms replace
    "no olives, mushrooms instead and a coke",  # the clause goes on past "instead"
])
def test_without_a_clause_closed_by_instead_mushrooms_stay_negated(pizza_menu, said):
    s = Session(pizza_menu)
    s.run("a large pizza with olives", said)
    pizza = s.lines()[0]
    assert pizza[0] == "pizza" and pizza[1]["toppings"] == []
    assert {"name": "MUSHROOMS"} in pizza[1]["excluded_toppings"]
