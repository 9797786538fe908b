"""Which item of the current order a message refers to: by type ("the coke"), by ordinal ("the second
one"), or implicitly (the item a question is pending about)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .frame_parts import Frame
from .lexicon import WHOLE_FIELD
from .menu import Menu, entry_name
from .tree import ItemTask, OrderTask


def name_field(menu: Menu, item_type: str) -> str | None:
    for name, fdef in menu.item_types[item_type].fields.items():
        if fdef.names_item or name.endswith("_type"):
            return name
    return None


def find_item(tree: OrderTask, menu: Menu, item_type: str, fields: dict[str, Any]) -> int | None:
    """Index of the last live item of this type (and same name value, when one was said)."""
    return find_ref(tree, menu, item_type, fields)[0]


def find_ref(tree: OrderTask, menu: Menu, item_type: str, fields: dict[str, Any], said: str | None = None
             ) -> tuple[int | None, bool]:
    """The item a reference by type names: the live item of this type with the same name value, else the one
    item whose name contains the words said ("the coke" = the diet coke). Several such items: the one that
    holds the other values said ("the pizza with ham"), else - when none holds them all - the one that holds
    some of them ("the one with olives thin crust"); still several: the reference is ambiguous (second value)
    and no item is picked. A single line of the type needs no description. ``said`` is the name as said ("shake":
    the chocolate shake, though "shake" alone is the menu's vanilla milkshake)."""
    key = name_field(menu, item_type)
    live = [i for i, it in enumerate(tree.items.items) if it.status != "skipped" and it.item_type == item_type]
    if key and key in fields:
        same = [i for i in live if tree.items.items[i].fields.get(key) == fields[key]]
        if not same:
            return _family(tree, menu, item_type, key, fields[key], live, said)
        live = same
    if len(live) <= 1:
        return (live[0] if live else None), False
    said = {k: v for k, v in fields.items() if k not in (key, "quantity") and v not in (None, [])}
    if said:
        full = [i for i in live if all(_holds(tree.items.items[i], k, v) for k, v in said.items())]
        some = [i for i in live if any(_holds(tree.items.items[i], k, v) for k, v in said.items())
                and all(_holds(tree.items.items[i], k, v) or _adds(tree.items.items[i], k, v) for k, v in said.items())]
        if len(full) == 1 or not full and len(some) == 1:
            return (full or some)[0], False
    return None, True


def _adds(item: ItemTask, name: str, value: Any) -> bool:
    """The value can only be an addition to the item, not a description it contradicts: a list value, or a
    field still empty ("the one with olives thin crust"; not "the large one with olives" on a medium)."""
    return isinstance(value, list) or item.fields.get(name) in (None, [])


def _family(tree: OrderTask, menu: Menu, item_type: str, key: str, value: Any, live: list[int],
            said_name: str | None = None) -> tuple[int | None, bool]:
    """The one item whose name contains the words of the value said ("coke": the diet coke), or of the name as
    said ("shake": the chocolate shake, by its name or a synonym)."""
    fdef = menu.item_types[item_type].fields[key]
    said = fdef.value(str(value))
    words = set(said.display.split()) if said else set()
    spoken = set(said_name.lower().split()) if said_name else set()
    family = []
    for i in live:
        held = fdef.value(str(tree.items.items[i].fields.get(key)))
        if held is None:
            continue
        if words and words < set(held.display.split()) or spoken and any(
                spoken < set(name.lower().split()) for name in (held.display, *held.synonyms)):
            family.append(i)
    if len(family) == 1:
        return family[0], False
    return None, len(family) > 1



def holds_all(item: ItemTask, fields: dict[str, Any]) -> bool:
    """The item has every value of ``fields`` (the ones said: a description, "the small pizza")."""
    return all(_holds(item, k, v) for k, v in fields.items() if k != "quantity" and v not in (None, []))


def _holds(item: ItemTask, name: str, value: Any) -> bool:
    """The item already has the value (every entry of a list value)."""
    held = item.fields.get(name)
    if isinstance(value, list):
        have = {entry_name(e) for e in held} if isinstance(held, list) else set()
        return all(entry_name(e) in have for e in value)
    return held == value


def live_items(tree: OrderTask | None) -> list[int]:
    return [i for i, it in enumerate(tree.items.items) if it.status != "skipped"] if tree is not None else []


def fitting_types(frame: Frame, menu: Menu) -> list[str]:
    """Item types that take every value of a noun-less frame ("thin crust": pizza; "large": pizza, drink)."""
    return [t for t in menu.item_types
            if frame.attrs and all(any(s.item_type == t and s.field for s in a.senses) for a in frame.attrs)]


def clears_only(frame: Frame, menu: Menu) -> set[str]:
    """The fields a frame clears as a whole ("no spread", "hold the toppings"), when that is all it says."""
    cleared: set[str] = set()
    for attr in frame.attrs:
        whole = {s.field for s in attr.senses if s.value == WHOLE_FIELD and s.field is not None}
        if not whole or not attr.negated:
            return set()
        cleared |= whole
    return cleared


def current_item(tree: OrderTask | None) -> int | None:
    """The item a bare answer/modification refers to: the pending one, else the current, else the last."""
    if tree is None:
        return None
    if tree.pending is not None and tree.pending.task == "item":
        return tree.pending.item_index
    live = [(i, it) for i, it in enumerate(tree.items.items) if it.status != "skipped"]
    for i, it in live:
        if it.status == "in_progress":
            return i
    return live[-1][0] if live else None


def said_as(frame: Frame, menu: Menu, item_type: str) -> str:
    """What the customer called the item of a frame ("latte", "large pizza")."""
    words = [a.text for a in frame.attrs]
    if frame.has_noun or not words:
        words.append(menu.item_types[item_type].label)
    return " ".join(words)


def positive(frame: Frame) -> Frame:
    return replace(frame, attrs=[replace(a, negated=False) for a in frame.attrs])


def diff_fields(item: ItemTask, fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if item.fields.get(k) != v or k in item.defaulted}
