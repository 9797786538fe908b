"""Conversations testers had around out-of-stock offers, "which one?" and the read-back; each a bug found and
fixed (the first file of findings is test_user_findings.py)."""

from __future__ import annotations

import json

import pytest

from mojodex_core.order.conversation import Conversation, mark_unavailable

from .conftest import Session


def _priced_lines(s: Session) -> list[tuple[str, dict, float]]:
    return [(it.item_type, dict(it.fields), it.line_total) for _, it in s.conv.order.items.active()]


def _coke_out_of_the_combo(drive_menu) -> Session:  # noqa: ANN001
    """A large number 1 combo with a coke ordered, then coke out of stock: "Would you like diet coke instead?"."""
    s = Session(drive_menu)
    s.say("a large number 1 combo with a coke")
    s.menu = mark_unavailable(drive_menu, "combo", "combo_drink", "coke", False)
    s.event("out_of_stock", item_type="combo", field="combo_drink", value="coke")
    return s


def test_declining_the_offer_for_an_item_out_of_stock_drops_its_empty_line(bagel_menu):
    """"a blueberry bagel" (out of stock), "no" to asiago: the order kept a bagel of no kind, charged $2.50."""
    s = Session(bagel_menu)
    assert s.say("a blueberry bagel").response_key == "oos-alternative"
    out = s.say("no")
    assert not s.conv.order.items.active() and s.conv.order.total() == 0.0, _priced_lines(s)
    assert out.response_keys == ["ack-cancelled", "ask-order"], out.reply


def test_declining_the_offer_keeps_the_rest_of_the_order(bagel_menu):
    s = Session(bagel_menu)
    s.say("a large iced latte and a blueberry bagel")
    s.say("no thanks")
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["coffee"], _priced_lines(s)


def test_declining_another_value_keeps_the_line_the_customer_described(drive_menu):
    """Coke out of the combo: the large number 1 combo stays (it is still what was ordered) and its drink is
    asked. (A required field on a line with other values chosen: the case the declined-offer rule decides.)"""
    s = _coke_out_of_the_combo(drive_menu)
    out = s.say("no")
    assert [(it.item_type, it.fields.get("combo"), it.fields.get("size"), it.fields.get("combo_drink"))
            for _, it in s.conv.order.items.active()] == [("combo", "number 1", "large", None)], out.reply
    assert "ack-cancelled" not in out.response_keys and s.conv.order.pending.field == "combo_drink", out.reply


def test_another_drink_named_at_the_combo_drink_offer_goes_in_the_combo(drive_menu):
    """Coke went out of stock during the order: "Would you like diet coke instead?" answered "sprite" was lost
    (a pattern hint, the combo still without a drink)."""
    s = _coke_out_of_the_combo(drive_menu)
    assert s.outcomes[-1].response_key == "oos-alternative"
    out = s.say("sprite")
    assert [(it.item_type, it.fields.get("combo_drink")) for _, it in s.conv.order.items.active()] == [
        ("combo", "sprite")], out.reply
    assert out.state_after == "Ordering" and out.response_keys[0] == "ack-added", out.reply


def test_the_offer_of_another_value_accepted_after_a_stock_event(drive_menu):
    s = _coke_out_of_the_combo(drive_menu)
    s.say("yes")
    assert s.conv.order.items.items[0].fields["combo_drink"] == "diet coke"


def test_which_one_lists_only_the_items_the_reference_could_mean(pizza_menu):
    """"remove the pizza" with two pizzas and a coke asked "which one: 1) ... pizza, 2) ... pizza or 3) a coke?"."""
    s = Session(pizza_menu)
    s.say("a small cheese pizza, a large ham pizza and a coke")
    out = s.say("remove the pizza")
    assert out.response_key == "clarify-reference"
    assert out.reply == ("Sorry, which one do you mean: 1) a small pizza with cheese or 2) a large pizza with ham?")
    s.say("2")  # the number in that list
    assert [it.fields.get("size") for _, it in s.conv.order.items.active()] == ["SMALL", None]


def _repriced(menu, item_type: str, size: str, price: float):
    copy = menu.model_copy(deep=True)
    copy.item_types[item_type].size_prices[size] = price
    return copy


def test_a_price_change_after_the_read_back_reads_the_order_back_again(pizza_menu):
    """The read-back said $10.00, the admin uploaded a new price, and "yes" placed the order: the customer had
    confirmed a total that was no longer the menu's. The read-back is given again with the new total."""
    s = Session(pizza_menu)
    out = s.run("a small cheese pizza", "pickup", "that's it", "Ana", "555-1234", "in store")
    assert out.response_key == "confirm-summary" and "$10.00" in out.reply
    s.menu = _repriced(pizza_menu, "pizza", "SMALL", 10.0)
    out = s.say("yes")
    assert not out.closed and out.state_after == "Confirming", out.reply
    assert out.response_keys == ["prices-changed", "confirm-summary"] and "$11.00" in out.reply, out.reply
    assert (out.transition, out.action) == ("PRICES_CHANGED", "read_back_again"), out.trace  # named in the trace
    assert "[RULE] transition: Confirming --PRICES_CHANGED--> Confirming" in out.trace
    out = s.say("yes")
    assert out.closed and "$11.00" in out.reply


def test_a_read_back_at_unchanged_prices_is_confirmed_at_once(pizza_menu):
    s = Session(pizza_menu)
    s.run("a small cheese pizza", "pickup", "that's it", "Ana", "555-1234", "in store")
    s.menu = _repriced(pizza_menu, "pizza", "LARGE", 20.0)  # not what was ordered
    assert s.say("yes").closed


@pytest.mark.parametrize("menu_name, order, item_type, size", [("pizza_menu", "a large pizza", "pizza", "LARGE"),
                                                              ("drive_menu", "small fries", "fries", "small")])
