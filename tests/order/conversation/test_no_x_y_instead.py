""""no olives, mushrooms instead": the clause closed by a bare "instead" replaces the negated value.

The negation ends at the comma (or dash); the values after it are added, as "mushrooms instead of olives"
already reads. Without that closing "instead" (or with "instead of" naming another value) the negation keeps
its scope, as before. A bare "and" ends it only after ONE value negated by a plain "no" ("no olives and
mushrooms instead"): "remove the olives and mushrooms instead" takes both off, as before.
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
    "remove the olives, mushrooms instead",
    "hold the olives, mushrooms instead",
    "without olives, mushrooms instead",
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
    "no olives, mushrooms instead of ham",  # "instead of" names what the mushrooms replace
    "no olives, mushrooms instead and a coke",  # the clause goes on past "instead"
])
def test_without_a_clause_closed_by_instead_mushrooms_stay_negated(pizza_menu, said):
    s = Session(pizza_menu)
    s.run("a large pizza with olives", said)
    pizza = s.lines()[0]
    assert pizza[0] == "pizza" and pizza[1]["toppings"] == []
    assert {"name": "MUSHROOMS"} in pizza[1]["excluded_toppings"]


# the same clause after a bare "and": "no olives and mushrooms instead" is mushrooms instead of olives
@pytest.mark.parametrize("said", [
    "no olives and mushrooms instead",
    "no olives and mushrooms instead please",
    "no olives & mushrooms instead",
    "can i get no olives and mushrooms instead",
    "no olives and i'll have mushrooms instead",
])
def test_no_olives_and_mushrooms_instead_swaps_the_topping(pizza_menu, said):
    s = Session(pizza_menu)
    out = s.run("a large pizza with olives", said)
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "MUSHROOMS"}],
                                            "excluded_toppings": [{"name": "OLIVES"}]})]
    assert out.reply == "No problem, large pizza with mushrooms and no olives. Is this for pickup or delivery?"


def test_the_and_swap_keeps_the_other_items_and_toppings(pizza_menu):
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza with olives and a coke", "no olives and mushrooms instead")
    assert s.lines()[0] == ("pizza", PIZZA | {"toppings": [{"name": "PEPPERONI"}, {"name": "MUSHROOMS"}],
                                              "excluded_toppings": [{"name": "OLIVES"}]})
    assert [kind for kind, _ in s.lines()] == ["pizza", "drink"]


def test_the_and_swap_said_with_the_pizza(pizza_menu):
    s = Session(pizza_menu)
    out = s.run("a large pizza no olives and mushrooms instead")
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "MUSHROOMS"}],
                                            "excluded_toppings": [{"name": "OLIVES"}]})]
    assert out.reply.startswith("Got it, a large pizza with mushrooms and no olives.")


def test_no_butter_and_jam_instead_swaps_the_spread(bagel_menu):
    s = Session(bagel_menu)
    out = s.run("a plain bagel with butter", "no butter and jam instead")
    assert s.lines() == [("bagel", {"bagel_type": "plain", "quantity": 1, "toasted": None, "spread": "jam",
                                    "extras": [], "excluded_spread": ["butter"]})]
    assert out.reply == "No problem, plain bagel with jam and no butter. Would you like the plain bagel toasted?"


def test_no_pickles_and_onions_instead_swaps_the_burger_topping(drive_menu):
    s = Session(drive_menu)
    out = s.run("a hamburger with pickles", "no pickles and onions instead")
    assert s.lines() == [("burger", {"burger_type": "hamburger", "quantity": 1, "toppings": [{"name": "onion"}],
                                     "excluded_toppings": [{"name": "pickles"}]})]
    assert out.reply == "No problem, hamburger with onion and no pickles. Is this for pickup or delivery?"


# near misses with "and": the negation keeps its scope over both, as before
@pytest.mark.parametrize("said", [
    "no olives and mushrooms",  # no "instead"
    "no olives and no mushrooms",  # each negated
    "no olives and no mushrooms instead",  # the second value negated itself
    "no olives and mushrooms instead of ham",  # "instead of" names what the mushrooms replace
    "no olives and mushrooms instead and a coke",  # the clause goes on past "instead"
    # not a plain "no": take both off, instead of what was said before
    "remove the olives and mushrooms instead",
    "hold the olives and mushrooms instead",
    "hold on olives and mushrooms instead",
    "without olives and mushrooms instead",
    "no more olives and mushrooms instead",
    "not olives and mushrooms instead",
    "don't want olives and mushrooms instead",
    # more than one value negated before the "and": the list goes on
    "no olives and ham and mushrooms instead",
    "no olives and mushrooms and ham instead",
])
def test_without_an_and_clause_closed_by_instead_mushrooms_stay_negated(pizza_menu, said):
    s = Session(pizza_menu)
    s.run("a large pizza with olives", said)
    pizza = s.lines()[0]
    assert pizza[0] == "pizza" and pizza[1]["toppings"] == []
    assert {"name": "OLIVES"} in pizza[1]["excluded_toppings"]
    assert {"name": "MUSHROOMS"} in pizza[1]["excluded_toppings"]


def test_two_values_after_the_and_read_as_a_dropped_comma(pizza_menu):
    # "no olives and mushrooms ham instead": the ham replaces both, as before (not "mushrooms and ham instead")
    s = Session(pizza_menu)
    s.run("a large pizza with olives", "no olives and mushrooms ham instead")
    assert s.lines() == [("pizza", PIZZA | {"toppings": [{"name": "HAM"}],
                                            "excluded_toppings": [{"name": "OLIVES"}, {"name": "MUSHROOMS"}]})]
