"""Which item of the current order a message refers to: by type ("the coke"), by ordinal ("the second
one"), or implicitly (the item a question is pending about)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .frame_parts import Frame
from .menu import Menu
from .tree import ItemTask, OrderTask


def name_field(menu: Menu, item_type: str) -> str | None:
    for name, fdef in menu.item_types[item_type].fields.items():
        if fdef.names_item or name.endswith("_type"):
            return name
    return None


def find_item(tree: OrderTask, menu: Menu, item_type: str, fields: dict[str, Any]) -> int | None:
    """Index of the last live item of this type (and same name value, when one was said)."""
    return find_ref(tree, menu, item_type, fields)[0]


def find_ref(tree: OrderTask, menu: Menu, item_type: str, fields: dict[str, Any]) -> tuple[int | None, bool]:
    """The item a reference by type names: the last live item of this type with the same name value,
    else the one item whose name contains the words said ("the coke" = the diet coke). Second value:
    the reference was ambiguous (several such items)."""
    key = name_field(menu, item_type)
    live = [i for i, it in enumerate(tree.items.items) if it.status != "skipped" and it.item_type == item_type]
    if not key or key not in fields:
        return (live[-1] if live else None), False
    same = [i for i in live if tree.items.items[i].fields.get(key) == fields[key]]
    if same:
        return same[-1], False
    fdef = menu.item_types[item_type].fields[key]
    said = fdef.value(str(fields[key]))
    words = set(said.display.split()) if said else set()
    family = []
    for i in live:
        held = fdef.value(str(tree.items.items[i].fields.get(key)))
        if words and held and words < set(held.display.split()):
            family.append(i)
    if len(family) == 1:
        return family[0], False
    return None, len(family) > 1


def live_items(tree: OrderTask | None) -> list[int]:
    return [i for i, it in enumerate(tree.items.items) if it.status != "skipped"] if tree is not None else []


def fitting_types(frame: Frame, menu: Menu) -> list[str]:
    """Item types that take every value of a noun-less frame ("thin crust": pizza; "large": pizza, drink)."""
    return [t for t in menu.item_types
            if frame.attrs and all(any(s.item_type == t and s.field for s in a.senses) for a in frame.attrs)]


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
