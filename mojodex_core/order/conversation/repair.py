"""Conversation repair on top of the parser's output.

The parser reads one message against the menu; some things only make sense against the conversation:

* bare yes/no answering the item question pending, a value said with another item's words at it, and what is
  not a name at "what name?" (:mod:`.pending_answers`);
* "same again" / "another one": the last mentioned item again;
* several removals in one message, and a change by reference to no item or to one of several, kept for the
  answer to "which one do you mean?" (:mod:`.reference_repairs`);
* values no item ordered takes ("honey" after a bagel: ``reference.new_item``): nothing is applied, the item that
  takes them is offered ("would you like a coffee with honey?") and yes, or naming it, adds it; a field cleared that
  no line has anything in ("no spread" after a latte: ``reference.nothing_held``) is said back, never offered; the
  answers to the assistant's offers and questions (:mod:`.offer_repairs`).

Changes by ordinal or by type ("make the second one large", "make the coke large") and "both large" over the
order are the parser's: the conversation applies them as parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..parsed_input import ParsedInput, ParsedItem
from .offer_repairs import instead_of_the_offer, new_item_offered, yes_no_to_our_question
from .pending_answers import another_item_named, name_is_not_a_name, yes_no
from .reference_repairs import not_in_the_list, reference_doubt, removals, which_one

if TYPE_CHECKING:
    from .context import Ctx


def _hesitation(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """ "hmm", "umm", "errr": nothing to apply and nothing to say back (not an unknown word, not a name) - the
    question is asked again (an unclear answer: the clarify escalation)."""
    if not ctx.hesitates():
        return None
    ctx.rule("repair", "a hesitation: nothing to apply, the question is asked again")
    return ParsedInput(confidence=0.0)


def _greeting_only(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """A greeting of the keyword lists ("bonjour", "salut") and nothing else is a greeting: not an unknown word,
    nor a fuzzy menu match ("salut" -> salt bagel) the parser is unsure of."""
    if not ctx.only("greeting") or (not parsed.is_empty() and parsed.confidence >= 1.0):
        return None
    ctx.rule("repair", "a greeting only: nothing to parse")
    return ParsedInput()


def _info_keywords(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """Pickup/delivery and payment answers in the keyword lists' words ("à emporter", "par carte"), when the
    parse found nothing. Pickup or delivery is taken whatever was asked, as the parser takes "pickup": else
    "à emporter" said early would be an unknown menu item."""
    pending = ctx.conv.order.pending
    if not parsed.is_empty():
        return None
    for kind in ("pickup", "delivery"):
        if ctx.only(kind):
            ctx.rule("repair", f"keywords answer order_type {kind}")
            return ParsedInput(order_type=kind)  # type: ignore[arg-type]
    if pending is None:
        return None
    if pending.task == "payment":
        for method in ("in_store", "cash_delivery", "card_link"):
            if ctx.only(f"payment_{method}"):
                if method == "cash_delivery" and ctx.conv.order.delivery_method.order_type == "pickup":
                    method = "in_store"
                ctx.rule("repair", f"keywords answer payment {method}")
                return ParsedInput(answers={"method": method})
    return None


def _said_fields(item: Any) -> dict[str, Any]:
    return {k: v for k, v in item.fields.items() if k not in item.defaulted and v not in (None, [], "")}


def _same_again(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """The parser flags "same again" (``repeat_last``) without building the line; the keyword lists add other
    languages and "another one"."""
    if parsed.new_items or parsed.modifications or not (parsed.repeat_last or ctx.has("same_again")):
        return None
    tree = ctx.conv.order
    idx = ctx.conv.last_mentioned_item
    if idx is None or not 0 <= idx < len(tree.items.items) or tree.items.items[idx].status == "skipped":
        live = tree.items.active()
        idx = live[-1][0] if live else None
    if idx is None:
        return None
    item = tree.items.items[idx]
    ctx.rule("repair", f"same again: repeat item {idx + 1} ({item.short or item.label})")
    return ParsedInput(new_items=[ParsedItem(item_type=item.item_type, fields=_said_fields(item))])


def repair(ctx: Ctx) -> tuple[ParsedInput, list[int], bool]:
    """(parse to apply, extra removals, unclear)"""
    assert ctx.parsed is not None
    parsed = name_is_not_a_name(ctx, ctx.parsed)
    if not_in_the_list(ctx):
        return ParsedInput(confidence=0.0), [], True
    answered = which_one(ctx)
    if answered is not None:
        return answered, [], False
    for fix in (_hesitation, _greeting_only, new_item_offered, yes_no_to_our_question, another_item_named,
                instead_of_the_offer, yes_no, _info_keywords, _same_again):
        fixed = fix(ctx, parsed)
        if fixed is not None:
            return fixed, [], False
    removal = removals(ctx, parsed)
    if removal is not None:
        base, refs, unresolved, candidates = removal
        if unresolved:  # nothing applied: the targeted question asks which item was meant
            if not refs:  # one removal: kept for the answer ("the second one"), asked among the items it fits
                ctx.pending_reference = {"kind": "remove", "candidates": candidates}
            return ParsedInput(confidence=0.0), [], True
        return base, refs, False
    return parsed, [], reference_doubt(ctx, parsed)

