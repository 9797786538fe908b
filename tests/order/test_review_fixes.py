"""Regression tests for the reviewed bugs: nothing the customer said is dropped or misread.

Each test failed before its fix.
"""

from __future__ import annotations

from mojodex_core.order import (
    Modification,
    ParsedInput,
    ParsedItem,
    get_next_action,
    new_order,
    parse_deterministic,
    update_state,
)


def step(tree, text, menu):
    parsed = parse_deterministic(text, menu, tree)
    tree, diff = update_state(tree, parsed, menu)
    return parsed, tree, diff, get_next_action(tree, menu)


def run(menu, *texts):
    tree = new_order(menu.id)
    for text in texts:
        _, tree, _, _ = step(tree, text, menu)
    return tree


def kinds(diff):
    return [(e.kind, e.subject) for e in diff.errors]


def _two_items(bagel_menu):
    return run(bagel_menu, "a sesame bagel toasted with cream cheese and a large iced latte", "no thanks")


def _at_checkout(bagel_menu):
    tree = run(bagel_menu, "a plain bagel toasted with cream cheese", "no thanks", "pickup")
    assert tree.pending is not None and tree.pending.task == "checkout"
    return tree


# 1 + 2 -------------------------------------------------------------------------------------
def test_modification_on_cancelled_item_is_an_error(bagel_menu):
    tree = _two_items(bagel_menu)
    _, tree, _, _ = step(tree, "forget the bagel", bagel_menu)
    assert tree.items.items[0].status == "skipped"
    parsed = ParsedInput(modifications=[Modification(item_index=0, field="toasted", new_value=False)])
    new, diff = update_state(tree, parsed, bagel_menu)
    assert kinds(diff) == [("unknown_item", "sesame bagel")]
    assert new.items.items[0].fields["toasted"] is True and not new.last_turn.modified
    assert "No problem" not in get_next_action(new, bagel_menu).text


def test_modification_with_out_of_range_index_changes_nothing(bagel_menu):
    tree = _two_items(bagel_menu)
    parsed = ParsedInput(modifications=[Modification(item_index=7, field="toasted", new_value=False)])
    new, diff = update_state(tree, parsed, bagel_menu)
    assert [e.kind for e in diff.errors] == ["unknown_item"]
    assert [it.fields for it in new.items.items] == [it.fields for it in tree.items.items]


# 3 -------------------------------------------------------------------------------------------
def test_item_answers_without_items_are_reported(bagel_menu):
    _, diff = update_state(new_order(bagel_menu.id), ParsedInput(answers={"toasted": True}), bagel_menu)
    assert [e.kind for e in diff.errors] == ["not_understood"] and "toasted" in diff.errors[0].subject


def test_payment_method_checked_against_offered_options(bagel_menu):
    tree = _at_checkout(bagel_menu)
    _, tree, _, _ = step(tree, "yes", bagel_menu)  # confirmed; pickup order
    assert tree.checkout.confirmed
    new, diff = update_state(tree, ParsedInput(answers={"method": "bitcoin"}), bagel_menu)
    assert [e.kind for e in diff.errors] == ["invalid_value"] and new.payment.method is None
    new, diff = update_state(tree, ParsedInput(answers={"method": "cash_delivery"}), bagel_menu)
    assert [e.kind for e in diff.errors] == ["invalid_value"] and new.payment.method is None
    assert "cash on delivery" in diff.errors[0].message and "in store" in diff.errors[0].message
    new, diff = update_state(tree, ParsedInput(answers={"method": "in_store"}), bagel_menu)
    assert not diff.errors and new.payment.method == "in_store"
    parsed, new, diff, _ = step(tree, "cash", bagel_menu)  # cash on a pickup order is paid in store
    assert not diff.errors and new.payment.method == "in_store"


def test_payment_before_checkout_is_not_silently_taken(bagel_menu):
    tree = _two_items(bagel_menu)
    new, diff = update_state(tree, ParsedInput(answers={"method": "card_link"}), bagel_menu)
    assert diff.errors and new.payment.method is None
    assert diff.errors[0].message in get_next_action(new, bagel_menu).text


# 4 -------------------------------------------------------------------------------------------
def test_clearing_a_required_field_is_not_a_change(bagel_menu):
    tree = run(bagel_menu, "a plain bagel toasted")
    parsed = ParsedInput(modifications=[Modification(item_index=0, field="bagel_type", new_value=None)])
    new, diff = update_state(tree, parsed, bagel_menu)
    assert new.items.items[0].fields["bagel_type"] == "plain" and not new.last_turn.modified
    assert "No problem" not in get_next_action(new, bagel_menu).text


