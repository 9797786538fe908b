"""Shop-specific words live in the menu (``fillers``, ``count_words``), not in the language-level grammar."""

from __future__ import annotations

from mojodex_core.order import grammar_words as gw
from mojodex_core.order import parse_deterministic
from mojodex_core.order.menu import Menu

PIZZA_ONLY = {"crust", "crusts", "dough", "base", "slice", "slices", "topping", "toppings", "topped", "pizza-wise"}


def test_grammar_words_carry_no_pizza_vocabulary():
    grammar = {p for phrases in gw.GRAMMAR.values() for p in phrases}
    assert not PIZZA_ONLY & (set(gw.FILLER_WORDS) | grammar)
    assert "topping_word" not in gw.GRAMMAR


def test_pizzeria_menu_declares_its_own_fillers_and_count_words(pizza_menu):
    assert {"crust", "dough"} <= set(pizza_menu.fillers)
    assert "topping" in pizza_menu.count_words
    parsed = parse_deterministic("a two topping pizza with ham and olives on a thin crust", pizza_menu)
    assert [i.fields.get("quantity") for i in parsed.new_items] == [None]
    assert parsed.confidence == 1.0 and parsed.unparsed == []


def test_pizza_words_are_unknown_at_the_bagel_shop(bagel_menu):
    parsed = parse_deterministic("a sesame bagel with a thin crust", bagel_menu)
    assert "crust" in " ".join(parsed.unparsed)


def test_a_menu_without_the_new_keys_still_loads(bagel_menu):
    data = bagel_menu.model_dump()
    data.pop("fillers")
    data.pop("count_words")
    assert Menu.model_validate(data).fillers == []
