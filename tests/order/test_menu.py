from __future__ import annotations

import pytest

from mojodex_core.order.menu import Menu, MenuError, get_menu, load_menu

from .conftest import MENUS


def test_all_menus_load_and_seed_fields(bagel_menu):
    for path in MENUS.glob("*.json"):
        assert load_menu(path).item_types
    bagel = bagel_menu.item_types["bagel"].fields
    assert list(bagel) == ["bagel_type", "quantity", "toasted", "spread", "extras"]
    assert (bagel["bagel_type"].required, bagel["bagel_type"].default) == (True, None)
    assert (bagel["quantity"].default, bagel["toasted"].default) == (1, None)
    assert bagel["spread"].question == "Any spread - cream cheese, butter?" and not bagel["spread"].required
    assert bagel["extras"].multi and bagel["extras"].question == "Anything else on it - lox, bacon, tomato?"
    coffee = bagel_menu.item_types["coffee"].fields
    assert list(coffee) == ["drink_type", "quantity", "size", "iced", "milk", "sweetener"]
    assert coffee["size"].default == "medium" and coffee["iced"].required and coffee["iced"].default is None
    assert get_menu("bagel_shop") is bagel_menu


@pytest.mark.parametrize(
    "broken",
    [
        {"id": "x", "name": "x", "item_types": {}},
        {"id": "x", "name": "x", "item_types": {"a": {"label": "a", "fields": {"size": {"kind": "choice"}}}}},
        {"id": "x", "name": "x", "item_types": {"a": {"label": "a", "fields": {
            "quantity": {"kind": "int", "default": 1},
            "size": {"kind": "choice", "default": "huge", "values": [{"id": "small"}]}}}}},
    ],
)
def test_invalid_menus_are_rejected(broken):
    with pytest.raises(ValueError):
        Menu.model_validate(broken)


def test_missing_menu_file(tmp_path):
    with pytest.raises(MenuError, match="cannot read menu"):
        load_menu(tmp_path / "nope.json")
    with pytest.raises(MenuError):
        get_menu("../etc/passwd")


def test_missing_in_use_names_item_types_and_values_a_menu_dropped(pizza_menu):
    from mojodex_core.order_runtime.menus import missing_in_use

    items = [
        {"item_type": "pizza", "status": "complete", "fields": {"size": "LARGE", "toppings": [
            {"name": "HAM", "qualifier": "EXTRA"}, "TRUFFLE"]}},
        {"item_type": "calzone", "status": "pending", "fields": {}},
        {"item_type": "boat", "status": "skipped", "fields": {}},  # removed from the order: not in use
    ]
    assert missing_in_use(pizza_menu, items) == {"pizza.toppings TRUFFLE", "calzone"}

    # A reviewer found a field dropped whole let the upload through: the order kept a topping the menu no longer
    # priced, and its ticket listed it.
    no_toppings = pizza_menu.model_copy(deep=True)
    del no_toppings.item_types["pizza"].fields["toppings"]
    assert missing_in_use(no_toppings, items[:1]) == {"pizza.toppings"}
    assert missing_in_use(no_toppings, [{"item_type": "pizza", "fields": {"size": "LARGE", "toppings": []}}]) == set()


def test_an_exclusion_held_by_a_live_order_is_no_field_of_the_menu(pizza_menu):
    """1722367 named "pizza.excluded_toppings" as a field the menu dropped: any live order with "no onions" made
    every replacement of its menu a 409."""
    from mojodex_core.order_runtime.menus import missing_in_use

    item = {"item_type": "pizza", "fields": {"size": "LARGE", "excluded_toppings": [{"name": "ONIONS"}]}}
    assert missing_in_use(pizza_menu, [item]) == set()


def test_missing_in_use_names_fields_that_no_longer_take_the_value_held(pizza_menu):
    """A tester made a live burger's toppings single (multi false) or text, and its max_qty 2 under a line of 3:
    each upload was a 200, and the order lost its topping surcharge."""
    from mojodex_core.order_runtime.menus import missing_in_use

    item = {"item_type": "pizza", "status": "complete",
            "fields": {"quantity": 3, "size": "LARGE", "toppings": [{"name": "HAM"}],
                       "excluded_toppings": [{"name": "ONIONS"}]}}
    assert missing_in_use(pizza_menu, [item]) == set()  # an exclusion ("no onions") is no field of the menu's
    single = pizza_menu.model_copy(deep=True)
    single.item_types["pizza"].fields["toppings"].multi = False
    assert missing_in_use(single, [item]) == {"pizza.toppings"}
    text = pizza_menu.model_copy(deep=True)
    text.item_types["pizza"].fields["toppings"] = text.item_types["pizza"].fields["toppings"].model_copy(
        update={"kind": "text", "values": [], "multi": False})
    assert missing_in_use(text, [item]) == {"pizza.toppings"}
    fewer = pizza_menu.model_copy(deep=True)
    fewer.item_types["pizza"].max_qty = 2
    assert missing_in_use(fewer, [item]) == {"pizza.quantity 3"}
