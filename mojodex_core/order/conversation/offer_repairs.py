"""Answers to the assistant's own offers and questions, read against the conversation.

* values no item ordered takes ("honey" after a bagel: ``reference.new_item``): nothing is applied, the item that
  takes them is offered ("would you like a coffee with honey?") and yes, or naming it, adds it;
* a bare yes/no answers the question the assistant asked last (an offer, "which one?"), not the order's pending
  one;
* out of stock, another value named instead of the alternative offered goes on the lines that lost theirs.

Part of the conversation's repair (:mod:`.repair`), which applies them in its order.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..parsed_input import Modification, ParsedInput, ParsedItem
from .offers import lines_still_without
from .pending_answers import pending_item

if TYPE_CHECKING:
    from .context import Ctx


def new_item_offered(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """The answer to the offer of a new item ("honey" after a bagel: "would you like a coffee with honey?"): yes
    adds it; naming one of the item types offered ("a latte", "fries") adds that one with the values said before -
    unless the offer is declined first ("no, a latte": a latte as said)."""
    proposal = ctx.conv.proposal
    if proposal is None or proposal.get("kind") != "new":
        return None
    offered: dict[str, dict[str, Any]] = proposal.get("fields", {})
    if ctx.only("yes") and len(offered) == 1:
        item_type, fields = next(iter(offered.items()))
        ctx.rule("repair", f"yes to the offer: a new {item_type}")
        return ParsedInput(new_items=[ParsedItem(item_type=item_type, fields=dict(fields))], confidence=1.0)
    if declines_first(ctx):  # "no, a latte": the offer declined, the latte ordered without the values offered
        return None
    if len(parsed.new_items) == 1 and parsed.new_items[0].item_type in offered and not parsed.modifications:
        item = parsed.new_items[0]
        fields = {k: v for k, v in offered[item.item_type].items() if k not in item.fields} | item.fields
        ctx.rule("repair", f"the offer taken as a {item.item_type}, with the values said before")
        return parsed.model_copy(update={"new_items": [item.model_copy(update={"fields": fields})]})
    return None


def declines_first(ctx: Ctx) -> bool:
    """The answer opens on a no that answers the offer ("no, a latte", "nope a coke", "no thanks, fries", "no but a
    latte", "no a latte") - never a "no" the parse used for a value ("a latte no sugar", "yes, a coke with no
    ice")."""
    words = re.sub(r"[^\w'\s,.!]", " ", (ctx.text or "").lower()).replace(",", " , ").replace(".", " , ")
    words = f" {' '.join(words.replace('!', ' , ').split())} "
    then = (",", "but", *ctx.kw.get("order_articles", ()))
    for phrase in sorted(ctx.kw.get("no", ()), key=len, reverse=True):
        if words.startswith(f" {phrase} "):
            rest = words[len(phrase) + 2:].split()
            return phrase != "no" or not rest or rest[0] in then
    return False


def yes_no_to_our_question(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """A bare yes/no answers the question the assistant asked last - an offer ("would you like a coffee with
    honey?", "diet coke instead?") or "which one?" -, not the order's pending one (the parser reads "no" as "not
    toasted" while the bagel's "toasted?" is pending): nothing of the order is answered by it."""
    if ctx.conv.last_question not in ("proposal", "reference", "new_item") or not ctx.only("yes", "no"):
        return None
    ctx.rule("repair", f"yes/no answers the assistant's {ctx.conv.last_question} question, not the order's")
    return ParsedInput()


def instead_of_the_offer(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """Out of stock, an alternative offered (``proposal`` of kind ``value``): another value of that field named
    instead ("a sprite instead", "pepsi") goes on the lines that lost their value, not on a new line (which would
    leave the emptied lines to be asked again and charged) - on every one of them (two combos whose coke ran out
    answered "sprite"), the answer to the question pending about one of them included."""
    proposal = ctx.conv.proposal
    if proposal is None or proposal.get("kind") != "value":
        return None
    item_type, field = proposal["item_type"], proposal["field"]
    tree = ctx.conv.order
    lines = lines_still_without(tree, proposal)
    if not lines:
        return None
    pend = pending_item(tree)
    if field in parsed.answers and pend is not None and pend[0] in lines and pend[1] == field:
        others = [i for i in lines if i != pend[0]]
        if not others:
            return None
        value = parsed.answers[field]
        ctx.rule("repair", f"{value!r} answers the offer: also on items {[i + 1 for i in others]}")
        mods = [Modification(item_index=i, field=field, new_value=value) for i in others]
        return parsed.model_copy(update={"modifications": list(parsed.modifications) + mods})
    named = [n for n, it in enumerate(parsed.new_items) if it.item_type == item_type and field in it.fields]
    if len(named) != 1:
        return None
    item = parsed.new_items[named[0]]
    mods = [Modification(item_index=idx, field=name, new_value=value) for idx in lines
            for name, value in item.fields.items()]
    ctx.rule("repair", f"{item.fields[field]!r} instead of the offer: on items {[i + 1 for i in lines]}")
    rest = [it for n, it in enumerate(parsed.new_items) if n != named[0]]
    return parsed.model_copy(update={"new_items": rest, "modifications": mods + list(parsed.modifications)})
