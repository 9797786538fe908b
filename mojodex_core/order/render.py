"""Customer-facing text for items and orders (template based, no LLM)."""

from __future__ import annotations

import re

from .menu import ItemTypeDef, Menu, join_words
from .tree import ItemTask, OrderTask

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_SPACES = re.compile(r"\s+")


def _render_template(template: str, item: ItemTask, tdef: ItemTypeDef) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "with":
            parts = [tdef.fields[f].render(item.fields.get(f)) for f, d in tdef.fields.items()
                     if d.with_list and f not in item.defaulted]
            parts += [f"no {tdef.fields[f].render(item.fields.get(f'excluded_{f}'))}"
                      for f in tdef.fields if item.fields.get(f"excluded_{f}")]
            text = join_words([p for p in parts if p])
            return f"with {text}" if text else ""
        if key == "quantity":
            q = item.fields.get("quantity") or 1
            return "" if q == 1 else f"{q} x"
        fdef = tdef.fields.get(key)
        if fdef is None or key in item.defaulted:
            return ""
        return fdef.render(item.fields.get(key))

    return _SPACES.sub(" ", _PLACEHOLDER.sub(sub, template)).strip()


def item_short(item: ItemTask, menu: Menu) -> str:
    tdef = menu.item_types[item.item_type]
    return _render_template(tdef.short, item, tdef) if tdef.short else "" or tdef.label


def item_summary(item: ItemTask, menu: Menu) -> str:
    tdef = menu.item_types[item.item_type]
    template = tdef.summary or f"{{quantity}} {tdef.short or tdef.label}"
    text = _render_template(template, item, tdef)
    return text or tdef.label


def refresh_display(item: ItemTask, menu: Menu) -> None:
    """Recompute the cached short name, summary and unit price of an item (in place)."""
    tdef = menu.item_types[item.item_type]
    item.short = (_render_template(tdef.short, item, tdef) if tdef.short else "") or tdef.label
    item.summary = item_summary(item, menu)
    item.unit_price = tdef.unit_price(item.fields)


def with_article(text: str, quantity: int) -> str:
    if quantity != 1 or not text:
        return text
    return ("an " if text[0] in "aeiou" else "a ") + text


def order_summary(tree: OrderTask) -> str:
    parts = [with_article(it.summary, it.quantity) for _, it in tree.items.active()]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


def lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]
