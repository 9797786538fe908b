"""The item a price question names, said by its name: "how much is a burger with tomato?" was answered "The with
tomato is $5.50." and "how much is coffee and small?" "The small is $2.75." - the summary of an item whose kind
is not said has no name in it (the kind is the name), so the label is said in its place."""

from __future__ import annotations

import pytest

from mojodex_core.order.menu import get_menu

from .conftest import Session


@pytest.mark.parametrize("menu_id, question, answer", [
    ("drive_thru", "how much is a burger with tomato", "The burger with tomato is $5.50."),
    ("drive_thru", "how much is a burger with bacon?", "The burger with bacon is $7.00."),
    ("bagel_shop", "how much is coffee and small", "The small coffee is $2.75."),
    ("bagel_shop", "how much is a small coffee?", "The small coffee is $2.75."),
    ("drive_thru", "how much is a large drink", "The large drink is $2.25."),
])
def test_an_item_whose_kind_is_not_said_is_named_by_its_label(menu_id, question, answer):
    s = Session(get_menu(menu_id))
    out = s.say(question)
    assert out.intent == "menu_question"
    assert out.reply == f"{answer} What can I get for you today?"
    assert not s.lines()


@pytest.mark.parametrize("menu_id, question, answer", [
    ("drive_thru", "how much is a cheeseburger with tomato", "The cheeseburger with tomato is $6.25."),
    ("bagel_shop", "how much is a large latte", "The large latte is $4.75."),
    ("pizzeria", "how much is a large pizza with mushrooms", "The large pizza with mushrooms is $14.50."),
])
def test_an_item_whose_kind_is_said_reads_as_before(menu_id, question, answer):
    assert Session(get_menu(menu_id)).say(question).reply == f"{answer} What can I get for you today?"
