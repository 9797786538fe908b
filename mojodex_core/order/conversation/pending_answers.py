"""Answers to the question pending about an item, and to "what name?", read against the conversation.

* bare yes/no (in any language of the keyword files) answering a yes/no item question or declining an
  optional one;
* a value said with another item's words at a pending question ("What size?" - "add a small coke"): an order;
* "c'est tout" or an item's name ("coke") answering "what name?": not a name.

Part of the conversation's repair (:mod:`.repair`), which applies them in its order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..parsed_input import ParsedInput
from ..parser import parse_deterministic
from ..tree import OrderTask
from .menu_index import Mention, mentions
from .resources import normalise, only_phrases

if TYPE_CHECKING:
    from .context import Ctx


def pending_item(tree: OrderTask) -> tuple[int, str, bool] | None:
    p = tree.pending
    if p is None or p.task != "item" or p.item_index is None or not p.field:
        return None
    return p.item_index, p.field, p.optional


def yes_no(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    pend = pending_item(ctx.conv.order)
    if pend is None or not parsed.is_empty():
        return None
    idx, field, optional = pend
    item = ctx.conv.order.items.items[idx]
    fdef = ctx.menu.item_types[item.item_type].fields[field]
    if ctx.only("yes") and fdef.kind == "bool":
        ctx.rule("repair", f"yes answers {field} of item {idx + 1}")
        return ParsedInput(answers={field: True})
    if ctx.only("no") and fdef.kind == "bool":
        ctx.rule("repair", f"no answers {field} of item {idx + 1}")
        return ParsedInput(answers={field: False})
    if ctx.only("no") and optional:
        ctx.rule("repair", f"no declines the optional {field} of item {idx + 1}")
        return ParsedInput(answers={field: None})
    return None


def another_item_named(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """A question pending about an item's field answered with a value and another item's own words ("What size,
    the pizza?" - "add a small coke"): the value is that item's, not the answer (the parser took "small" as the
    pizza's and left "coke" unparsed). The utterance is read as an order; the question stays pending. Words that
    are values of the field asked ("sprite" for a combo's drink) answer it - unless the utterance adds an item
    ("also a large sprite", "and a sprite": the keyword lists' ``adds_item`` anywhere, a ``list_joins`` word
    first), when another item's own words name a new item."""
    pend = pending_item(ctx.conv.order)
    if pend is None or not parsed.answers or parsed.new_items:
        return None
    idx, field, _ = pend
    asked_type = ctx.conv.order.items.items[idx].item_type
    by_phrase: dict[str, list[Mention]] = {}
    for m in mentions(ctx.text or "", ctx.menu):
        by_phrase.setdefault(m.phrase, []).append(m)
    words = ctx.norm.split()
    adds = bool(ctx.has("adds_item")) or bool(words and words[0] in ctx.kw.get("list_joins", ()))
    others = [ms for ms in by_phrase.values()
              if (adds or not any(m.item_type == asked_type and m.field == field for m in ms))
              and any(m.item_type != asked_type and _names_an_item(ctx, m) for m in ms)]
    if not others:
        return None
    tree = ctx.conv.order.model_copy(deep=True)
    tree.pending = None
    fresh = parse_deterministic(ctx.text or "", ctx.menu, tree)
    if not any(it.item_type != asked_type for it in fresh.new_items):
        return None
    ctx.rule("repair", f"{others[0][0].phrase!r} names another item: an order, not the answer to {field}")
    if adds:  # the parser's doubt (a new drink or the combo's?) is settled by "also"/"and": menu words are read
        unread = [w for w in fresh.unparsed if not mentions(w, ctx.menu)]
        fresh = fresh.model_copy(update={"unparsed": unread, "confidence": fresh.confidence if unread else 1.0})
    return fresh


def _names_an_item(ctx: Ctx, m: Mention) -> bool:
    return m.field is None or ctx.menu.item_types[m.item_type].fields[m.field].names_item


def name_is_not_a_name(ctx: Ctx, parsed: ParsedInput) -> ParsedInput:
    """"c'est tout" or an item's name ("coke") answering "what name?" is not a name (the parser knows English
    answers such as "pickup" are not names; the keyword lists add the other languages). A topping's name may be
    a person's: "Basil", "Olive"."""
    name = normalise(parsed.customer_name or "")
    control = [ctx.kw.get(k, ()) for k in ("yes", "no", "done", "needs_time", "never_mind", "not_right", "goodbye")]
    if name and (only_phrases(name, *control) or any(
            m.phrase and normalise(m.phrase) == name and _names_an_item(ctx, m) for m in mentions(name, ctx.menu))):
        ctx.rule("repair", f"{parsed.customer_name!r} is not taken as a name")
        return parsed.model_copy(update={"customer_name": None})
    return parsed