# 5 -------------------------------------------------------------------------------------------
def test_item_change_after_confirmation_requires_a_new_review(bagel_menu):
    tree = _at_checkout(bagel_menu)
    _, tree, _, action = step(tree, "yes", bagel_menu)
    assert tree.checkout.confirmed and action.kind == "ask"
    for text in ("and a large iced latte", "make it 2", "forget the bagel"):
        _, new, _, _ = step(tree, text, bagel_menu)
        assert not new.checkout.confirmed, text
        assert (new.pending is not None and new.pending.task == "checkout") or not new.checkout.order_reviewed, text
    _, new, _, action = step(tree, "and a large iced latte", bagel_menu)
    _, new, _, action = step(new, "no thanks", bagel_menu)
    assert action.kind == "checkout" and "latte" in action.text


def test_confirming_and_changing_in_one_message_does_not_confirm(bagel_menu):
    tree = _at_checkout(bagel_menu)
    _, new, _, action = step(tree, "yes and a coffee", bagel_menu)
    assert not new.checkout.confirmed


# 6 + 7 ---------------------------------------------------------------------------------------
def test_yes_is_not_a_street(bagel_menu):
    tree = run(bagel_menu, "a plain bagel toasted with cream cheese", "no thanks", "delivery")
    assert tree.pending.task == "address"
    for text in ("yes", "sure", "ok sure"):
        parsed, new, diff, action = step(tree, text, bagel_menu)
        assert parsed.address is None and new.delivery_method.address is None, text
        assert action.field == "address" and [e.kind for e in diff.errors] == ["not_understood"]
    parsed, new, _, _ = step(tree, "12 Main Street", bagel_menu)
    assert new.delivery_method.address.street == "12 Main Street"
    parsed, new, _, _ = step(tree, "Elm Avenue", bagel_menu)
    assert new.delivery_method.address.street == "Elm Avenue"


def test_refusals_are_not_names(bagel_menu):
    tree = _at_checkout(bagel_menu)
    _, tree, _, action = step(tree, "yes", bagel_menu)
    assert tree.pending.task == "customer_name"
    for text in ("yes", "no thanks", "I'd rather not say", "no"):
        parsed, new, _, action = step(tree, text, bagel_menu)
        assert parsed.customer_name is None and new.customer_info.name is None, text
        assert action.field == "name", text
    for text, name in (("it's Sam", "Sam"), ("Maria Lopez", "Maria Lopez"), ("Will", "Will")):
        parsed, _, _, _ = step(tree, text, bagel_menu)
        assert parsed.customer_name == name


# 8 -------------------------------------------------------------------------------------------
def test_make_it_n_sets_the_quantity(bagel_menu):
    tree = _two_items(bagel_menu)
    parsed, new, diff, action = step(tree, "actually make it 3", bagel_menu)
    assert not parsed.unparsed and not diff.errors
    assert new.items.items[1].fields["quantity"] == 3  # the current (last) item: the latte
    parsed, new, diff, action = step(tree, "make it 0", bagel_menu)
    assert [e.kind for e in diff.errors] == ["quantity_out_of_range"]
    assert "latte" in diff.errors[0].subject and "0" in diff.errors[0].subject
    assert new.items.items[1].fields["quantity"] == 1 and diff.errors[0].message in action.text


def test_cancel_item_not_in_order_is_named(bagel_menu):
    tree = run(bagel_menu, "a sesame bagel toasted with cream cheese")
    parsed, new, diff, action = step(tree, "cancel the latte", bagel_menu)
    assert kinds(diff) == [("unknown_item", "latte")] and "latte" in action.text
    assert new.items.items[0].status != "skipped"
    parsed, new, diff, action = step(tree, "cancel the coke", bagel_menu)  # not on this menu
    assert kinds(diff) == [("not_understood", "coke")] and new.items.items[0].status != "skipped"
    parsed = ParsedInput(cancel_item_index=9)
    _, diff = update_state(tree, parsed, bagel_menu)
    assert kinds(diff) == [("unknown_item", "item 10")]


def test_ordinal_refers_to_the_item(bagel_menu):
    tree = _two_items(bagel_menu)
    parsed, new, _, _ = step(tree, "forget the second one", bagel_menu)
    assert parsed.cancel_item_index == 1 and new.items.items[1].status == "skipped"
    parsed, new, diff, _ = step(tree, "forget the third one", bagel_menu)
    assert kinds(diff) == [("unknown_item", "third item")]


