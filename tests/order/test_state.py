from __future__ import annotations

from mojodex_core.order import (
    Modification,
    OrderTask,
    ParsedInput,
    ParsedItem,
    get_next_action,
    new_order,
    parse_deterministic,
    update_state,
)


def step(tree, text, menu):
    tree, diff = update_state(tree, parse_deterministic(text, menu, tree), menu)
    return tree, diff, get_next_action(tree, menu)


def test_update_state_does_not_mutate_input(bagel_menu):
    tree = new_order(bagel_menu.id)
    before = tree.model_dump()
    new_tree, diff = update_state(tree, parse_deterministic("a plain bagel", bagel_menu), bagel_menu)
    assert tree.model_dump() == before and new_tree is not tree
    assert diff.ops[0].op == "add_item" and diff.ops[0].path == "items[0]"


def test_tree_json_round_trip(pizza_menu):
    text = "two large pizzas with extra cheese and no onions and a coke"
    tree, _, _ = step(new_order(pizza_menu.id), text, pizza_menu)
    again = OrderTask.from_json(tree.to_json())
    assert again == tree
    assert get_next_action(again, pizza_menu) == get_next_action(tree, pizza_menu)


def test_errors_name_what_was_asked_for(bagel_menu, drive_menu):
    tree, diff, action = step(new_order(bagel_menu.id), "a blueberry bagel toasted", bagel_menu)
    assert [(e.kind, e.subject) for e in diff.errors] == [("out_of_stock", "blueberry")]
    assert action.text.startswith("Sorry, we're out of blueberry today.")
    assert tree.items.items[0].fields["bagel_type"] is None  # the bagel stays, its type is asked again
    assert action.field == "bagel_type"

    tree, diff, action = step(new_order(bagel_menu.id), "thirty plain bagels", bagel_menu)
    assert not tree.items.items and diff.errors[0].kind == "quantity_out_of_range"
    assert "30 bagel" in diff.errors[0].subject and "between 1 and 24" in action.text

    parsed = ParsedInput(new_items=[ParsedItem(item_type="burger", fields={"burger_type": "veggie burger"})])
    tree, diff = update_state(new_order(drive_menu.id), parsed, drive_menu)
    assert diff.errors[0].kind == "out_of_stock" and "veggie burger" in diff.errors[0].message

    parsed = ParsedInput(new_items=[ParsedItem(item_type="bagel", fields={"bagel_type": "rainbow"})])
    _, diff = update_state(new_order(bagel_menu.id), parsed, bagel_menu)
    assert (diff.errors[0].kind, diff.errors[0].subject) == ("not_on_menu", "rainbow")

    _, diff, action = step(new_order(bagel_menu.id), "a plain bagel and a hot dog", bagel_menu)
    assert any(e.kind == "not_understood" and "dog" in e.subject for e in diff.errors)
    assert "dog" in action.text


def test_never_asks_filled_or_defaulted_fields(bagel_menu):
    _, _, action = step(new_order(bagel_menu.id), "a large iced latte", bagel_menu)
    assert action.kind == "ask" and action.task == "order_type"  # nothing left to ask on the coffee
    _tree, _, action = step(new_order(bagel_menu.id), "a latte", bagel_menu)
    assert action.field == "iced"  # size defaults to medium: not asked


def test_optional_question_is_offered_once(bagel_menu):
    tree, _, action = step(new_order(bagel_menu.id), "an onion bagel toasted", bagel_menu)
    assert action.text == "Any spread - cream cheese, butter?"
    tree, _, action = step(tree, "no thanks", bagel_menu)
    assert action.text == "Anything else on it - lox, bacon, tomato?"
    tree, _, action = step(tree, "bacon please", bagel_menu)
    assert tree.items.items[0].fields["extras"] == ["bacon"]
    assert action.task == "order_type"


def test_modifications_and_exclusions(pizza_menu):
    tree, _, _ = step(new_order(pizza_menu.id), "a large pizza with ham and mushrooms", pizza_menu)
    parsed = ParsedInput(modifications=[
        Modification(item_type="pizza", field="excluded_toppings", new_value=[{"name": "MUSHROOMS"}]),
        Modification(field="size", new_value="SMALL"),
    ])
    tree, _diff = update_state(tree, parsed, pizza_menu)
    pizza = tree.items.items[0]
    assert pizza.fields["toppings"] == [{"name": "HAM"}]
    assert pizza.fields["excluded_toppings"] == [{"name": "MUSHROOMS"}]
    assert pizza.fields["size"] == "SMALL" and tree.last_turn.modified == [0]
    assert get_next_action(tree, pizza_menu).text.startswith("No problem, small pizza with ham and no mushrooms.")


