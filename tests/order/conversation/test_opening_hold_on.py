""""hold on, ..." opening a message: a pause set off by a comma or a dash, dropped; the rest read as if sent alone.
Without that comma "hold on mushrooms" stays the misheard "hold the mushrooms", as before."""

from __future__ import annotations

import pytest

from .conftest import Session

PEPPERONI = {"name": "PEPPERONI"}
MUSHROOMS = {"name": "MUSHROOMS"}


@pytest.mark.parametrize("text", [
    "hold on, mushrooms on that",
    "Hold on - mushrooms on that",
    "oh, hold on a sec - mushrooms on that",
    "um hold on a second, mushrooms on that",
    "ok hold on \u2014 mushrooms on that",
])
def test_an_opening_hold_on_with_a_comma_is_a_pause_and_the_rest_is_ordered(pizza_menu, text):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza")
    out = s.say(text)
    assert s.lines() == [("pizza", {"quantity": 1, "size": "LARGE", "style": [],
                                    "toppings": [PEPPERONI, MUSHROOMS]})]
    assert out.reply == "No problem, large pizza with pepperoni and mushrooms. Is this for pickup or delivery?"


@pytest.mark.parametrize("text", [
    "hold on, no mushrooms",
    "hold on, hold the mushrooms",
    "hold on mushrooms",  # no comma: "hold on" read as "hold the", as before
    "hold the mushrooms",
    "but hold on, mushrooms",  # not opening the message
])
def test_hold_the_and_hold_on_without_a_comma_still_exclude(pizza_menu, text):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza")
    out = s.say(text)
    assert s.lines() == [("pizza", {"quantity": 1, "size": "LARGE", "style": [], "toppings": [PEPPERONI],
                                    "excluded_toppings": [MUSHROOMS]})]
    assert out.reply == "No problem, large pizza with pepperoni and no mushrooms. Is this for pickup or delivery?"


@pytest.mark.parametrize("text", ["hold on", "hold on,", "hold on, let me think"])
def test_hold_on_alone_still_asks_for_nothing_and_waits(pizza_menu, text):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza")
    out = s.say(text)
    assert s.lines() == [("pizza", {"quantity": 1, "size": "LARGE", "style": [], "toppings": [PEPPERONI]})]
    assert out.reply == "Sure, take your time - just tell me when you're ready."


@pytest.mark.parametrize("text", [
    "hold on, not sure about the drink yet",
    "hold on, let me check with my kids",
    "hold on, still deciding on the combo",
    "hold on a second, which fries... let me think",
])
def test_an_opening_hold_on_followed_by_more_time_still_waits(drive_menu, text):
    # The rest still takes time: the message is read whole, as before, nothing added ("which fries" opens no fries).
    s = Session(drive_menu)
    s.say("a cheeseburger")
    out = s.say(text)
    assert s.lines() == [("burger", {"burger_type": "cheeseburger", "quantity": 1, "toppings": []})]
    assert out.reply == "Sure, take your time - just tell me when you're ready."


def test_an_opening_hold_on_before_another_combo_is_read_as_the_combo_said_alone(drive_menu):
    paused, alone = Session(drive_menu), Session(drive_menu)
    paused.say("a number 2 combo")
    alone.say("a number 2 combo")
    out = paused.say("hold on, number 3 please")
    assert (out.reply, paused.lines()) == ((same := alone.say("number 3 please")).reply, alone.lines())
    assert same.reply == "Would you like the number 2 cheeseburger combo medium or large?"
    assert [fields["combo"] for _, fields in paused.lines()] == ["number 2", "number 3"]
