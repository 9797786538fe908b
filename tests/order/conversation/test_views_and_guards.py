"""order_view / build_ticket / mark_unavailable / affected_by, each guard on its own, and a full conversation
on a shop none of the shipped menus resembles (a florist, a test fixture: menus are data, not code)."""

from __future__ import annotations

import pytest

from mojodex_core.order.conversation import (
    TurnInput,
    affected_by,
    build_ticket,
    mark_unavailable,
    order_view,
)
from mojodex_core.order.conversation.context import (
    GUARDS,
    Ctx,
    apply_parsed,
)
from mojodex_core.order.parsed_input import ParsedInput

from .conftest import Session


def _placed(bagel_menu) -> Session:
    s = Session(bagel_menu)
    s.run("an everything bagel toasted with lox and a large iced latte", "pickup", "that's it", "Dana",
          "dana@example.com", "in store", "yes")
    assert s.state == "Closing"
    return s


# -- views -----------------------------------------------------------------------------------------------

def test_order_view(bagel_menu):
    s = Session(bagel_menu)
    s.say("a plain bagel and a large iced latte")
    view = order_view(s.conv, bagel_menu)
    assert [(i["index"], i["item_type"], i["status"], i["quantity"]) for i in view["items"]] == [
        (0, "bagel", "in_progress", 1), (1, "coffee", "pending", 1)]
    assert view["items"][1]["summary"] == "large iced latte" and view["items"][1]["line_total"] == 4.75
    assert view["total"] == 7.25 and view["currency"] == "USD"
    assert "items[0].toasted" in view["missing"] and "delivery_method.order_type" in view["missing"]
    assert set(view) >= {"order_type", "address", "customer_name", "customer_contact", "payment_method",
                         "progress"}
    s.say("forget the bagel")
    assert [i["index"] for i in order_view(s.conv, bagel_menu)["items"]] == [1]  # cancelled items are not shown


def test_build_ticket(bagel_menu):
    s = _placed(bagel_menu)
    ticket = build_ticket(s.conv, bagel_menu)
    assert [(line["item_type"], line["unit_price"], line["line_total"]) for line in ticket["lines"]] == [
        ("bagel", 6.5, 6.5), ("coffee", 4.75, 4.75)]
    assert (ticket["order_type"], ticket["customer_name"], ticket["payment_method"], ticket["total"]) == (
        "pickup", "Dana", "in_store", 11.25)
    assert ticket["text"] == "\n".join([
        "Order ticket - Morning Bagel & Coffee",
        "1 x everything bagel toasted with lox - $6.50",
        "1 x large iced latte - $4.75",
        "Fulfilment: for pickup",
        "Name: Dana (dana@example.com)",
        "Payment: in store",
        "Total: $11.25",
    ])
    s.conv = s.conv.model_copy(update={"language": "fr"})
    assert build_ticket(s.conv, bagel_menu)["text"].splitlines()[-1] == "Total : 11.25 $"


def test_mark_unavailable_copies_the_menu(pizza_menu):
    out = mark_unavailable(pizza_menu, "pizza", "toppings", "HAM", False)
    assert out is not pizza_menu
    assert not out.item_types["pizza"].fields["toppings"].value("HAM").in_stock
    assert pizza_menu.item_types["pizza"].fields["toppings"].value("HAM").in_stock
    assert not mark_unavailable(pizza_menu, "drink", None, None, False).item_types["drink"].available
    back = mark_unavailable(out, "pizza", "toppings", "HAM", True)
    assert back.item_types["pizza"].fields["toppings"].value("HAM").in_stock
    for bad in (("calzone", None, None), ("pizza", "crust", None), ("pizza", "toppings", "GOLD")):
        with pytest.raises(KeyError):
            mark_unavailable(pizza_menu, *bad, False)


def test_affected_by(pizza_menu):
    s = Session(pizza_menu)
    s.say("a large pizza with ham and extra cheese and a coke")
    assert affected_by(s.conv, "pizza", "toppings", "HAM")
    assert affected_by(s.conv, "pizza", "toppings", "CHEESE")  # qualified entries count
    assert affected_by(s.conv, "drink", None, None)
    assert affected_by(s.conv, "drink", "drink_type", "COKE")
    assert not affected_by(s.conv, "pizza", "toppings", "OLIVES")
    assert not affected_by(s.conv, "drink", "drink_type", "SPRITE")
    s.say("forget the coke")
    assert not affected_by(s.conv, "drink", None, None)


# -- guards ----------------------------------------------------------------------------------------------

def _ctx(s: Session, text: str | None = None, parsed: ParsedInput | None = None, cancels=()) -> Ctx:
    ctx = Ctx(conv=s.conv, menu=s.menu, turn=TurnInput(text=text or "x"), llm=None, threshold=0.8)
    ctx.parsed = parsed
    if parsed is not None:
        ctx.tentative, ctx.diff = apply_parsed(s.conv.order, parsed, s.menu, list(cancels))
    return ctx


def test_guard_has_order(bagel_menu):
    s = Session(bagel_menu)
    assert not GUARDS["hasOrder"](_ctx(s))
    s.say("a latte")
    assert GUARDS["hasOrder"](_ctx(s))
    assert not GUARDS["hasOrder"](_ctx(s, parsed=ParsedInput(cancel_item_index=0)))  # after this utterance


