"""Parser readings the conversation layer relies on: changes by reference over the order."""

from __future__ import annotations

from mojodex_core.order.parser import parse_deterministic
from mojodex_core.order.state import update_state
from mojodex_core.order.tree import new_order


def order(menu, *texts):
    tree = new_order(menu.id, menu.currency)
    for text in texts:
        tree, _ = update_state(tree, parse_deterministic(text, menu, tree), menu)
    return tree


def mods(parsed):
    return [(m.item_index, m.field, m.new_value) for m in parsed.modifications]


def test_both_values_over_the_items_already_ordered(drive_menu):
    tree = order(drive_menu, "a coke and fries")
    parsed = parse_deterministic("both large", drive_menu, tree)
    assert mods(parsed) == [(0, "size", "large"), (1, "size", "large")]
    assert parsed.confidence == 1.0 and not parsed.unparsed


def test_both_over_an_item_that_cannot_take_the_value_is_flagged(bagel_menu):
    tree = order(bagel_menu, "a sesame bagel toasted with cream cheese and a hot latte")
    parsed = parse_deterministic("both large", bagel_menu, tree)
    assert not parsed.modifications and parsed.unparsed


def test_should_be_is_a_change_of_the_item_named(bagel_menu):
    tree = order(bagel_menu, "a large iced latte and a plain bagel toasted")
    parsed = parse_deterministic("the bagel should be sesame", bagel_menu, tree)
    assert mods(parsed) == [(1, "bagel_type", "sesame")] and not parsed.new_items and not parsed.unparsed