def test_declining_another_size_keeps_the_item_and_asks_its_size(request, menu_name, order, item_type, size):
    """"a large pizza", large out of stock, "no" to extra large: "I've removed the pizza" - the size does not say
    what the item is (a bagel's kind does), so the pizza stays and its size is asked."""
    menu = request.getfixturevalue(menu_name)
    s = Session(menu)
    s.say(order)
    s.menu = mark_unavailable(menu, item_type, "size", size, False)
    assert s.event("out_of_stock", item_type=item_type, field="size", value=size).response_key == "oos-alternative"
    out = s.say("no")
    assert [it.item_type for _, it in s.conv.order.items.active()] == [item_type], out.reply
    assert "ack-cancelled" not in out.response_keys and s.conv.order.pending.field == "size", out.reply


def test_declining_the_offer_drops_every_line_it_left_empty(bagel_menu):
    """"a blueberry bagel, a latte and a blueberry bagel" (out of stock), "no" to asiago: "I've removed the
    bagel. What kind of bagel would you like?" - the first bagel was kept, of no kind, priced."""
    s = Session(bagel_menu)
    assert s.say("a blueberry bagel, a latte and a blueberry bagel").response_key == "oos-alternative"
    out = s.say("no")
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["coffee"], _priced_lines(s)
    assert out.response_keys[0] == "ack-cancelled" and "bagels" in out.reply, out.reply


def test_the_offer_accepted_fills_every_line_that_lost_the_value(bagel_menu):
    s = Session(bagel_menu)
    s.say("a blueberry bagel, a latte and a blueberry bagel")
    s.say("yes")
    assert [it.fields.get("bagel_type") for _, it in s.conv.order.items.active()] == ["asiago", None, "asiago"]


def test_another_drink_named_at_the_offer_goes_in_every_combo_that_lost_its_drink(drive_menu):
    """Two combos with a coke, coke out, "sprite": the second combo got it, the first was asked again."""
    s = Session(drive_menu)
    s.say("a large number 1 combo with a coke")
    s.say("a medium number 2 combo with a coke")
    s.menu = mark_unavailable(drive_menu, "combo", "combo_drink", "coke", False)
    s.event("out_of_stock", item_type="combo", field="combo_drink", value="coke")
    out = s.say("sprite")
    assert [it.fields.get("combo_drink") for _, it in s.conv.order.items.active()] == ["sprite", "sprite"], out.reply


def test_a_value_said_with_another_item_at_the_offer_is_that_items(pizza_menu):
    """Large pizzas ran out; "Would you like extra large instead?" answered "add a small coke": the pizza's
    pending size took "small", the coke was lost and a pattern hint given. The small coke is added and the
    pizza's size asked."""
    s = Session(pizza_menu)
    s.say("a large pizza with ham and a coke")
    s.menu = mark_unavailable(pizza_menu, "pizza", "size", "LARGE", False)
    s.event("out_of_stock", item_type="pizza", field="size", value="LARGE")
    out = s.say("add a small coke")
    assert [(it.item_type, it.fields.get("size")) for _, it in s.conv.order.items.active()] == [
        ("pizza", None), ("drink", None), ("drink", "SMALL")], out.reply
    assert out.state_after == "Ordering" and s.conv.order.pending.field == "size", out.reply


@pytest.mark.parametrize("text", ["also a large sprite", "and a large sprite", "add a large sprite"])
def test_another_drink_added_at_the_combo_drink_offer_is_a_new_drink(drive_menu, text):
    """Coke out of the combo, "Would you like diet coke instead?" answered "also a large sprite": the sprite
    went into the combo. "also", "and", "add" with a drink's own name order that drink."""
    s = _coke_out_of_the_combo(drive_menu)
    out = s.say(text)
    assert [(it.item_type, it.fields.get("combo_drink") or it.fields.get("drink_type"), it.fields.get("size"))
            for _, it in s.conv.order.items.active()] == [("combo", None, "large"), ("drink", "sprite", "large")], (
        out.reply)
    assert s.conv.order.pending.field == "combo_drink", out.reply


@pytest.mark.parametrize("answer", ["the third one", "3"])
def test_a_number_not_in_the_which_one_list_asks_again(pizza_menu, answer):
    """"remove the pizza" listed the two pizzas; "the third one" removed the coke (not offered) and "3" got a
    pattern hint, the removal forgotten. The question is asked again with the same list."""
    s = Session(pizza_menu)
    s.say("a small cheese pizza, a large ham pizza and a coke")
    question = s.say("remove the pizza").reply
    out = s.say(answer)
    assert out.reply == question and out.state_after == "Clarifying", out.reply
    assert len(s.conv.order.items.active()) == 3
    s.say("2")
    assert [(it.item_type, it.fields.get("size")) for _, it in s.conv.order.items.active()] == [
        ("pizza", "SMALL"), ("drink", None)]


def test_a_price_change_at_a_read_back_stored_before_its_total_was_kept(pizza_menu):
    """A conversation stored at the read-back before ``read_back_total`` existed: the yes after a price change
    placed the order at the old total. The total it said is the order's stored line totals."""
    s = Session(pizza_menu)
    s.run("a small cheese pizza", "pickup", "that's it", "Ana", "555-1234", "in store")
    stored = json.loads(s.conv.to_json())
    del stored["read_back_total"]
    s.conv = Conversation.from_json(json.dumps(stored))
    assert s.conv.read_back_total is None
    s.menu = _repriced(pizza_menu, "pizza", "SMALL", 10.0)
    out = s.say("yes")
    assert not out.closed and out.response_keys == ["prices-changed", "confirm-summary"], out.reply
    assert "$11.00" in out.reply and s.say("yes").closed