def test_guard_low_confidence(bagel_menu):
    s = Session(bagel_menu)
    assert GUARDS["lowConfidence"](_ctx(s, parsed=ParsedInput(confidence=0.5)))
    assert GUARDS["lowConfidence"](_ctx(s, parsed=ParsedInput(confidence=1.0, unparsed=["glorp"])))
    assert not GUARDS["lowConfidence"](_ctx(s, parsed=ParsedInput(confidence=0.8)))
    ctx = _ctx(s, parsed=ParsedInput(confidence=1.0))
    ctx.repair_unclear = True  # a reference the parse cannot represent
    assert GUARDS["lowConfidence"](ctx)


def test_guard_unsafe_change(bagel_menu):
    s = Session(bagel_menu)
    s.say("a large iced latte and a small hot mocha and a plain bagel")
    assert not GUARDS["unsafeChange"](_ctx(s, parsed=ParsedInput(cancel_item_index=0)))
    assert GUARDS["unsafeChange"](_ctx(s, parsed=ParsedInput(), cancels=[0, 1]))
    assert GUARDS["unsafeChange"](_ctx(s, parsed=ParsedInput(wants_cancel=True)))
    one = Session(bagel_menu)
    one.say("a large iced latte")
    assert GUARDS["unsafeChange"](_ctx(one, parsed=ParsedInput(cancel_item_index=0)))  # empties the order


def test_guard_silenced_before_and_off_topic_limit(bagel_menu):
    s = Session(bagel_menu)
    assert not GUARDS["silencedBefore"](_ctx(s)) and not GUARDS["offTopicLimit"](_ctx(s))
    s.event("silence")
    assert GUARDS["silencedBefore"](_ctx(s))
    s.run("what's the weather like?", "tell me a joke")
    assert GUARDS["offTopicLimit"](_ctx(s))


def test_guard_asked_twice(pizza_menu):
    s = Session(pizza_menu)
    s.say("a pizza")
    assert not GUARDS["askedTwice"](_ctx(s, parsed=ParsedInput(order_type="pickup")))
    s.say("pickup")
    assert GUARDS["askedTwice"](_ctx(s, parsed=ParsedInput(order_type="pickup")))
    assert not GUARDS["askedTwice"](_ctx(s, parsed=ParsedInput(answers={"size": "LARGE"})))


# -- a new shop ------------------------------------------------------------------------------------------

def test_florist_full_conversation(florist_menu):
    s = Session(florist_menu)
    assert s.greeting == "Hi, welcome to Petal & Stem Florist! What can I get for you today?"
    assert s.say("hi, I'd like a bouquet of roses").reply == "Petite, classic or grand?"
    assert s.say("grand").reply == "Any wrapping - kraft paper or a silk ribbon?"
    out = s.say("with a silk ribbon")
    assert out.reply == "Got it, a grand bouquet of roses with silk ribbon. Is this for pickup or delivery?"
    out = s.say("how much are peonies?")
    assert out.reply == "Peonies is €6.00 extra. Is this for pickup or delivery?" and out.state_after == "Ordering"
    out = s.say("six bouquets of tulips")
    assert out.reply == ("Sorry, I can't do 6 bouquets - I can take between 1 and 5 bouquets per line. "
                         "Is this for pickup or delivery?")
    assert s.say("delivery").reply == "Got it, for delivery. What's the delivery address?"
    out = s.say("12 Main Street")
    assert (out.response_key, out.reply) == ("next-step-only-main-ordered",
                                             "Would you like something else with that - greeting card?")
    out = s.say("yes, a birthday card")
    assert out.reply == "Got it, a birthday card. Anything else?"
    out = s.say("no thanks, that's all")
    assert out.state_after == "Confirming"
    s.run("Alex", "alex@example.com")
    out = s.say("cash on delivery")
    assert out.reply == ("Here's your order: a grand bouquet of roses with silk ribbon and a birthday card, for "
                         "delivery to 12 Main Street, paying cash on delivery, name Alex. Your total is €46.00. "
                         "Shall I place it?")
    out = s.say("yes")
    assert out.closed and out.state_after == "Closing"
    ticket = build_ticket(s.conv, florist_menu)
    assert ticket["currency"] == "EUR" and ticket["total"] == 46.0
    assert "1 x birthday card - €3.50" in ticket["text"]
    assert s.say("thank you, bye").ended


def test_update_state_takes_the_payment_when_it_was_asked(bagel_menu):
    """The conversation asks the payment method before its read-back; elsewhere an early one is still refused."""
    from mojodex_core.order import new_order, update_state
    from mojodex_core.order.tree import PendingQuestion

    tree, _ = update_state(new_order(bagel_menu.id), ParsedInput(order_type="pickup"), bagel_menu)
    early, diff = update_state(tree, ParsedInput(answers={"method": "in_store"}), bagel_menu)
    assert early.payment.method is None and diff.errors[0].kind == "not_understood"
    asked = tree.model_copy(update={"pending": PendingQuestion(task="payment")})
    paid, diff = update_state(asked, ParsedInput(answers={"method": "in_store"}), bagel_menu)
    assert paid.payment.method == "in_store" and not diff.errors
