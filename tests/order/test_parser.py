from __future__ import annotations

import pytest

from mojodex_core.order import new_order, parse_deterministic, update_state
from mojodex_core.order.exr import to_exr, unordered_equal


def exr(text, menu):
    return to_exr(parse_deterministic(text, menu), menu)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("two large pepperoni pizzas and a diet coke",
         "(PIZZAORDER (NUMBER 2 ) (SIZE LARGE ) (TOPPING PEPPERONI ) ) "
         "(DRINKORDER (NUMBER 1 ) (DRINKTYPE DIET_COKE ) )"),
        ("a pie with no onions or peppers",
         "(PIZZAORDER (NUMBER 1 ) (NOT (TOPPING ONIONS ) ) (NOT (TOPPING PEPPERS ) ) )"),
        ("a personal pie with salami no olives and extra mozzarella",
         ("(PIZZAORDER (NUMBER 1 ) (SIZE PERSONAL_SIZE ) (TOPPING SALAMI ) (NOT (TOPPING OLIVES ) ) "
         "(COMPLEX_TOPPING (QUANTITY EXTRA ) (TOPPING MOZZARELLA_CHEESE ) ) )")),
        ("a pizza with light sauce and a little bit of onions",
         ("(PIZZAORDER (NUMBER 1 ) (COMPLEX_TOPPING (QUANTITY LIGHT ) (TOPPING SAUCE ) ) "
         "(COMPLEX_TOPPING (QUANTITY LIGHT ) (TOPPING ONIONS ) ) )")),
        ("a medium pizza hold the thin crust", "(PIZZAORDER (NUMBER 1 ) (SIZE MEDIUM ) (NOT (STYLE THIN_CRUST ) ) )"),
        ("a pizza without extra cheese",
         "(PIZZAORDER (NUMBER 1 ) (NOT (COMPLEX_TOPPING (QUANTITY EXTRA ) (TOPPING CHEESE ) ) ) )"),
        ("three 500 ml cans of sprite",
         "(DRINKORDER (NUMBER 3 ) (VOLUME 500 ML ) (CONTAINERTYPE CAN ) (DRINKTYPE SPRITE ) )"),
        ("a two liter bottle of coke and a party size pie",
         ("(DRINKORDER (NUMBER 1 ) (VOLUME 2 LITER ) (CONTAINERTYPE BOTTLE ) (DRINKTYPE COKE ) ) "
         "(PIZZAORDER (NUMBER 1 ) (SIZE PARTY_SIZE ) )")),
        ("two seven and a half fl oz cans of coke zero",
         "(DRINKORDER (NUMBER 2 ) (VOLUME 7.5 FLOZ ) (CONTAINERTYPE CAN ) (DRINKTYPE COKE_ZERO ) )"),
        ("a medium pizza with peperonni and pineaple",
         "(PIZZAORDER (NUMBER 1 ) (SIZE MEDIUM ) (TOPPING PEPPERONI ) (TOPPING PINEAPPLE ) )"),
        ("can i get a pepperoni pizza and a sausage pizza",
         "(PIZZAORDER (NUMBER 1 ) (TOPPING PEPPERONI ) ) (PIZZAORDER (NUMBER 1 ) (TOPPING SAUSAGE ) )"),
        ("a hawaiian and a margherita",
         "(PIZZAORDER (NUMBER 1 ) (STYLE HAWAIIAN ) ) (PIZZAORDER (NUMBER 1 ) (STYLE MARGHERITA ) )"),
        ("a large pizza with ham and a small one with pepperoni",
         "(PIZZAORDER (NUMBER 1 ) (SIZE LARGE ) (TOPPING HAM ) ) "
         "(PIZZAORDER (NUMBER 1 ) (SIZE SMALL ) (TOPPING PEPPERONI ) )"),
        ("could we do three medium two topping pies with bacon and spinach",
         "(PIZZAORDER (NUMBER 3 ) (SIZE MEDIUM ) (TOPPING BACON ) (TOPPING SPINACH ) )"),
        ("two pizzas and no drinks please", "(PIZZAORDER (NUMBER 2 ) )"),
        ("twelve medium cokes", "(DRINKORDER (NUMBER 12 ) (SIZE MEDIUM ) (DRINKTYPE COKE ) )"),
    ],
)
def test_pizza_grammar(text, expected, pizza_menu):
    got = exr(text, pizza_menu)
    assert unordered_equal(got, f"(ORDER {expected} )"), got


def test_multi_item_groups_attributes(bagel_menu):
    parsed = parse_deterministic("two sesame bagels with butter and a small hot cappuccino with oat milk", bagel_menu)
    assert [(i.item_type, i.fields) for i in parsed.new_items] == [
        ("bagel", {"quantity": 2, "bagel_type": "sesame", "spread": "butter"}),
        ("coffee", {"size": "small", "iced": False, "drink_type": "cappuccino", "milk": "oat milk"}),
    ]


def test_unknown_words_are_reported_with_lower_confidence(bagel_menu):
    parsed = parse_deterministic("a plain bagel and a hot dog", bagel_menu)
    assert parsed.unparsed == ["dog"] or parsed.unparsed == ["hot dog"]
    assert parsed.confidence < 1.0
    empty = parse_deterministic("blorp zzyzx", bagel_menu)
    assert empty.is_empty() and empty.confidence == 0.0 and empty.unparsed == ["blorp zzyzx"]


def test_answers_and_modifications_use_the_tree(bagel_menu):
    tree, _ = update_state(new_order(bagel_menu.id), parse_deterministic("a plain bagel and a latte", bagel_menu),
                           bagel_menu)
    assert parse_deterministic("no", bagel_menu, tree).answers == {"toasted": False}
    assert parse_deterministic("toasted please", bagel_menu, tree).answers == {"toasted": True}
    mod = parse_deterministic("change the latte to large", bagel_menu, tree).modifications
    assert [(m.item_index, m.field, m.new_value) for m in mod] == [(1, "size", "large")]
    assert parse_deterministic("forget the latte", bagel_menu, tree).cancel_item_index == 1
    assert parse_deterministic("cancel my order", bagel_menu, tree).wants_cancel


def test_intents(bagel_menu):
    p = parse_deterministic("that's all, for pickup. my name is Ana Lopez, 555-123-4567", bagel_menu)
    assert p.wants_checkout and p.order_type == "pickup"
    assert p.customer_name == "Ana Lopez" and p.customer_contact == "555-123-4567"
    p = parse_deterministic("please deliver it to 4 Elm Road", bagel_menu)
    assert (p.order_type, p.address) == ("delivery", "4 Elm Road")


def test_drive_thru_combo_keeps_its_drink(drive_menu):
    parsed = parse_deterministic("a large number 2 combo with a sprite and a chocolate shake", drive_menu)
    assert [(i.item_type, i.fields) for i in parsed.new_items] == [
        ("combo", {"size": "large", "combo": "number 2", "combo_drink": "sprite"}),
        ("drink", {"drink_type": "chocolate shake"}),
    ]
    burger = parse_deterministic("two cheeseburgers no pickles extra onions", drive_menu).new_items[0]
    assert burger.fields == {"quantity": 2, "burger_type": "cheeseburger",
                             "excluded_toppings": [{"name": "pickles"}],
                             "toppings": [{"name": "onion", "quantity": "EXTRA"}]}
