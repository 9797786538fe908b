"""Composing a reply: commit the utterance's changes, acknowledge them (errors first, never the whole
order), and ask the next question - one question, never the same way a third time."""

from __future__ import annotations

from ..flow import recalculate
from ..render import lower_first
from ..state import plural
from ..tree import OrderError, OrderTask
from .context import Ctx
from .menu_answers import order_price
from .menu_index import closest
from .resources import join_list, normalise, only_phrases, say
from .steps import Step, next_step, options_question, question_text
from .views import _fulfilment, item_text


def commit(ctx: Ctx) -> None:
    """Apply the tentative order (the utterance's changes) and set the referent."""
    if ctx.tentative is None or ctx.diff is None:
        return
    ops = [op.model_dump() for op in ctx.diff.ops if op.op != "error"]
    if ctx.tentative.checkout.confirmed and not ctx.conv.order.checkout.confirmed:
        # only USER_CONFIRMS (finalize_ticket) confirms the order: never a side effect of another utterance
        ctx.tentative.checkout.confirmed = False
        recalculate(ctx.tentative, ctx.menu)
        ops = [op for op in ops if op["path"] != "checkout.confirmed"]
    ctx.conv.order = ctx.tentative
    ctx.ops.extend(ops)
    ctx.errors.extend(e.model_dump() for e in ctx.diff.errors)
    notes = ctx.tentative.last_turn
    touched = notes.added + notes.modified
    if touched:
        ctx.conv.last_mentioned_item = touched[-1]
        ctx.rule("referent", f"last mentioned item {touched[-1]}")
    if notes.added or notes.cancelled or notes.order_cancelled:
        ctx.conv.next_step_offered = False
    if ctx.ops:
        ctx.rule("apply", f"{len(ctx.ops)} change(s) to the order")
    ctx.tentative = None


def _error_text(ctx: Ctx, err: OrderError) -> tuple[str, str]:
    lang = ctx.lang
    if err.kind == "not_on_menu":
        near = join_list(lang, closest(err.subject, ctx.menu), "word-or")
        return "error-not-on-menu", say(lang, "error-not-on-menu", subject=err.subject, closest=near)
    if err.kind == "quantity_out_of_range":
        for tdef in ctx.menu.item_types.values():
            if tdef.label in err.subject or plural(tdef.label) in err.subject:
                return "error-quantity-out-of-range", say(
                    lang, "error-quantity-out-of-range", subject=err.subject, min=tdef.min_qty, max=tdef.max_qty,
                    label=plural(tdef.label))
        return "error-invalid-value", say(lang, "error-invalid-value", subject=err.subject)
    if err.kind == "too_many_lines":
        return "error-too-many-lines", say(lang, "error-too-many-lines", max=ctx.menu.max_lines)
    key = {"out_of_stock": "error-out-of-stock", "unknown_item": "error-unknown-item",
           "not_understood": "error-not-understood"}.get(err.kind, "error-invalid-value")
    return key, say(lang, key, subject=err.subject)


