"""Task statuses, next-question selection and ``get_next_action(tree) -> Action``.

Order of business (the seed's): finish the current item before the next one (its
missing required fields in menu order, then its optional questions, each offered
once and only for fields after the last one the customer already filled), then
pickup/delivery (+ address), checkout review, customer name and contact, payment.
A field that is filled or has a menu default is never asked.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .menu import Menu, get_menu
from .render import lower_first, order_summary
from .tree import ItemTask, OrderTask, PendingQuestion


class Action(BaseModel):
    kind: str
    text: str


class AskAction(Action):
    kind: Literal["ask"] = "ask"
    question: str
    task: str = "item"
    item_index: int | None = None
    field: str | None = None


class CheckoutAction(Action):
    kind: Literal["checkout"] = "checkout"
    summary: str
    total: float


class PaymentAction(Action):
    kind: Literal["payment"] = "payment"
    options: list[str]
    total: float


class CompleteAction(Action):
    kind: Literal["complete"] = "complete"
    total: float


def _empty(value: object) -> bool:
    return value is None or value == [] or value == ""


def missing_required(item: ItemTask) -> list[str]:
    return [f for f in item.required if _empty(item.fields.get(f))]


def optional_to_offer(item: ItemTask, menu: Menu) -> str | None:
    """The next optional question worth asking, or None."""
    fields = list(menu.item_types[item.item_type].fields.items())
    for pos, (name, fdef) in enumerate(fields):
        if fdef.required or not fdef.question or not _empty(item.fields.get(name)) or name in item.asked:
            continue
        later_filled = any(
            not _empty(item.fields.get(n)) and n not in item.defaulted for n, _ in fields[pos + 1:]
        )
        if not later_filled:  # the customer skipped past it: don't go back
            return name
    return None


def recalculate(tree: OrderTask, menu: Menu) -> None:
    """Recompute every status in place (only called on update_state's private copy)."""
    pending = tree.pending
    current_found = False
    for idx, item in enumerate(tree.items.items):
        if item.status == "skipped":
            continue
        waiting = pending is not None and pending.task == "item" and pending.item_index == idx
        done = not missing_required(item) and optional_to_offer(item, menu) is None and not waiting
        if current_found:
            item.status = "pending"
        elif done:
            item.status = "complete"
        else:
            item.status, current_found = "in_progress", True
    live = tree.items.active()
    tree.items.status = ("pending" if not live else
                         "complete" if all(it.status == "complete" for _, it in live) else "in_progress")
    dm = tree.delivery_method
    dm.status = "complete" if not dm.get_missing_fields() else ("in_progress" if dm.order_type else "pending")
    if dm.address is not None:
        dm.address.status = "complete" if dm.address.street else "pending"
    co = tree.checkout
    co.status = "complete" if co.confirmed else ("in_progress" if co.order_reviewed else "pending")
    ci = tree.customer_info
    ci.status = "complete" if not ci.get_missing_fields() else ("in_progress" if ci.name or ci.contact else "pending")
    pay = tree.payment
    pay.status = "complete" if pay.method else "pending"
    subs = [tree.items.status, dm.status, co.status, ci.status, pay.status]
    if tree.last_turn.order_cancelled and not live:
        tree.status = "skipped"
    elif all(s == "complete" for s in subs):
        tree.status = "complete"
    else:
        tree.status = "in_progress" if live else "pending"


def next_question(tree: OrderTask, menu: Menu) -> PendingQuestion | None:
    """What to ask next (None: nothing ordered yet, or the order is complete)."""
    live = tree.items.active()
    if not live:
        return None
    for idx, item in live:
        missing = missing_required(item)
        if missing:
            return PendingQuestion(task="item", item_index=idx, field=missing[0])
        optional = optional_to_offer(item, menu)
        if optional:
            return PendingQuestion(task="item", item_index=idx, field=optional, optional=True)
    dm = tree.delivery_method
    if dm.order_type is None:
        return PendingQuestion(task="order_type")
    if dm.get_missing_fields():
        return PendingQuestion(task="address")
    if not tree.checkout.confirmed:
        return PendingQuestion(task="checkout")
    if not tree.customer_info.name:
        return PendingQuestion(task="customer_name")
    if not tree.customer_info.contact:
        return PendingQuestion(task="customer_contact")
    if not tree.payment.method:
        return PendingQuestion(task="payment")
    return None


def payment_options(tree: OrderTask) -> list[str]:
    if tree.delivery_method.order_type == "delivery":
        return ["cash_delivery", "card_link"]
    return ["in_store", "card_link"]


OPTION_TEXT = {"in_store": "in store", "cash_delivery": "cash on delivery", "card_link": "with a card payment link"}


def _item_question(tree: OrderTask, menu: Menu, q: PendingQuestion) -> str:
    item = tree.items.items[q.item_index or 0]
    fdef = menu.item_types[item.item_type].fields[q.field or ""]
    if fdef.question:
        return fdef.question.format(item=item.short or item.label)
    if fdef.kind == "bool":
        return f"Would you like the {item.short} {fdef.true_label or q.field}?"
    return f"What {str(q.field).replace('_', ' ')} would you like for the {item.short}?"


def _preamble(tree: OrderTask, q: PendingQuestion | None) -> list[str]:
    notes = tree.last_turn
    parts = [e.message for e in notes.errors]
    live = tree.items.active()
    if notes.order_cancelled:
        parts.append("No problem, I've cancelled the order.")
    elif notes.cancelled and not notes.added:
        remaining = " and ".join(it.short for _, it in live)
        parts.append(f"No problem, just the {remaining}." if remaining else "No problem, I've removed that.")
    elif notes.modified:
        parts.append("No problem, " + ", ".join(tree.items.items[i].summary for i in notes.modified) + ".")
    return parts


def get_next_action(
    tree: OrderTask, menu: Menu | None = None
) -> AskAction | CheckoutAction | PaymentAction | CompleteAction:
    """The bot's next move for ``tree`` (pure), with its rendered reply text."""
    menu = menu or get_menu(tree.menu_id)
    q = tree.pending if tree.pending is not None else next_question(tree, menu)
    parts = _preamble(tree, q)
    prev = tree.last_turn.previous_pending
    total = tree.total()
    if q is None and not tree.items.active():
        question = "What can I get for you today?"
        return AskAction(question=question, task="order", text=" ".join(parts + [question]))
    if q is None:
        name = f", {tree.customer_info.name}" if tree.customer_info.name else ""
        text = f"Thanks{name}! Your order is placed. The total is ${total:.2f}."
        return CompleteAction(text=" ".join(parts + [text]), total=total)
    if q.task == "item":
        question = _item_question(tree, menu, q)
        switched = (prev is not None and prev.task == "item" and prev.item_index != q.item_index
                    and prev.item_index is not None and prev.item_index < len(tree.items.items)
                    and tree.items.items[prev.item_index].status == "complete")
        if switched:
            label = tree.items.items[q.item_index or 0].label
            question_text = f"Now for your {label} - {lower_first(question)}"
        else:
            question_text = question
        return AskAction(question=question, item_index=q.item_index, field=q.field,
                         text=" ".join(parts + [question_text]))
    if q.task == "order_type":
        question = "Is this for pickup or delivery?"
        lead = [] if parts else [f"Got it - {order_summary(tree)}."]
        return AskAction(question=question, task="order_type", field="order_type",
                         text=" ".join(parts + lead + [question]))
    if q.task == "address":
        question = "What's the delivery address?"
        return AskAction(question=question, task="address", field="address", text=" ".join(parts + [question]))
    if q.task == "checkout":
        summary = order_summary(tree)
        text = f"Here's your order: {summary}. Your total is ${total:.2f}. Shall I place it?"
        return CheckoutAction(summary=summary, total=total, text=" ".join(parts + [text]))
    if q.task == "customer_name":
        question = "Can I get a name for the order?"
        return AskAction(question=question, task="customer_name", field="name", text=" ".join(parts + [question]))
    if q.task == "customer_contact":
        question = "What's the best phone number or email to reach you?"
        return AskAction(question=question, task="customer_contact", field="contact",
                         text=" ".join(parts + [question]))
    options = payment_options(tree)
    opts = " or ".join(OPTION_TEXT[o] for o in options)
    text = f"How would you like to pay - {opts}?"
    return PaymentAction(options=options, total=total, text=" ".join(parts + [text]))
