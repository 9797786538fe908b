"""Deterministic state update: ``update_state(tree, parsed) -> (new_tree, diff)``.

The input tree is never mutated. Every item the customer mentioned either lands in
the tree or produces an :class:`OrderError` naming it (in ``diff.errors`` and in
``tree.last_turn.errors``, which the next reply surfaces).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .menu import FieldDef, ItemTypeDef, Menu, entry_name, get_menu
from .parsed_input import Modification, ParsedInput, ParsedItem
from .render import refresh_display
from .tree import AddressTask, ItemTask, OrderError, OrderTask, PendingQuestion, TurnNotes


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


def plural(label: str) -> str:
    """ "bagel" -> "bagels", "fries" -> "fries", "sandwich" -> "sandwiches"."""
    if label.endswith("s"):
        return label
    return label + ("es" if label.endswith(("ch", "sh", "x")) else "s")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _qty_error(up: _Updater, tdef: ItemTypeDef, qty: Any, who: str | None = None) -> None:
    """Quantity out of range, naming the item: "0 plain bagels", "30 bagels"."""
    name = who or tdef.label
    what = f"{qty} {name if qty == 1 else plural(name)}" if _is_int(qty) else f"{name} (quantity {qty})"
    up.error("quantity_out_of_range", what,
             f"Sorry, I can't do {what} - I can only take between {tdef.min_qty} and {tdef.max_qty} "
             f"{plural(tdef.label)} per line.")


class _Updater:
    def __init__(self, tree: OrderTask, menu: Menu) -> None:
        self.t = tree
        self.menu = menu
        self.diff = StateDiff()
        self.notes = TurnNotes(previous_pending=tree.pending)
        self.subject: str | None = None  # the item being changed, for error messages

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
        # a None for a required field means "not said" (the default applies or the question is asked)
        parsed = parsed.model_copy(update={"fields": {
            k: v for k, v in parsed.fields.items() if v is not None or not getattr(tdef.fields.get(k), "required", True)
        }})
        qty = parsed.fields.get("quantity", 1)
        if not _is_int(qty) or not tdef.min_qty <= qty <= tdef.max_qty:
            _qty_error(self, tdef, qty)
            return
        if len(self.t.items.active()) >= self.menu.max_lines:
            if not any(e.kind == "too_many_lines" for e in self.diff.errors):  # once, however many were asked
                self.error("too_many_lines", tdef.label,
                           f"Sorry, an order can have at most {self.menu.max_lines} lines - I couldn't add more.")
            return
        item = ItemTask(item_type=parsed.item_type, label=tdef.label,
                        required=[f for f, d in tdef.fields.items() if d.required])
        for name, fdef in tdef.fields.items():
            # an empty default ([] for extras) is "nothing yet", not an answer: the seed still asks it;
            # an out-of-stock default is no answer either: the customer is asked (and told what is out)
            default = _in_stock_default(fdef)
            if default not in (None, []) and name not in parsed.fields:
                item.fields[name] = default
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
        """Set one field (validated); multi fields append, ``excluded_<f>`` entries remove, ``None`` clears an
        optional field (and answers its question: "no spread").
        Returns whether the item actually changed (a no-op is not a change)."""
        base = name.removeprefix("excluded_")
        fdef = tdef.fields.get(base)
        if fdef is None:
            self.error("invalid_value", f"{name} on {tdef.label}", f"Sorry, {tdef.label} has no option {name!r}.")
            return False
        if name != base:
            return self._exclude(item, idx, base, fdef, value if isinstance(value, list) else [value])
        if value is None:
            if fdef.required:  # a required field can't be cleared: nothing changes
                return False
            old = item.fields.get(name)
            item.fields[name] = [] if fdef.multi else None
            if name not in item.asked:
                item.asked.append(name)  # "no spread": cleared, and its optional question is answered too
            if not _empty(old):  # "no spread": a change like any other, in the audit diff and acknowledged
                self.diff.ops.append(DiffOp(op="set", path=f"items[{idx}].{name}", old=old, new=item.fields[name]))
            return not _empty(old)
        entries = value if isinstance(value, list) else [value]
        if not fdef.multi and isinstance(value, list):
            entries = value[-1:]
        kept = [e for e in entries if self._valid(tdef, name, fdef, e)]
        if not kept:
            return False
        if fdef.multi:
            current = list(item.fields.get(name) or [])
            for e in kept:
                current = [c for c in current if entry_name(c) != entry_name(e)] + [e]
            new_value: Any = current
        else:
            new_value = kept[0]
        old = item.fields.get(name)
        item.fields[name] = new_value
        was_default = name in item.defaulted
        if was_default:
            item.defaulted.remove(name)
        if old != new_value:
            self.diff.ops.append(DiffOp(op="set", path=f"items[{idx}].{name}", old=old, new=new_value))
        unexcluded = self._unexclude(item, idx, name, kept if fdef.multi else kept[:1])
        return old != new_value or was_default or unexcluded

    def _unexclude(self, item: ItemTask, idx: int, name: str, entries: list[Any]) -> bool:
        """A value given takes back its exclusion: the later statement wins ("no ham" ... "add ham" is ham),
        so a line never holds a value and its exclusion at once (``_exclude`` is the other direction)."""
        key = f"excluded_{name}"
        old = item.fields.get(key)
        if not old:
            return False
        names = {entry_name(e) for e in entries}
        kept = [e for e in old if entry_name(e) not in names]
        if len(kept) == len(old):
            return False
        if kept:
            item.fields[key] = kept
        else:
            del item.fields[key]  # as if never excluded
        self.diff.ops.append(DiffOp(op="set", path=f"items[{idx}].{key}", old=old, new=kept or None))
        return True

    def _exclude(self, item: ItemTask, idx: int, name: str, fdef: FieldDef, entries: list[Any]) -> bool:
        before = (item.fields.get(name), list(item.fields.get(f"excluded_{name}") or []))
        names = {entry_name(e) for e in entries}
        if fdef.multi:
            item.fields[name] = [e for e in item.fields.get(name) or [] if entry_name(e) not in names]
        elif entry_name(item.fields.get(name)) in names:
            item.fields[name] = None
        bucket = item.fields.setdefault(f"excluded_{name}", [])
        bucket.extend(e for e in entries if e not in bucket)
        if name not in item.asked:
            item.asked.append(name)  # "no cream cheese" also answers "any spread?"
        # in the audit diff like any other change: "remove the ham" is a change the conversation acknowledges
        for key, old in ((name, before[0]), (f"excluded_{name}", before[1])):
            if old != item.fields.get(key):
                self.diff.ops.append(DiffOp(op="set", path=f"items[{idx}].{key}", old=old, new=item.fields.get(key)))
        return before != (item.fields.get(name), item.fields.get(f"excluded_{name}"))

    def _valid(self, tdef: ItemTypeDef, name: str, fdef: FieldDef, entry: Any) -> bool:
        if name == "quantity":
            if not _is_int(entry) or not tdef.min_qty <= entry <= tdef.max_qty:
                _qty_error(self, tdef, entry, self.subject)
                return False
            return True
        try:
            fdef.validate_value([entry] if fdef.multi else entry)
        except ValueError:
            self.error("not_on_menu", str(entry_name(entry)), f"Sorry, we don't have {entry_name(entry)}.")
            return False
        vdef = fdef.value(str(entry_name(entry))) if fdef.values else None
        if vdef is not None and not vdef.in_stock:
            self.error("out_of_stock", vdef.display, f"Sorry, we're out of {vdef.display} today.")
            return False
        return True

    def find_item(self, mod: Modification) -> int | str:
        """Index of the live item a modification targets, or the name of what couldn't be found."""
        items = self.t.items.items
        if mod.item_index is not None:
            if not 0 <= mod.item_index < len(items):
                return mod.item_type or f"item {mod.item_index + 1}"
            if items[mod.item_index].status == "skipped":  # cancelled: not in the order any more
                return items[mod.item_index].short or items[mod.item_index].label
            if mod.item_type and items[mod.item_index].item_type != mod.item_type:
                return mod.item_type
            return mod.item_index
        live = [i for i, it in enumerate(items) if it.status != "skipped"]
        if mod.item_type:
            typed = [i for i in live if items[i].item_type == mod.item_type]
            return typed[-1] if typed else mod.item_type
        idx = current_item(self.t)
        return mod.field if idx is None else idx

    def modify(self, mod: Modification) -> None:
        idx = self.find_item(mod)
        if isinstance(idx, str):
            self.error("unknown_item", idx, f"Sorry, there's no {idx} in your order.")
            return
        item = self.t.items.items[idx]
        tdef = self.menu.item_types[item.item_type]
        self.subject = item.short or item.label
        changed = self.apply_field(item, idx, tdef, mod.field, mod.new_value)
        self.subject = None
        if changed and idx not in self.notes.added and idx not in self.notes.modified:
            self.notes.modified.append(idx)

    def order_type(self, order_type: str) -> None:
        """Pickup or delivery; a change drops what only fitted the other (the address, a payment method it
        does not offer) and asks for the order's read-back again."""
        from .flow import payment_options  # local: flow imports state helpers

        dm = self.t.delivery_method
        before = dm.order_type
        self.set("delivery_method.order_type", dm, "order_type", order_type)
        if before is None or before == order_type:
            return
        if order_type == "pickup":
            self.set("delivery_method.address", dm, "address", None)
        if self.t.payment.method is not None and self.t.payment.method not in payment_options(self.t):
            self.set("payment.method", self.t.payment, "method", None)
        self.set("checkout.confirmed", self.t.checkout, "confirmed", False)
        self.set("checkout.order_reviewed", self.t.checkout, "order_reviewed", False)

    def payment(self, method: Any, confirmed: bool) -> None:
        from .flow import OPTION_TEXT, payment_options  # local: flow imports state helpers

        options = payment_options(self.t)
        if method not in options:
            said = OPTION_TEXT.get(method, str(method))
            offered = " or ".join(OPTION_TEXT[o] for o in options)
            self.error("invalid_value", said, f"Sorry, we can't take payment {said} for this order - {offered}.")
        elif not confirmed:
            self.error("not_understood", OPTION_TEXT[method],
                       f"Let's finish the order first - I'll ask how you'd like to pay ({OPTION_TEXT[method]}) "
                       "once it's confirmed.")
        else:
            self.set("payment.method", self.t.payment, "method", method)

    def answer(self, answers: dict[str, Any], confirmed: bool) -> None:
        pending = self.t.pending
        item_answers = {k: v for k, v in answers.items() if k != "method"}
        if "method" in answers:
            self.payment(answers["method"], confirmed)
        if not item_answers:
            return
        idx = pending.item_index if pending is not None and pending.task == "item" else current_item(self.t)
        if idx is None or self.t.items.items[idx].status == "skipped":
            for name, value in item_answers.items():
                said = f"{name} {value}" if value is not None else name
                self.error("not_understood", said, f"Sorry, there's no item in your order for \"{said}\".")
            return
        item = self.t.items.items[idx]
        tdef = self.menu.item_types[item.item_type]
        self.subject = item.short or item.label
        for name, value in item_answers.items():
            if value is None and name not in item.asked:
                item.asked.append(name)
            self.apply_field(item, idx, tdef, name, value)
        self.subject = None

    def cancel(self, idx: int | None, said: str | None = None) -> None:
        items = self.t.items.items
        if idx is None or not 0 <= idx < len(items) or items[idx].status == "skipped":
            name = said or (items[idx].short or items[idx].label if idx is not None and 0 <= idx < len(items)
                            else f"item {(idx or 0) + 1}")
            self.error("unknown_item", name, f"Sorry, there's no {name} in your order to remove.")
            return
        self.diff.ops.append(DiffOp(op="cancel_item", path=f"items[{idx}]", old=items[idx].status, new="skipped"))
        items[idx].status = "skipped"
        self.notes.cancelled.append(idx)



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


