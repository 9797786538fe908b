""""how much to add mushrooms?" said alone asks the price and changes nothing; said with anything more (a request,
a second clause) it is read as before."""

from __future__ import annotations

import pytest

from .conftest import Session

OLIVES_PIZZA = ("pizza", {"quantity": 1, "size": "LARGE", "style": [], "toppings": [{"name": "OLIVES"}]})


@pytest.mark.parametrize("text", [
    "how much to add mushrooms",
    "How much would it be to add mushrooms?",
    "what does it cost to add mushrooms",
    "what's the price for adding mushrooms please?",
    "how much is it to add some mushrooms?",
])
def test_a_price_question_about_adding_a_value_is_answered_and_adds_nothing(pizza_menu, text):
    s = Session(pizza_menu)
    s.say("a large pizza with olives")
    out = s.say(text)
    assert out.intent == "menu_question"
    assert out.reply == "Mushrooms is $1.00 extra. Is this for pickup or delivery?"
    assert s.lines() == [OLIVES_PIZZA]


def test_a_price_question_about_adding_a_drink_quotes_it_and_orders_nothing(drive_menu):
    s = Session(drive_menu)
    s.say("a cheeseburger")
    out = s.say("how much is it to add a large fries?")
    assert out.reply == "The large fries is $3.00. Is this for pickup or delivery?"
    assert s.lines() == [("burger", {"burger_type": "cheeseburger", "quantity": 1, "toppings": []})]


@pytest.mark.parametrize("text", [
    "how much? I need to add mushrooms",
    "how much to add mushrooms? add them",
    "how much to add mushrooms and add onions",
    "add mushrooms, how much to add mushrooms",
    "how much to add mushrooms - and mushrooms please",
    "how much to add olives, mushrooms",
])
def test_a_price_question_with_a_request_still_orders(pizza_menu, text):
    s = Session(pizza_menu)
    s.say("a large pizza with olives")
    out = s.say(text)
    assert out.intent == "order_entry"
    assert s.lines()[0][1]["toppings"][:2] == [{"name": "OLIVES"}, {"name": "MUSHROOMS"}]
