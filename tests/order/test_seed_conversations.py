"""The seed document's three example conversations, turn by turn.

Driven through the deterministic parser + update_state + get_next_action; each turn
checks the parse, the tree (fields and statuses) and the bot's reply.
"""

from __future__ import annotations

from mojodex_core.order import get_next_action, new_order, parse_deterministic, update_state
from mojodex_core.order.parsed_input import Modification


def turn(tree, text, menu):
    parsed = parse_deterministic(text, menu, tree)
    new_tree, diff = update_state(tree, parsed, menu)
    return parsed, new_tree, diff, get_next_action(new_tree, menu)


def test_example_1_multi_item_order(bagel_menu):
    tree = new_order(bagel_menu.id)
    assert get_next_action(tree, bagel_menu).text == "What can I get for you today?"

    text = "Hi, I'd like an everything bagel with lox and a large iced latte"
    parsed, tree, diff, action = turn(tree, text, bagel_menu)
    assert [(i.item_type, i.fields) for i in parsed.new_items] == [
        ("bagel", {"bagel_type": "everything", "extras": ["lox"]}),
        ("coffee", {"drink_type": "latte", "size": "large", "iced": True}),
    ]
    assert parsed.unparsed == [] and parsed.confidence == 1.0
    bagel, coffee = tree.items.items
    assert bagel.fields["bagel_type"] == "everything" and bagel.fields["extras"] == ["lox"]
    assert bagel.fields["toasted"] is None and bagel.status == "in_progress"
    assert coffee.fields | {} == {"drink_type": "latte", "quantity": 1, "size": "large", "iced": True,
                                  "milk": None, "sweetener": None}
    assert coffee.status == "pending"
    assert bagel.get_missing_fields() == ["toasted"]
    assert action.kind == "ask" and (action.item_index, action.field) == (0, "toasted")
    assert action.text == "Would you like the everything bagel toasted?"

    parsed, tree, diff, action = turn(tree, "Yes please", bagel_menu)
    assert parsed.answers == {"toasted": True} and not parsed.new_items
    bagel, coffee = tree.items.items
    assert bagel.fields["toasted"] is True
    assert (bagel.status, coffee.status) == ("complete", "complete")
    assert tree.items.status == "complete" and tree.delivery_method.status == "pending"
    assert action.field == "order_type"
    assert action.text == ("Got it - an everything bagel toasted with lox, and a large iced latte. "
                           "Is this for pickup or delivery?")
    assert {"op": "set", "path": "items[0].toasted", "old": None, "new": True} in [o.model_dump() for o in diff.ops]


def test_example_2_correction_mid_flow(bagel_menu):
    tree = new_order(bagel_menu.id)
    parsed, tree, _, action = turn(tree, "I want a sesame bagel toasted with cream cheese", bagel_menu)
    assert parsed.new_items[0].fields == {"bagel_type": "sesame", "toasted": True, "spread": "cream cheese"}
    bagel = tree.items.items[0]
    assert bagel.status == "in_progress"  # the optional extras question is still open
    assert action.text == "Anything else on it - lox, bacon, tomato?"
    assert tree.pending is not None and tree.pending.field == "extras" and tree.pending.optional

    parsed, tree, _, action = turn(tree, "Actually, make that not toasted. And add a coffee.", bagel_menu)
    assert parsed.modifications == [Modification(item_index=0, field="toasted", new_value=False)]
    assert [(i.item_type, i.fields) for i in parsed.new_items] == [("coffee", {})]
    bagel, coffee = tree.items.items
    assert bagel.fields["toasted"] is False and bagel.fields["extras"] == []  # no extras
    assert bagel.status == "complete" and coffee.status == "in_progress"
    assert coffee.fields["size"] == "medium" and "size" in coffee.defaulted
    assert (action.item_index, action.field) == (1, "drink_type")
    assert action.text == ("No problem, sesame bagel not toasted with cream cheese. "
                           "Now for your coffee - what kind would you like?")


def test_example_3_cancel_an_item(bagel_menu):
    tree = new_order(bagel_menu.id)
    parsed, tree, _, action = turn(tree, "I want a plain bagel and a latte", bagel_menu)
    assert [i.fields for i in parsed.new_items] == [{"bagel_type": "plain"}, {"drink_type": "latte"}]
    assert [i.status for i in tree.items.items] == ["in_progress", "pending"]
    assert action.text == "Would you like the plain bagel toasted?"

    parsed, tree, _, action = turn(tree, "Actually, forget the bagel. Just the latte.", bagel_menu)
    assert parsed.cancel_item_index == 0 and not parsed.new_items and not parsed.modifications
    bagel, coffee = tree.items.items
    assert (bagel.status, coffee.status) == ("skipped", "in_progress")
    # size has a menu default (medium) so it is not asked; iced is required with no default.
    assert coffee.get_missing_fields() == ["iced"]
    assert (action.item_index, action.field) == (1, "iced")
    assert action.text == "No problem, just the latte. Would you like the latte iced or hot?"


def test_example_1_continues_to_completion(bagel_menu):
    tree = new_order(bagel_menu.id)
    script = [
        ("I'd like an everything bagel with lox and a large iced latte", "toasted"),
        ("yes please", "order_type"),
        ("delivery please", "address"),
        ("12 Main Street, Springfield", "checkout"),
        ("yes", "customer_name"),
        ("it's Dana", "customer_contact"),
        ("dana@example.com", "payment"),
        ("cash on delivery", None),
    ]
    for text, expected in script:
        _, tree, diff, action = turn(tree, text, bagel_menu)
        assert not diff.errors, (text, diff.errors)
        got = tree.pending.field if tree.pending and tree.pending.task == "item" else (
            tree.pending.task if tree.pending else None)
        assert got == expected, text
    assert action.kind == "complete" and tree.status == "complete"
    assert tree.delivery_method.address.street == "12 Main Street, Springfield"
    assert (tree.customer_info.name, tree.customer_info.contact) == ("Dana", "dana@example.com")
    assert tree.payment.method == "cash_delivery"
    # 2.50 bagel + 4.00 lox; large latte 3.75 + 1.00
    assert tree.total() == 11.25 and action.total == 11.25
    assert tree.get_progress() == 1.0 and tree.get_missing_fields() == []
