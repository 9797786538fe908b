"""Conversation repair on top of the parser's output.

The parser reads one message against the menu; some things only make sense against the conversation:

* bare yes/no answering the item question pending, a value said with another item's words at it, and what is
  not a name at "what name?" (:mod:`.pending_answers`);
* "same again" / "another one": the last mentioned item again;
* several removals in one message, and a change by reference to no item or to one of several, kept for the
  answer to "which one do you mean?" (:mod:`.reference_repairs`);
* values no item ordered takes ("honey" after a bagel: ``reference.new_item``): nothing is applied, the item that
  takes them is offered ("would you like a coffee with honey?") and yes, or naming it, adds it; a field cleared that
  no line has anything in ("no spread" after a latte: ``reference.nothing_held``) is said back, never offered.

Changes by ordinal or by type ("make the second one large", "make the coke large") and "both large" over the
order are the parser's: the conversation applies them as parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..parsed_input import Modification, ParsedInput, ParsedItem
from ..parser import parse_deterministic
from ..tree import PendingQuestion
from .offers import lines_still_without
from .pending_answers import another_item_named, name_is_not_a_name, pending_item, yes_no
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


def _new_item_offered(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
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
    if ctx.has("no"):  # "no, a latte": the offer declined, the latte ordered without the values offered
        return None
    if len(parsed.new_items) == 1 and parsed.new_items[0].item_type in offered and not parsed.modifications:
        item = parsed.new_items[0]
        fields = {k: v for k, v in offered[item.item_type].items() if k not in item.fields} | item.fields
        ctx.rule("repair", f"the offer taken as a {item.item_type}, with the values said before")
        return parsed.model_copy(update={"new_items": [item.model_copy(update={"fields": fields})]})
    return None


def _yes_no_to_our_question(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """A bare yes/no answers the question the assistant asked last - an offer ("would you like a coffee with
    honey?", "diet coke instead?") or "which one?" -, not the order's pending one (the parser reads "no" as "not
    toasted" while the bagel's "toasted?" is pending): nothing of the order is answered by it."""
    if ctx.conv.last_question not in ("proposal", "reference", "new_item") or not ctx.only("yes", "no"):
        return None
    ctx.rule("repair", f"yes/no answers the assistant's {ctx.conv.last_question} question, not the order's")
    return ParsedInput()


def _instead_of_the_offer(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
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


def repair(ctx: Ctx) -> tuple[ParsedInput, list[int], bool]:
    """(parse to apply, extra removals, unclear)"""
    assert ctx.parsed is not None
    parsed = name_is_not_a_name(ctx, ctx.parsed)
    if not_in_the_list(ctx):
        return ParsedInput(confidence=0.0), [], True
    answered = which_one(ctx)
    if answered is not None:
        return answered, [], False
    for fix in (_hesitation, _greeting_only, _new_item_offered, _yes_no_to_our_question, another_item_named,
                _instead_of_the_offer, yes_no, _info_keywords, _same_again):
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


def reparse_for_item(text: str, ctx: Ctx, idx: int) -> ParsedInput:
    tree = ctx.conv.order.model_copy(deep=True)
    tree.pending = PendingQuestion(task="item", item_index=idx, field=None)
    return parse_deterministic(text, ctx.menu, tree)
