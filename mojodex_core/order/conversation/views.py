"""What the platform shows and stores: the order view, the frozen ticket, stock changes."""

from __future__ import annotations

from typing import Any

from ..menu import Menu, entry_name
from ..render import refresh_display, with_article
from ..tree import ItemTask, OrderTask
from .model import Conversation
from .resources import money, say


def _fulfilment(tree: OrderTask, language: str) -> str:
    dm = tree.delivery_method
    if dm.order_type == "delivery":
        street = dm.address.street if dm.address else ""
        if not street:
            return say(language, "order-type-delivery-later")
        return say(language, "order-type-delivery", address=street)
    if dm.order_type == "pickup":
        return say(language, "order-type-pickup")
    return ""


def _payment(tree: OrderTask, language: str) -> str:
    return say(language, f"payment-{tree.payment.method}") if tree.payment.method else ""


def at_current_prices(conversation: Conversation, menu: Menu) -> Conversation:
    """A copy of ``conversation`` whose items are priced and named from ``menu`` as it is now (a turn does the
    same; an uploaded menu changes prices between turns)."""
    priced = conversation.model_copy(deep=True)
    reprice(priced.order, menu)
    return priced


def current_total(tree: OrderTask, menu: Menu) -> float:
    """The order's total at the prices of ``menu`` as it is now (an uploaded menu changes them between turns)."""
    priced = tree.model_copy(deep=True)
    reprice(priced, menu)
    return priced.total()


def reprice(tree: OrderTask, menu: Menu) -> None:
    """Price (and name) the items of ``tree`` from ``menu`` as it is now, in place."""
    for item in tree.items.items:
        if item.item_type in menu.item_types:
            refresh_display(item, menu)


def order_view(conversation: Conversation, menu: Menu) -> dict:
    """The ``order`` JSON of the API (items with summaries and line totals, info, progress, total, missing)."""
    tree = conversation.order
    items = []
    for idx, it in tree.items.active():
        items.append({
            "index": idx, "item_type": it.item_type, "status": it.status, "quantity": it.quantity,
            "fields": dict(it.fields), "summary": it.summary or it.label, "line_total": it.line_total,
            "missing": it.get_missing_fields(),
        })
    dm = tree.delivery_method
    return {
        "items": items,
        "order_type": dm.order_type,
        "address": dm.address.street if dm.address else None,
        "customer_name": tree.customer_info.name,
        "customer_contact": tree.customer_info.contact,
        "payment_method": tree.payment.method,
        "progress": tree.get_progress(),
        "total": tree.total(),
        "currency": tree.currency or menu.currency,
        "missing": tree.get_missing_fields(),
        # Each part of the progress tree with its status (pending, in_progress, complete, skipped).
        "statuses": {name: task.status for name, task in tree._children()},
    }


def build_ticket(conversation: Conversation, menu: Menu) -> dict:
    """The frozen order at Closing, with a plain-text ticket rendered from the resource templates."""
    tree = conversation.order
    lang = conversation.language
    currency = tree.currency or menu.currency
    lines = []
    for idx, it in tree.items.active():
        summary = it.summary or it.label
        # The ticket line gives the quantity itself ("2 x ..."): not twice when the summary has it too.
        summary = summary.removeprefix(f"{it.quantity} x ").removeprefix(f"{it.quantity} ") if it.quantity != 1 \
            else summary
        lines.append({
            "index": idx, "item_type": it.item_type, "quantity": it.quantity, "summary": summary,
            "unit_price": it.unit_price, "line_total": it.line_total, "fields": dict(it.fields),
        })
    dm = tree.delivery_method
    ticket: dict[str, Any] = {
        "lines": lines,
        "order_type": dm.order_type,
        "address": dm.address.street if dm.address else None,
        "customer_name": tree.customer_info.name,
        "customer_contact": tree.customer_info.contact,
        "payment_method": tree.payment.method,
        "total": tree.total(),
        "currency": currency,
    }
    text = [say(lang, "ticket-header", shop=menu.name)]
    for line in lines:
        text.append(say(lang, "ticket-line", quantity=line["quantity"], summary=line["summary"],
                        line_total=money(lang, line["line_total"], currency)))
    if dm.order_type:
        text.append(say(lang, "ticket-fulfilment", fulfilment=_fulfilment(tree, lang)))
    if tree.customer_info.name or tree.customer_info.contact:
        text.append(say(lang, "ticket-customer", name=tree.customer_info.name or "",
                        contact=tree.customer_info.contact or ""))
    if tree.payment.method:
        text.append(say(lang, "ticket-payment", payment=_payment(tree, lang)))
    text.append(say(lang, "ticket-total", total=money(lang, tree.total(), currency)))
    ticket["text"] = "\n".join(text)
    return ticket


def mark_unavailable(menu: Menu, item_type: str, field: str | None, value: str | None, in_stock: bool) -> Menu:
    """A copy of ``menu`` with the item type (``field`` None) or one value of a field marked in/out of stock."""
    tdef = menu.item_types.get(item_type)
    if tdef is None:
        raise KeyError(f"no item type {item_type!r} on menu {menu.id!r}")
    copy = menu.model_copy(deep=True)
    target = copy.item_types[item_type]
    if field is None:
        target.available = in_stock
        return copy
    fdef = target.fields.get(field)
    if fdef is None:
        raise KeyError(f"no field {field!r} on {item_type!r}")
    vdef = fdef.value(str(value))
    if vdef is None:
        raise KeyError(f"no value {value!r} for {item_type}.{field}")
    vdef.in_stock = in_stock
    return copy



def uses(item_fields: dict[str, Any], field: str, value: str | None) -> bool:
    current = item_fields.get(field)
    entries = current if isinstance(current, list) else [current]
    return any(entry_name(e) == value for e in entries if e is not None)


def affected_by(conversation: Conversation, item_type: str, field: str | None, value: str | None) -> bool:
    """Whether the live order uses what was just marked out of stock."""
    for _, it in conversation.order.items.active():
        if it.item_type != item_type:
            continue
        if field is None or uses(it.fields, field, value):
            return True
    return False


def named_text(it: ItemTask) -> str:
    """An item whose name is still to ask, named by its label where its summary has none (the value naming the item
    is the name): "with honey" -> "coffee with honey", "small" -> "small coffee"."""
    text = it.summary or ""
    if it.label not in text.split():
        head, sep, tail = text.partition("with ")
        text = f"{head.strip()} {it.label} {sep}{tail}".strip()
    return " ".join(text.split())


def item_text(it: ItemTask, article: bool = True) -> str:
    """How the conversation names an item: its summary, or "2 x coffee" while it is incomplete."""
    text = it.summary or it.label
    if it.get_missing_fields() and it.label not in text:
        text = it.label if text.endswith(" x") or not text else f"{text} {it.label}"
        text = f"{it.quantity} x {text}" if it.quantity != 1 and not text.startswith(f"{it.quantity} x") else text
    return with_article(text, it.quantity) if article else text