def test_totals_use_menu_prices(pizza_menu):
    tree, _, _ = step(new_order(pizza_menu.id), "two large pizzas with ham and extra cheese and a large coke",
                      pizza_menu)
    pizza, coke = tree.items.items
    assert pizza.unit_price == 13.5 + 1.5 + 2 * 1.0  # large + ham + extra (double) cheese
    assert coke.unit_price == 2.75
    assert tree.total() == round(2 * 17.0 + 2.75, 2)
    assert "Total: $36.75" in tree.get_display_summary()


def test_progress_and_missing_fields(pizza_menu):
    tree, _, action = step(new_order(pizza_menu.id), "a pizza with ham and a coke", pizza_menu)
    assert tree.get_missing_fields()[:1] == ["items[0].size"]
    assert 0 < tree.get_progress() < 1
    assert tree.items.items[0].get_progress() == 0.5
    assert action.text == "What size would you like the pizza - small, medium, large or extra large?"
    tree, _, action = step(tree, "large", pizza_menu)
    assert tree.items.items[0].fields["size"] == "LARGE" and action.task == "order_type"


def test_cancel_whole_order(bagel_menu):
    tree, _, _ = step(new_order(bagel_menu.id), "a plain bagel and a latte", bagel_menu)
    tree, _diff, action = step(tree, "cancel my order", bagel_menu)
    assert all(it.status == "skipped" for it in tree.items.items) and tree.status == "skipped"
    assert action.text == "No problem, I've cancelled the order. What can I get for you today?"


def test_a_value_given_again_takes_back_its_exclusion(pizza_menu):
    """The later statement wins: "no ham" then "add ham" is ham, never "ham and no ham"."""
    tree, _, _ = step(new_order(pizza_menu.id), "a large pizza with ham and olives", pizza_menu)
    exclude = ParsedInput(modifications=[
        Modification(item_type="pizza", field="excluded_toppings", new_value=[{"name": "HAM"}, {"name": "OLIVES"}])])
    tree, _ = update_state(tree, exclude, pizza_menu)
    assert tree.items.items[0].fields["toppings"] == []  # excluding takes the value off (the other direction)
    add = ParsedInput(modifications=[Modification(item_type="pizza", field="toppings", new_value=[{"name": "HAM"}])])
    tree, diff = update_state(tree, add, pizza_menu)
    pizza = tree.items.items[0]
    assert pizza.fields["toppings"] == [{"name": "HAM"}]
    assert pizza.fields["excluded_toppings"] == [{"name": "OLIVES"}]
    assert tree.last_turn.modified == [0]
    assert [op.path for op in diff.ops] == ["items[0].toppings", "items[0].excluded_toppings"]
    assert get_next_action(tree, pizza_menu).text.startswith("No problem, large pizza with ham and no olives.")
    tree, _ = update_state(tree, ParsedInput(modifications=[
        Modification(item_type="pizza", field="toppings", new_value=[{"name": "OLIVES"}])]), pizza_menu)
    assert tree.items.items[0].fields["toppings"] == [{"name": "HAM"}, {"name": "OLIVES"}]
    assert "excluded_toppings" not in tree.items.items[0].fields  # as if never excluded


def test_a_single_choice_set_takes_back_its_exclusion(bagel_menu):
    tree, _, _ = step(new_order(bagel_menu.id), "a plain bagel, no cream cheese", bagel_menu)
    assert tree.items.items[0].fields["excluded_spread"] == ["cream cheese"]
    parsed = ParsedInput(modifications=[Modification(item_type="bagel", field="spread", new_value="cream cheese")])
    tree, _ = update_state(tree, parsed, bagel_menu)
    bagel = tree.items.items[0]
    assert bagel.fields["spread"] == "cream cheese" and "excluded_spread" not in bagel.fields
    assert tree.last_turn.modified == [0]
