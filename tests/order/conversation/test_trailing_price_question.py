""""add mushrooms, how much is that?": the mushrooms were added, then the whole message was said back as not on the
menu ('Sorry, we don't have "add mushrooms, how much is that"'). A price question referring back ("how much is
that/it/this (now)", "what's the total (now)") set off by a comma, a period or "and" at the end of a message that
orders something is answered with the order's price once the order is changed; anything else reads as before."""

from __future__ import annotations

import pytest

from .conftest import Session

PEPPERONI = {"name": "PEPPERONI"}
MUSHROOMS = {"name": "MUSHROOMS"}
MUSHROOM_PIZZA = [("pizza", {"quantity": 1, "size": "LARGE", "style": [], "toppings": [PEPPERONI, MUSHROOMS]})]


@pytest.mark.parametrize("text", [
    "add mushrooms, how much is that?",
    "add mushrooms. How much is it now?",
    "add mushrooms and what's the total?",
    "add mushrooms , what is the total now",
    "can you add mushrooms, how much is this?",
])
def test_a_trailing_price_question_is_answered_with_the_new_price(pizza_menu, text):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza")
    out = s.say(text)
    assert s.lines() == MUSHROOM_PIZZA
    assert out.reply == ("No problem, large pizza with pepperoni and mushrooms. The large pizza with pepperoni and "
                         "mushrooms is $16.00. Is this for pickup or delivery?")
    assert out.response_keys == ["ack-modified", "menu-price", "ask-order-type"]


def test_several_lines_are_said_with_their_total(drive_menu):
    s = Session(drive_menu)
    s.say("a cheeseburger")
    out = s.say("add a large fries, what's the total?")
    assert out.reply == ("Got it, a large fries. Together, a cheeseburger and a large fries come to $9.25. "
                         "Is this for pickup or delivery?")


def test_the_french_tail_is_answered_too(pizza_menu):
    s = Session(pizza_menu, "fr")
    s.say("a large pepperoni pizza")
    out = s.say("add mushrooms, ça fait combien ?")
    assert s.lines() == MUSHROOM_PIZZA
    assert out.reply == ("Pas de problème, large pizza with pepperoni and mushrooms. Le large pizza with pepperoni "
                         "and mushrooms coûte 16.00 $. C'est à emporter ou en livraison ?")


def test_a_line_whose_price_is_still_open_is_not_priced(drive_menu):
    """A burger of no kind yet: its price waits for the kind, asked next - as the message without the question."""
    s = Session(drive_menu)
    out = s.say("can i get a burger, how much is that?")
    assert [it for it, _ in s.lines()] == ["burger"]
    assert out.reply == Session(drive_menu).say("can i get a burger").reply


def test_an_option_the_price_does_not_wait_for_leaves_the_line_priced(bagel_menu):
    """"iced or hot?" changes no price: the latte is priced while it is asked."""
    s = Session(bagel_menu)
    out = s.say("can i get a large latte, how much is that?")
    assert out.reply == "The large latte is $4.75. Would you like the latte iced or hot?"


@pytest.mark.parametrize("text", [
    "add mushrooms how much is that",  # no comma, period or "and" before it
    "add mushrooms, how much is a coke?",  # names something: not a reference back
    "add mushrooms, how much",
])
def test_other_tails_read_as_before(pizza_menu, text):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza")
    out = s.say(text)
    assert "menu-price" not in out.response_keys
