"""Out of stock in the conversation: take what is gone out of the order, offer the closest in-stock item or
value of the same kind, and apply the offer when it is accepted."""

from __future__ import annotations

from ..flow import recalculate
from ..menu import entry_name
from ..parsed_input import Modification, ParsedInput, ParsedItem
from ..references import name_field
from ..render import refresh_display, with_article
from ..state import plural
from ..tree import OrderTask, PendingQuestion
from .compose import acknowledge, commit
from .context import Ctx, apply_parsed
from .menu_index import field_value_alternative, item_type_alternative
from .resources import join_list, say
from .views import uses


def offer_lines(proposal: dict) -> list[int]:
    """The lines an offer of another value is for: every line that lost the value (an offer stored before they
    were kept names the last one only)."""
    return list(proposal.get("item_indexes") or [proposal["item_index"]])


def lines_still_without(tree: OrderTask, proposal: dict) -> list[int]:
    """The live lines of the offer whose emptied field is still empty."""
    items = tree.items.items
    return [i for i in offer_lines(proposal) if 0 <= i < len(items) and items[i].status != "skipped"
            and items[i].fields.get(proposal["field"]) in (None, [], "")]


def apply_proposal(ctx: Ctx, proposal: dict) -> None:
    menu = ctx.menu
    if proposal["kind"] == "item":
        parsed = ParsedInput(new_items=[ParsedItem(item_type=proposal["item_type"])])
    else:
        fdef = menu.item_types[proposal["item_type"]].fields[proposal["field"]]
        value = proposal["value"]
        if fdef.multi:
            value = [{"name": value}] if fdef.qualifiers else [value]
        parsed = ParsedInput(modifications=[Modification(item_index=idx, field=proposal["field"], new_value=value)
                                            for idx in lines_still_without(ctx.conv.order, proposal)])
    ctx.tentative, ctx.diff = apply_parsed(ctx.conv.order, parsed, menu, [])
    ctx.rule("proposal", f"accepted {proposal}")


def propose_alternative(ctx: Ctx) -> None:
    """Out of stock: take it out of the order and offer the closest in-stock item/value of the same type."""
    if ctx.turn.event == "out_of_stock":
        spec = ctx.turn.item or {}
        target = (spec["item_type"], spec.get("field"), spec.get("value"))
        affected = _remove_unavailable(ctx, *target)
    else:
        commit(ctx)
        target = _oos_target(ctx)
        notes = ctx.conv.order.last_turn
        affected = [i for i in notes.added + notes.modified
                    if ctx.conv.order.items.items[i].item_type == target[0]]
        acknowledge(ctx, skip=("out_of_stock",))
    item_type, field, value = target
    tdef = ctx.menu.item_types.get(item_type)
    subject = tdef.label if tdef else item_type
    proposal = None
    alt_name = None
    if field is None:
        alt = item_type_alternative(ctx.menu, item_type)
        if alt:
            proposal = {"kind": "item", "item_type": alt}
            alt_name = with_article(ctx.menu.item_types[alt].label, 1)
    elif tdef is not None:
        vdef = tdef.fields[field].value(str(value))
        subject = vdef.display if vdef else str(value)
        alt_v = field_value_alternative(ctx.menu, item_type, field, str(value))
        if alt_v is not None and affected:
            proposal = {"kind": "value", "item_type": item_type, "field": field, "value": alt_v.id,
                        "item_index": affected[-1], "item_indexes": affected}
            alt_name = alt_v.display
    ctx.conv.proposal = proposal
    ctx.conv.last_question = "proposal"
    if proposal is None:
        ctx.rule("out_of_stock", f"{subject}: no alternative in stock")
        ctx.say("oos-no-alternative", say(ctx.lang, "oos-no-alternative", subject=subject))
    else:
        ctx.rule("out_of_stock", f"{subject}: propose {alt_name}")
        ctx.say("oos-alternative", say(ctx.lang, "oos-alternative", subject=subject, alternative=alt_name))


def _oos_target(ctx: Ctx) -> tuple[str, str | None, str | None]:
    err = next(e for e in ctx.conv.order.last_turn.errors if e.kind == "out_of_stock")
    for t_name, tdef in ctx.menu.item_types.items():
        if tdef.label == err.subject and not tdef.available:
            return t_name, None, None
        for f_name, fdef in tdef.fields.items():
            for v in fdef.values:
                if v.display == err.subject and not v.in_stock:
                    return t_name, f_name, v.id
    return err.subject, None, None


def _remove_unavailable(ctx: Ctx, item_type: str, field: str | None, value: str | None) -> list[int]:
    """Take what is out of stock out of the order; the items it touched."""
    tree = ctx.conv.order.model_copy(deep=True)
    affected = []
    for idx, it in tree.items.active():
        if it.item_type != item_type or (field is not None and not uses(it.fields, field, value)):
            continue
        affected.append(idx)
        if field is None:
            ctx.ops.append({"op": "cancel_item", "path": f"items[{idx}]", "old": it.status, "new": "skipped"})
            it.status = "skipped"
        else:
            old = it.fields[field]
            if isinstance(old, list):
                new = [e for e in old if entry_name(e) != value]
            else:
                new = None
            it.fields[field] = new
            ctx.ops.append({"op": "set", "path": f"items[{idx}].{field}", "old": old, "new": new})
        refresh_display(it, ctx.menu)
    if (field is not None and affected and ctx.menu.item_types[item_type].fields[field].required
            and tree.items.items[affected[-1]].fields.get(field) in (None, [], "")):
        # the emptied value is the question now, as update_state makes it when an utterance hits the stock: the
        # answer to the offer ("sprite" at "diet coke instead?") is read as that field's, not as a new item
        tree.pending = PendingQuestion(task="item", item_index=affected[-1], field=field)
    recalculate(tree, ctx.menu)
    ctx.conv.order = tree
    return affected


def drop_declined_line(ctx: Ctx) -> bool:
    """The offer declined was for the value that says what the item is (the menu's name field: a bagel's kind, a
    drink's type) and nothing else the customer chose is left on a line (a blueberry bagel gone, asiago
    declined): each such line is taken out of the order rather than kept, priced, as "a bagel". Another value
    gone (a large pizza's size, a combo's drink) leaves the item what was ordered: it stays, and its question is
    asked."""
    proposal = ctx.conv.proposal
    if proposal is None or proposal.get("kind") != "value":
        return False
    tree = ctx.conv.order
    field = proposal["field"]
    tdef = ctx.menu.item_types.get(proposal["item_type"])
    if tdef is None or field not in tdef.fields or not tdef.fields[field].required:
        return False
    if field != name_field(ctx.menu, proposal["item_type"]):  # "a pizza" without its size is still a pizza
        return False
    dropped = []
    for idx in lines_still_without(tree, proposal):
        item = tree.items.items[idx]
        if any(name != "quantity" and name not in item.defaulted and value not in (None, [], "")
               for name, value in item.fields.items()):
            continue  # a toasted bagel: what was said stays, its kind is asked
        ctx.ops.append({"op": "cancel_item", "path": f"items[{idx}]", "old": item.status, "new": "skipped"})
        item.status = "skipped"
        dropped.append(item.label)
        ctx.rule("out_of_stock", f"offer declined: item {idx + 1} ({item.label}) taken out of the order")
    if not dropped:
        return False
    recalculate(tree, ctx.menu)
    names = [plural(label) if dropped.count(label) > 1 else label for label in dict.fromkeys(dropped)]
    ctx.say("ack-cancelled", say(ctx.lang, "ack-cancelled", items=join_list(ctx.lang, names)))
    return True
