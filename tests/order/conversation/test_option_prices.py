"""The price of options named alone: "how much is tomato?" at the drive-thru was answered with the combo's price
(tomato has no price of its own), and "how much are mushrooms and olives?" priced the mushrooms only."""

from __future__ import annotations

import pytest

from mojodex_core.order.conversation.menu_answers import answer_menu_question
from mojodex_core.order.menu import get_menu

from .conftest import Session


@pytest.mark.parametrize("menu_id, question, reply", [
    ("drive_thru", "how much is tomato", "Tomato comes at no extra charge."),
    ("drive_thru", "what does special sauce cost?", "Special sauce comes at no extra charge."),
    ("pizzeria", "how much is oregano?", "Oregano comes at no extra charge."),
    ("bagel_shop", "how much is honey?", "Honey comes at no extra charge."),
])
def test_an_option_without_a_price_comes_at_no_extra_charge(menu_id, question, reply):
    s = Session(get_menu(menu_id))
    out = s.say(question)
    assert out.intent == "menu_question"
    assert out.reply == f"{reply} What can I get for you today?"
    assert not s.lines()


def test_an_option_without_a_price_is_said_so_after_an_ordered_item(drive_menu):
    s = Session(drive_menu)
    s.say("a cheeseburger")
    out = s.say("how much is tomato?")
    assert out.reply == "Tomato comes at no extra charge. Is this for pickup or delivery?"
    assert s.lines() == [("burger", {"burger_type": "cheeseburger", "quantity": 1, "toppings": []})]


def test_the_french_text_says_no_extra_charge(drive_menu):
    assert answer_menu_question("combien coûte tomato ?", drive_menu, "fr") == [
        ("menu-price-option-free", "Tomato : sans supplément.")]


@pytest.mark.parametrize("menu_id, question", [
    ("drive_thru", "how much is cheese?"),  # free on the combo, $0.75 on the burger, $1.00 as the fries' style
    ("bagel_shop", "how much is plain?"),  # a kind of bagel: its price is the bagel's
    ("drive_thru", "how much is tomato on the combo?"),  # the item named: the item is priced
    ("pizzeria", "how much is a can?"),  # a canned drink: the drink is priced, not the can
    ("pizzeria", "how much is an 8 oz"),
])
def test_no_free_claim_where_the_option_is_priced_elsewhere_or_names_the_item(menu_id, question):
    [(key, text)] = answer_menu_question(question, get_menu(menu_id), "en")
    assert key != "menu-price-option-free" and "no extra charge" not in text, text


@pytest.mark.parametrize("menu_id, question, reply", [
    ("pizzeria", "how much are mushrooms and olives", "Mushrooms is $1.00 extra. Olives is $1.00 extra."),
    ("pizzeria", "how much are mushrooms, olives and oregano?",
     "Mushrooms is $1.00 extra. Olives is $1.00 extra. Oregano comes at no extra charge."),
    ("drive_thru", "how much are tomato and bacon?", "Tomato comes at no extra charge. Bacon is $1.50 extra."),
    ("bagel_shop", "what do lox and capers cost?", "Lox is $4.00 extra. Capers is $0.75 extra."),
])
def test_every_option_named_is_priced(menu_id, question, reply):
    s = Session(get_menu(menu_id))
    out = s.say(question)
    assert out.reply == f"{reply} What can I get for you today?"
    assert not s.lines()


def test_items_priced_together_are_still_their_total(drive_menu):
    out = Session(drive_menu).say("how much are fries and a coke")
    assert out.reply == "Together, a fries and a coke come to $4.25. What can I get for you today?"
