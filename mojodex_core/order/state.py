"""Deterministic state update: ``update_state(tree, parsed) -> (new_tree, diff)``.

The input tree is never mutated. Every item the customer mentioned either lands in
the tree or produces an :class:`OrderError` naming it (in ``diff.errors`` and in
``tree.last_turn.errors``, which the next reply surfaces).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .menu import FieldDef, ItemTypeDef, Menu, get_menu
from .parsed_input import Modification, ParsedInput, ParsedItem
from .render import refresh_display
from .tree import AddressTask, ItemTask, OrderError, OrderTask, PendingQuestion, TurnNotes

_PAYMENT_METHODS = ("in_store", "cash_delivery", "card_link")


class DiffOp(BaseModel):
    op: Literal["add_item", "set", "cancel_item", "cancel_order", "error"]
    path: str
    old: Any = None
    new: Any = None


class StateDiff(BaseModel):
    ops: list[DiffOp] = Field(default_factory=list)
    errors: list[OrderError] = Field(default_factory=list)


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == ""


class _Updater:
    def __init__(self, tree: OrderTask, menu: Menu) -> None:
        self.t = tree
        self.menu = menu
        self.diff = StateDiff()
        self.notes = TurnNotes(previous_pending=tree.pending)

    def error(self, kind: Any, subject: str, message: str) -> None:
        err = OrderError(kind=kind, subject=subject, message=message)
        self.diff.errors.append(err)
        self.diff.ops.append(DiffOp(op="error", path="items", new=err.model_dump()))

    def set(self, path: str, obj: Any, attr: str, value: Any) -> None:
        old = getattr(obj, attr)
        if old != value:
            setattr(obj, attr, value)
            self.diff.ops.append(DiffOp(op="set", path=path, old=old, new=value))

    # -- items --------------------------------------------------------------------
    def add_item(self, parsed: ParsedItem) -> None:
        tdef = self.menu.item_type(parsed.item_type)
        if tdef is None:
            self.error("not_on_menu", parsed.item_type, f"Sorry, we don't have {parsed.item_type} on the menu.")
            return
        if not tdef.available:
            self.error("out_of_stock", tdef.label, f"Sorry, we're out of {tdef.label} right now.")
            return
        qty = parsed.fields.get("quantity", 1)
        if not isinstance(qty, int) or not tdef.min_qty <= qty <= tdef.max_qty:
            self.error("quantity_out_of_range", f"{qty} {tdef.label}",
                       f"Sorry, I can only take between {tdef.min_qty} and {tdef.max_qty} {tdef.label} per line.")
            return
        item = ItemTask(item_type=parsed.item_type, label=tdef.label,
                        required=[f for f, d in tdef.fields.items() if d.required])
        for name, fdef in tdef.fields.items():
            # an empty default ([] for extras) is "nothing yet", not an answer: the seed still asks it
            if fdef.default not in (None, []) and name not in parsed.fields:
                item.fields[name] = list(fdef.default) if isinstance(fdef.default, list) else fdef.default
                item.defaulted.append(name)
            else:
                item.fields.setdefault(name, [] if fdef.multi else None)
        idx = len(self.t.items.items)
        self.diff.ops.append(DiffOp(op="add_item", path=f"items[{idx}]", new={"item_type": parsed.item_type}))
        for name, value in parsed.fields.items():
            self.apply_field(item, idx, tdef, name, value)
        self.t.items.items.append(item)
        self.notes.added.append(idx)

    def apply_field(self, item: ItemTask, idx: int, tdef: ItemTypeDef, name: str, value: Any) -> bool:
        """Set one field (validated); multi fields append, ``excluded_<f>`` entries remove."""
        base = name.removeprefix("excluded_")
        fdef = tdef.fields.get(base)
        if fdef is None:
            self.error("invalid_value", f"{name} on {tdef.label}", f"Sorry, {tdef.label} has no option {name!r}.")
            return False
        if name != base:
            return self._exclude(item, base, fdef, value if isinstance(value, list) else [value])
        if value is None:
            if not fdef.required:
                item.fields[name] = [] if fdef.multi else None
            return True
        entries = value if isinstance(value, list) else [value]
        if not fdef.multi and isinstance(value, list):
            entries = value[-1:]
        kept = [e for e in entries if self._valid(tdef, name, fdef, e)]
        if not kept:
            return False
        if fdef.multi:
            current = list(item.fields.get(name) or [])
            for e in kept:
                current = [c for c in current if _entry_name(c) != _entry_name(e)] + [e]
            new_value: Any = current
        else:
            new_value = kept[0]
        old = item.fields.get(name)
        item.fields[name] = new_value
        if name in item.defaulted:
            item.defaulted.remove(name)
        if old != new_value:
            self.diff.ops.append(DiffOp(op="set", path=f"items[{idx}].{name}", old=old, new=new_value))
        return True

    def _exclude(self, item: ItemTask, name: str, fdef: FieldDef, entries: list[Any]) -> bool:
        names = {_entry_name(e) for e in entries}
        if fdef.multi:
            item.fields[name] = [e for e in item.fields.get(name) or [] if _entry_name(e) not in names]
        elif _entry_name(item.fields.get(name)) in names:
            item.fields[name] = None
        bucket = item.fields.setdefault(f"excluded_{name}", [])
        bucket.extend(e for e in entries if e not in bucket)
        if name not in item.asked:
            item.asked.append(name)  # "no cream cheese" also answers "any spread?"
        return True

    def _valid(self, tdef: ItemTypeDef, name: str, fdef: FieldDef, entry: Any) -> bool:
        if name == "quantity":
            if not isinstance(entry, int) or not tdef.min_qty <= entry <= tdef.max_qty:
                self.error("quantity_out_of_range", f"{entry} {tdef.label}",
                           f"Sorry, I can only take between {tdef.min_qty} and {tdef.max_qty} {tdef.label} per line.")
                return False
            return True
        try:
            fdef.validate_value([entry] if fdef.multi else entry)
        except ValueError:
            self.error("not_on_menu", str(_entry_name(entry)), f"Sorry, we don't have {_entry_name(entry)}.")
            return False
        vdef = fdef.value(str(_entry_name(entry))) if fdef.values else None
        if vdef is not None and not vdef.in_stock:
            self.error("out_of_stock", vdef.display, f"Sorry, we're out of {vdef.display} today.")
            return False
        return True

    def find_item(self, mod: Modification) -> int | None:
        items = self.t.items.items
        if mod.item_index is not None and 0 <= mod.item_index < len(items):
            return mod.item_index
        live = [i for i, it in enumerate(items) if it.status != "skipped"]
        if mod.item_type:
            typed = [i for i in live if items[i].item_type == mod.item_type]
            return typed[-1] if typed else None
        return current_item(self.t)

    def modify(self, mod: Modification) -> None:
        idx = self.find_item(mod)
        if idx is None:
            self.error("unknown_item", mod.item_type or mod.field, "Sorry, I couldn't find that item in your order.")
            return
        item = self.t.items.items[idx]
        tdef = self.menu.item_types[item.item_type]
        changed = self.apply_field(item, idx, tdef, mod.field, mod.new_value)
        if changed and idx not in self.notes.added and idx not in self.notes.modified:
            self.notes.modified.append(idx)

    def answer(self, answers: dict[str, Any]) -> None:
        pending = self.t.pending
        item_answers = {k: v for k, v in answers.items() if k != "method"}
        method = answers.get("method")
        if method in _PAYMENT_METHODS:
            self.set("payment.method", self.t.payment, "method", method)
        if not item_answers:
            return
        idx = pending.item_index if pending is not None and pending.task == "item" else current_item(self.t)
        if idx is None:
            return
        item = self.t.items.items[idx]
        tdef = self.menu.item_types[item.item_type]
        for name, value in item_answers.items():
            if value is None and name not in item.asked:
                item.asked.append(name)
            self.apply_field(item, idx, tdef, name, value)

    def cancel(self, idx: int) -> None:
        items = self.t.items.items
        if not 0 <= idx < len(items) or items[idx].status == "skipped":
            self.error("unknown_item", f"item {idx}", "Sorry, I couldn't find that item in your order.")
            return
        self.diff.ops.append(DiffOp(op="cancel_item", path=f"items[{idx}]", old=items[idx].status, new="skipped"))
        items[idx].status = "skipped"
        self.notes.cancelled.append(idx)


def _entry_name(entry: Any) -> Any:
    return entry.get("name") if isinstance(entry, dict) else entry


def current_item(tree: OrderTask) -> int | None:
    """The item the conversation is on: the pending one, else in progress, else the last live one."""
    p = tree.pending
    if p is not None and p.task == "item" and p.item_index is not None and \
            tree.items.items[p.item_index].status != "skipped":
        return p.item_index
    live = [(i, it) for i, it in enumerate(tree.items.items) if it.status != "skipped"]
    for i, it in live:
        if it.status == "in_progress":
            return i
    return live[-1][0] if live else None


def update_state(tree: OrderTask, parsed: ParsedInput, menu: Menu | None = None) -> tuple[OrderTask, StateDiff]:
    """Apply one parsed message to a copy of ``tree``; return the new tree and what changed."""
    from .flow import next_question, recalculate  # local: flow imports state helpers

    menu = menu or get_menu(tree.menu_id)
    up = _Updater(tree.model_copy(deep=True), menu)
    t = up.t
    t.turn += 1
    t.last_turn = up.notes
    if parsed.wants_cancel:
        for idx, it in enumerate(t.items.items):
            if it.status != "skipped":
                up.cancel(idx)
        up.diff.ops.append(DiffOp(op="cancel_order", path="", new=True))
        up.notes.order_cancelled = True
    if parsed.order_type:
        up.set("delivery_method.order_type", t.delivery_method, "order_type", parsed.order_type)
    if parsed.address:
        address = t.delivery_method.address or AddressTask()
        up.set("delivery_method.address", t.delivery_method, "address",
               address.model_copy(update={"street": parsed.address, "status": "complete"}))
    for item in parsed.new_items:
        up.add_item(item)
    for mod in parsed.modifications:
        up.modify(mod)
    up.answer(parsed.answers)
    if parsed.cancel_item_index is not None:
        up.cancel(parsed.cancel_item_index)
    if parsed.customer_name:
        up.set("customer_info.name", t.customer_info, "name", parsed.customer_name.strip())
    if parsed.customer_contact:
        up.set("customer_info.contact", t.customer_info, "contact", parsed.customer_contact.strip())
    pending = tree.pending
    if parsed.wants_checkout and pending is not None and pending.task == "checkout":
        up.set("checkout.confirmed", t.checkout, "confirmed", True)
    for span in parsed.unparsed:
        up.error("not_understood", span, f"Sorry, I didn't understand \"{span}\".")
    for item in t.items.items:
        refresh_display(item, menu)
    recalculate(t, menu)
    t.pending = next_question(t, menu)
    _mark_asked(t)
    recalculate(t, menu)
    up.notes.errors = list(up.diff.errors)
    return t, up.diff


def _mark_asked(t: OrderTask) -> None:
    p: PendingQuestion | None = t.pending
    if p is None:
        return
    if p.task == "item" and p.optional and p.item_index is not None and p.field:
        asked = t.items.items[p.item_index].asked
        if p.field not in asked:
            asked.append(p.field)  # optional questions are offered once; no answer = declined
    if p.task == "checkout":
        t.checkout.order_reviewed = True
