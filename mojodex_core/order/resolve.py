"""One frame -> its item type and field values (menu value ids), with the conflicts that make it doubtful.

A value said twice with different meanings is never silently resolved: two values for a single
choice, "toasted ... not toasted", or the same value both included and excluded ("with olives but no
olives") leave the later one unresolved - unless the customer corrected themselves ("butter, no wait,
jam", "hold on"), where the later value wins and the parse notes the correction (confidence capped).
"""

from __future__ import annotations

from typing import Any

from .frame_parts import Attr, Frame
from .lexicon import WHOLE_FIELD
from .menu import Menu, entry_name


def resolve_frame(frame: Frame, menu: Menu, notes: list[str] | None = None
                  ) -> tuple[str | None, dict[str, Any], list[str]]:
    """Item type, fields and leftover attribute texts of one frame (``notes`` collects "corrected"
    when a value said after "wait"/"hold on" replaced an earlier one)."""
    item_type = frame.anchor or _infer_type(frame, menu)
    if item_type is None:
        return None, {}, [a.text for a in frame.attrs]
    tdef = menu.item_types[item_type]
    fields: dict[str, Any] = {}
    leftovers: list[str] = []
    if frame.number is not None and not frame.article:
        fields["quantity"] = int(frame.number) if float(frame.number).is_integer() else frame.number
    for attr in frame.attrs:
        sense = next((s for s in attr.senses if s.item_type == item_type), None)
        if sense is None or sense.field is None:
            leftovers.append(attr.text)
            continue
        fdef = tdef.fields[sense.field]
        if sense.value == WHOLE_FIELD:
            if not _clear_field(fields, sense.field, fdef, attr):
                leftovers.append(attr.text)
            continue
        if not _apply_attr(fields, sense.field, fdef, sense.value, attr, notes):
            leftovers.append(attr.text)
        elif attr.qualifier and not fdef.qualifiers:  # "extra cream cheese": the spread takes no amount
            leftovers.append(f"{attr.qualifier.lower()} {attr.text}")
    return item_type, fields, leftovers



def _clear_field(fields: dict[str, Any], name: str, fdef: Any, attr: Attr) -> bool:
    """ "no spread", "hold the toppings": the field named as a whole, negated, is cleared (``None``). Said otherwise
    ("with spread": which one?), or next to a value of it ("butter, no spread"), it is not understood (False)."""
    if not attr.negated or fdef.required or fields.get(name) not in (None, []):
        return False
    fields[name] = None
    return True


def _drop(fields: dict[str, Any], name: str, value: Any) -> None:
    """Take ``value`` out of ``fields[name]`` (a list or a single choice)."""
    held = fields.get(name)
    if isinstance(held, list):
        fields[name] = [e for e in held if entry_name(e) != value]
        if not fields[name]:
            del fields[name]
    elif held is not None and entry_name(held) == value:
        del fields[name]


def _holds(fields: dict[str, Any], name: str, value: Any) -> bool:
    held = fields.get(name)
    return any(entry_name(e) == value for e in (held if isinstance(held, list) else [held] if held else []))


def _conflict(attr: Attr, notes: list[str] | None) -> bool:
    """A value contradicting one already said: a later correction ("butter, no wait, jam") wins and is
    noted; otherwise the parser must not guess (False)."""
    if attr.corrects and notes is not None:
        notes.append("corrected")
        return True
    return False


def _apply_attr(fields: dict[str, Any], name: str, fdef: Any, value: Any, attr: Attr,
                notes: list[str] | None = None) -> bool:
    """Put one attribute into ``fields``; False when it conflicts with a value already said."""
    if fdef.kind == "bool":
        new = (not value) if attr.negated else value
        if name in fields and fields[name] != new and not _conflict(attr, notes):
            return False  # "toasted ... not toasted": ask, don't guess
        fields[name] = new
        return True
    entry: Any = value
    if fdef.qualifiers:
        entry = {"name": value, "quantity": attr.qualifier} if attr.qualifier else {"name": value}
    excluded = f"excluded_{name}"
    if attr.negated and fdef.negatable:
        if _holds(fields, name, value):  # "with olives but no olives": both included and excluded
            if not _conflict(attr, notes):
                return False
            _drop(fields, name, value)
        bucket = fields.setdefault(excluded, [])
        if entry not in bucket:
            bucket.append(entry)
        return True
    if attr.negated and attr.neg_direct and not fdef.multi:
        return True  # "a plain bagel, no onions": a single choice that is not onion - never the value
    # a non-negatable value later in a negation scope ("without cheese in a small pie") is positive
    if _holds(fields, excluded, value):  # "no ham ... with ham"
        if not _conflict(attr, notes):
            return False
        _drop(fields, excluded, value)
    if name in fields and fields[name] is None:
        return False  # "no toppings, just cheese": the field cleared and given a value in one breath - not guessed
    if fdef.multi:
        bucket = fields.setdefault(name, [])
        if entry not in bucket:
            if bucket and attr.corrects and notes is not None:
                notes.append("corrected")  # "pepperoni, no wait, sausage": instead of, or as well? not guessed
            bucket.append(entry)
    elif name in fields and fields[name] != entry and not _conflict(attr, notes):
        return False  # two values for one single choice ("a sesame onion bagel"): not silently overwritten
    else:
        fields[name] = entry
    return True


def _infer_type(frame: Frame, menu: Menu) -> str | None:
    if not frame.attrs:
        return frame.inherit
    candidates = [t for t in menu.item_types if all(t in {s.item_type for s in a.senses} for a in frame.attrs)]
    if not candidates:
        counts = {t: sum(t in {s.item_type for s in a.senses} for a in frame.attrs) for t in menu.item_types}
        best = max(counts.values())
        candidates = [t for t, c in counts.items() if c == best and c > 0]
    if frame.inherit in candidates:
        return frame.inherit
    return candidates[0] if candidates else None


def name_conflicts(menu: Menu, item_type: str, fields: dict[str, Any]) -> list[str]:
    """Excluded values that the item's own name contains ("a bacon burger with no bacon"): contradictory."""
    tdef = menu.item_types[item_type]
    names = [(f, d) for f, d in tdef.fields.items() if d.names_item and fields.get(f) is not None]
    out = []
    for f_name, fdef in names:
        vdef = fdef.value(str(fields[f_name]))
        words = set(vdef.display.split()) if vdef else set()
        for key, entries in fields.items():
            base = tdef.fields.get(key.removeprefix("excluded_"))
            if not key.startswith("excluded_") or base is None:
                continue
            for entry in entries:
                value = base.value(str(entry_name(entry)))
                if value is not None and set(value.display.split()) <= words:
                    out.append(f"no {value.display}")
    return out