def _in_stock_default(fdef: FieldDef) -> Any:
    """The field's default, without the values marked out of stock (None, or [] for a list, when none is left)."""
    default = fdef.default
    if not fdef.values or default is None:
        return list(default) if isinstance(default, list) else default
    if isinstance(default, list):
        return [e for e in default if getattr(fdef.value(str(entry_name(e))), "in_stock", True)]
    return default if getattr(fdef.value(str(default)), "in_stock", True) else None


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
        up.order_type(parsed.order_type)
    if parsed.address:
        address = t.delivery_method.address or AddressTask()
        up.set("delivery_method.address", t.delivery_method, "address",
               address.model_copy(update={"street": parsed.address, "status": "complete"}))
    for item in parsed.new_items:
        up.add_item(item)
    for mod in parsed.modifications:
        up.modify(mod)
    pending = tree.pending
    confirming = parsed.wants_checkout and pending is not None and pending.task == "checkout"
    asked_payment = pending is not None and pending.task == "payment"  # the conversation asks it before the read-back
    up.answer(parsed.answers, tree.checkout.confirmed or confirming or asked_payment)
    if parsed.cancel_item_index is not None or parsed.cancel_item:
        up.cancel(parsed.cancel_item_index, parsed.cancel_item)
    if parsed.customer_name:
        up.set("customer_info.name", t.customer_info, "name", parsed.customer_name.strip())
    if parsed.customer_contact:
        up.set("customer_info.contact", t.customer_info, "contact", parsed.customer_contact.strip())
    items_changed = _item_signature(tree) != _item_signature(t)
    if parsed.wants_checkout and pending is not None and pending.task == "checkout" and not items_changed:
        up.set("checkout.confirmed", t.checkout, "confirmed", True)
    if items_changed:  # the total changed: the order must be reviewed (and confirmed) again
        up.set("checkout.confirmed", t.checkout, "confirmed", False)
        up.set("checkout.order_reviewed", t.checkout, "order_reviewed", False)
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


def _item_signature(tree: OrderTask) -> list[tuple[str, dict[str, Any], bool]]:
    return [(it.item_type, it.fields, it.status == "skipped") for it in tree.items.items]


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