def acknowledge(ctx: Ctx, *, skip: tuple[str, ...] = ()) -> None:
    """Errors first, then what changed this turn (never the whole order: that is Confirming's job)."""
    tree = ctx.conv.order
    notes = tree.last_turn
    for err in notes.errors:
        if err.kind in skip or (err.kind == "not_understood" and _keywords_only(ctx, err.subject)):
            continue
        ctx.say(*_error_text(ctx, err))
    if not ctx.ops:
        return
    live = tree.items.active()
    if notes.order_cancelled:
        ctx.say("ack-order-cancelled", say(ctx.lang, "ack-order-cancelled"))
    elif notes.cancelled and not notes.added:
        if live:
            rest = join_list(ctx.lang, [it.short or it.label for _, it in live])
            ctx.say("ack-cancelled-rest", say(ctx.lang, "ack-cancelled-rest", items=rest))
        else:
            gone = join_list(ctx.lang, [tree.items.items[i].short or tree.items.items[i].label
                                        for i in notes.cancelled])
            ctx.say("ack-cancelled", say(ctx.lang, "ack-cancelled", items=gone))
    if notes.modified:
        mods = join_list(ctx.lang, [item_text(tree.items.items[i], article=False) for i in notes.modified])
        ctx.say("ack-modified", say(ctx.lang, "ack-modified", items=mods))
    done = [i for i, it in live if it.status == "complete" and i not in notes.modified and _newly_complete(ctx, i)]
    if done:
        names = join_list(ctx.lang, [item_text(tree.items.items[i]) for i in done])
        ctx.say("ack-added", say(ctx.lang, "ack-added", items=names))
    if any(op["path"] == "delivery_method.order_type" for op in ctx.ops) and not done:
        ctx.say("ack-order-type", say(ctx.lang, "ack-order-type", order_type=_fulfilment(tree, ctx.lang)))
    if ctx.price_asked and (notes.added or notes.modified):  # "add mushrooms, how much is that?"
        ctx.price_asked = False
        price = order_price(tree, ctx.menu, ctx.lang)
        ctx.rule("price_tail", "the order's price said" if price else "a line's price is still open: not said")
        if price is not None:
            ctx.say(*price)


def _keywords_only(ctx: Ctx, words: str) -> bool:
    """Words the conversation understood itself ("non merci", "c'est tout"): not a parse error to report."""
    keys = ("yes", "no", "done", "needs_time", "never_mind", "not_right", "goodbye", "same_again")
    return only_phrases(normalise(words), *(ctx.kw.get(k, ()) for k in keys))


def _newly_complete(ctx: Ctx, idx: int) -> bool:
    return idx not in ctx.completed_before


def remember_read_back(ctx: Ctx, key: str) -> None:
    """The question asked is the read-back: keep the total it says (a "yes" confirms that total only)."""
    if key == "confirm-summary":
        ctx.conv.read_back_total = ctx.conv.order.total()


def ask(ctx: Ctx, *, lead: str | None = None) -> None:
    """Ask the next question of the state we are going to, one question; never the same way a third time."""
    tree = ctx.conv.order
    state = ctx.state_after
    step = next_step(tree, ctx.menu, state)
    tree.pending = step.pending
    conv = ctx.conv
    # a turn that changed an item made progress, even when the next question is the same ("add olives", then
    # "add ham" at "anything else?"): the count starts again
    changed_items = any(op["path"].startswith("items") for op in ctx.ops)
    count = conv.question_count + 1 if step.key == conv.last_question and not changed_items else 1
    if count >= 3:
        key, text = options_question(tree, ctx.menu, step, ctx.lang)
        ctx.rule("question_loop", f"{step.key} asked {count - 1} times without progress: asked with its options")
    else:
        key, text = question_text(tree, ctx.menu, step, ctx.lang, conv)
        prev = tree.last_turn.previous_pending
        if (step.pending is not None and step.pending.task == "item" and prev is not None and prev.task == "item"
                and prev.item_index is not None and prev.item_index != step.pending.item_index
                and prev.item_index < len(tree.items.items)
                and tree.items.items[prev.item_index].status == "complete"):
            label = tree.items.items[step.pending.item_index or 0].label
            text = say(ctx.lang, "ask-item-switch", item=label, question=lower_first(text))
            key = "ask-item-switch"
    if step.key == "next_step":
        conv.next_step_offered = True
    conv.last_question, conv.question_count = step.key, count
    ctx.rule("next_action", _describe(tree, step))
    remember_read_back(ctx, key)
    if lead and count < 3:  # a question asked with its options already has its own lead
        text = say(ctx.lang, lead, question=lower_first(text))
        key = lead
    ctx.say(key, text)


def _describe(tree: OrderTask, step: Step) -> str:
    q = step.pending
    if q is not None and q.task == "item":
        it = tree.items.items[q.item_index or 0]
        kind = "optional" if q.optional else "missing"
        return f"{it.item_type} {(q.item_index or 0) + 1} {kind} {q.field}"
    return f"ask {step.key}"