def test_empty_parse_with_content_words_is_not_understood(bagel_menu):
    tree = _two_items(bagel_menu)
    parsed = parse_deterministic("make it", bagel_menu, tree)
    assert parsed.unparsed and parsed.confidence == 0.0
    parsed = parse_deterministic("actually make it 3", bagel_menu)  # nothing to apply it to
    assert parsed.unparsed == ["actually make it 3"] and parsed.confidence == 0.0
    parsed = parse_deterministic("yes please", bagel_menu)  # no content words: not an error
    assert not parsed.unparsed


# 9 -------------------------------------------------------------------------------------------
def test_negated_single_choice_is_not_the_value(bagel_menu):
    parsed = parse_deterministic("a plain bagel, no onions", bagel_menu)
    assert [(i.item_type, i.fields) for i in parsed.new_items] == [("bagel", {"bagel_type": "plain"})]
    parsed = parse_deterministic("a sesame bagel, not the onion one", bagel_menu)
    assert [(i.item_type, i.fields) for i in parsed.new_items] == [("bagel", {"bagel_type": "sesame"})]


def test_dont_want_an_item_negates_it(bagel_menu):
    parsed = parse_deterministic("I don't want a latte, just a plain bagel", bagel_menu)
    assert [(i.item_type, i.fields) for i in parsed.new_items] == [("bagel", {"bagel_type": "plain"})]
    tree = _two_items(bagel_menu)
    parsed, new, _, _ = step(tree, "I don't want the latte", bagel_menu)
    assert parsed.cancel_item_index == 1 and not parsed.new_items


def test_conflicting_single_choice_values_are_not_overwritten(bagel_menu):
    parsed = parse_deterministic("a sesame plain bagel", bagel_menu)
    assert parsed.unparsed and parsed.confidence < 1.0
    assert parsed.new_items[0].fields.get("bagel_type") == "sesame"


# 10 ------------------------------------------------------------------------------------------
def test_parts_are_taken_out_of_the_announced_number(pizza_menu, drive_menu):
    parsed = parse_deterministic("three pizzas, one with mushrooms", pizza_menu)
    got = [(i.fields.get("quantity"), i.fields.get("toppings")) for i in parsed.new_items]
    assert got == [(2, None), (1, [{"name": "MUSHROOMS"}])]
    parsed = parse_deterministic("two large pizzas one with ham", pizza_menu)
    assert [(i.fields.get("quantity"), i.fields.get("size")) for i in parsed.new_items] == [(1, "LARGE"), (1, "LARGE")]
    parsed = parse_deterministic("two cheeseburgers, one without pickles", drive_menu)
    assert [(i.fields.get("quantity"), i.fields.get("burger_type")) for i in parsed.new_items] == [
        (1, "cheeseburger"), (1, "cheeseburger")]
    assert parsed.new_items[1].fields["excluded_toppings"] == [{"name": "pickles"}]
    # parts after "and" that follow the whole's own "with" stay separate lines
    parsed = parse_deterministic("two pizzas with ham and one with olives", pizza_menu)
    assert [i.fields.get("quantity") for i in parsed.new_items] == [2, 1]


# minor ---------------------------------------------------------------------------------------
def test_bool_is_not_a_quantity_and_messages_read_well(bagel_menu):
    parsed = ParsedInput(new_items=[ParsedItem(item_type="bagel", fields={"quantity": True})])
    new, diff = update_state(new_order(bagel_menu.id), parsed, bagel_menu)
    assert not new.items.items and [e.kind for e in diff.errors] == ["quantity_out_of_range"]
    parsed = ParsedInput(new_items=[ParsedItem(item_type="bagel", fields={"quantity": None})])
    new, diff = update_state(new_order(bagel_menu.id), parsed, bagel_menu)  # None: not said, default 1
    assert not diff.errors and new.items.items[0].fields["quantity"] == 1
    parsed = ParsedInput(new_items=[ParsedItem(item_type="bagel", fields={"quantity": 2.5})])
    _, diff = update_state(new_order(bagel_menu.id), parsed, bagel_menu)
    assert "2.5 bagel" not in diff.errors[0].message and "bagels" in diff.errors[0].message
    _, diff = update_state(new_order(bagel_menu.id),
                           ParsedInput(new_items=[ParsedItem(item_type="bagel", fields={"quantity": 30})]), bagel_menu)
    assert "between 1 and 24 bagels" in diff.errors[0].message and diff.errors[0].subject == "30 bagels"
