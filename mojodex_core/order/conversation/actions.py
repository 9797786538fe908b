"""The actions named in the transition table. Each one commits (or not) the tentative order and composes
the reply from resource entries; none of them chooses a next state."""

from __future__ import annotations

from typing import Callable

from ..flow import recalculate
from ..parsed_input import ParsedInput, ParsedItem
from ..render import with_article
from ..tree import ItemTask, new_order
from .compose import acknowledge, ask, commit, remember_read_back
from .context import Ctx, apply_parsed, pending_change_dump
from .events import CHECKOUT_QUESTIONS
from .menu_answers import answer_menu_question
from .menu_index import closest, example_answer, example_order, suggestions
from .offers import apply_proposal, drop_declined_line, propose_alternative
from .resources import join_list, money, say
from .steps import next_step, options_question, question_text, step_example
from .views import item_text, named_text, reprice

# -- actions ------------------------------------------------------------------------------------------


def apply_and_set_referent(ctx: Ctx) -> None:
    commit(ctx)
    acknowledge(ctx)
    if ctx.conv.last_question == "next_step" and ctx.only("yes") and not ctx.ops:
        ctx.conv.last_question, ctx.conv.question_count = "more", 1
        ctx.rule("next_action", "yes to the next-step prompt: ask what else")
        ctx.say("ask-more", say(ctx.lang, "ask-more"))
        return
    ask(ctx)


def start_ordering(ctx: Ctx) -> None:
    apply_and_set_referent(ctx)


def ask_targeted_question(ctx: Ctx) -> None:
    """One targeted question: the words not understood and the closest menu items, or the current question
    asked with its options. The understood part of the utterance is applied, never dropped."""
    commit(ctx)
    acknowledge(ctx, skip=("not_understood",))
    tree = ctx.conv.order
    unparsed = list(ctx.parsed.unparsed) if ctx.parsed else []
    step = next_step(tree, ctx.menu, "Confirming" if "Confirming" in (ctx.conv.state, ctx.state_after) else "Ordering")
    tree.pending = step.pending
    asked = step.key
    offer = ctx.pending_reference if ctx.repair_unclear else None
    if offer is not None and offer.get("kind") == "new":
        asked = "new_item"
        _offer_new_item(ctx, offer)
    elif offer is not None and offer.get("kind") == "nothing":  # "no spread" after a latte: never a bagel offered
        ctx.rule("clarify", f"{offer.get('said')!r}: nothing in the order to take it from; the question again")
        ctx.say("clarify-nothing-held", say(ctx.lang, "clarify-nothing-held", words=offer.get("said", "")))
        ctx.say(*options_question(tree, ctx.menu, step, ctx.lang))
    elif ctx.repair_unclear:
        asked = "reference"
        ctx.conv.proposal = ctx.pending_reference  # kept for the answer ("the coke", "the first one")
        ctx.proposed = ctx.pending_reference is not None
        # the items the reference could mean ("remove the pizza": the pizzas, "remove the bacon": the bagels holding
        # it), else every item
        candidates = (ctx.pending_reference or {}).get("candidates") or []
        listed = candidates or [i for i, _ in tree.items.active()]
        items = [f"{n}) {item_text(tree.items.items[i])}" for n, i in enumerate(listed, 1)]
        ctx.rule("clarify", "a reference to no item of the order: ask which one")
        if len(candidates) == 1:  # one line it could be: "did you mean your large pizza?" (yes is that one); the
            # whole order of one line is no candidate ("remove the small pizza": "yes" would remove nothing)
            ctx.say("clarify-reference-one", say(ctx.lang, "clarify-reference-one",
                                                 item=item_text(tree.items.items[listed[0]], article=False)))
        else:
            ctx.say("clarify-reference", say(ctx.lang, "clarify-reference",
                                             items=join_list(ctx.lang, items, "word-or")))
    elif unparsed and (step.key in ("order", "next_step", "more") or step.key.startswith("item:")
                       or ctx.parsed.new_items or ctx.parsed.modifications):
        # Words not understood in an order are said back, whatever the next question: never dropped.
        asked = "unparsed"
        words = " ".join(unparsed)
        near = closest(words, ctx.menu)
        ctx.rule("clarify", f"unresolved words {words!r}, closest {near}")
        ctx.say("clarify-unparsed", say(ctx.lang, "clarify-unparsed", words=words,
                                        closest=join_list(ctx.lang, near, "word-or")))
    elif step.key in ("order", "next_step", "more"):
        ctx.rule("clarify", "nothing understood: ask again with an example")
        ctx.say("clarify-generic", say(ctx.lang, "clarify-generic", example=example_order(ctx.menu)))
    else:
        key, text = options_question(tree, ctx.menu, step, ctx.lang)
        ctx.rule("clarify", f"{step.key} asked with its options")
        ctx.say(key, text)
    conv = ctx.conv
    conv.question_count = conv.question_count + 1 if conv.last_question == asked else 1
    conv.last_question = asked


def _offer_new_item(ctx: Ctx, offer: dict) -> None:
    """Values no ordered item takes ("honey" after a bagel): nothing was applied; the item that takes them is
    offered ("would you like a coffee with honey?"), several when several do - kept for the answer."""
    fields: dict[str, dict] = offer.get("fields", {})
    names = []
    for item_type, values in fields.items():
        scratch, _diff = apply_parsed(new_order(ctx.menu.id, ctx.menu.currency),
                                      ParsedInput(new_items=[ParsedItem(item_type=item_type, fields=values)]),
                                      ctx.menu, [])
        live = scratch.items.active()
        names.append(_offered_text(live[0][1]) if live else with_article(ctx.menu.item_types[item_type].label, 1))
    ctx.conv.proposal = {"kind": "new", "fields": fields}
    ctx.proposed = True
    ctx.rule("clarify", f"{offer.get('said')!r} goes with no item ordered: offer {names}")
    ctx.say("clarify-new-item", say(ctx.lang, "clarify-new-item", words=offer.get("said", ""),
                                    item=join_list(ctx.lang, names, "word-or")))


def _offered_text(it: ItemTask) -> str:
    """An item offered with the values said, its name left to ask: "a coffee with honey", "a toasted bagel"."""
    return with_article(named_text(it), it.quantity)


def summarize(ctx: Ctx) -> None:
    """Enter/stay in Confirming: the missing order info one question at a time, then the one read-back."""
    commit(ctx)
    acknowledge(ctx)
    step = next_step(ctx.conv.order, ctx.menu, "Confirming")
    lead = "confirm-missing" if ctx.conv.state != "Confirming" and step.key != "checkout" else None
    ask(ctx, lead=lead)
    if step.key == "checkout":
        ctx.conv.order.checkout.order_reviewed = True


def read_back_again(ctx: Ctx) -> None:
    """A yes to a read-back whose total a price change made wrong confirms nothing: the order is read back again,
    priced as the menu is now, and the next yes places it."""
    said = ctx.conv.read_back_total if ctx.conv.read_back_total is not None else ctx.conv.order.total()
    commit(ctx)
    reprice(ctx.conv.order, ctx.menu)
    ctx.conv.question_count = 0  # a new read-back, with its total: never the options form
    ctx.rule("read_back", f"the total read back ({said:.2f}) changed with the prices")
    ctx.say("prices-changed", say(ctx.lang, "prices-changed"))
    ask(ctx)


def ask_start_order(ctx: Ctx) -> None:
    names = suggestions(ctx.menu)
    ctx.conv.last_question, ctx.conv.question_count = "order", 1
    text = say(ctx.lang, "start-order-prompt", suggestions=join_list(ctx.lang, names, "word-or"))
    ctx.say("start-order-prompt", text)


def set_thinking(ctx: Ctx) -> None:
    ctx.say("thinking-ack", say(ctx.lang, "thinking-ack"))


def resume_ordering(ctx: Ctx) -> None:
    if not drop_declined_line(ctx):
        ctx.say("thinking-resume", say(ctx.lang, "thinking-resume"))
    ctx.conv.proposal = None
    ask(ctx)


def resume_thinking(ctx: Ctx) -> None:
    ctx.conv.proposal = None
    set_thinking(ctx)


def give_pattern_hint(ctx: Ctx) -> None:
    tree = ctx.conv.order
    # the hint is for the question asked: the name, contact or payment when Confirming asked it
    step = next_step(tree, ctx.menu, "Confirming" if ctx.conv.last_question in CHECKOUT_QUESTIONS else "Ordering")
    q = step.pending
    item = tree.items.items[q.item_index or 0] if q is not None and q.task == "item" else None
    example = (example_answer(ctx.menu, item, q.field if q else None) or step_example(tree, ctx.menu, step, ctx.lang)
               or example_order(ctx.menu))
    ctx.conv.proposal = None
    ctx.rule("pattern_hint", f"suggest saying {example!r}")
    ctx.say("pattern-hint", say(ctx.lang, "pattern-hint", example=example))


def apply_if_actionable(ctx: Ctx) -> None:
    proposal = ctx.conv.proposal
    if proposal is not None and proposal["kind"] in ("item", "value") and ctx.only("yes"):
        apply_proposal(ctx, proposal)
    ctx.conv.proposal = None
    apply_and_set_referent(ctx)


def answer_menu(ctx: Ctx) -> None:
    for key, text in answer_menu_question(ctx.text or "", ctx.menu, ctx.lang):
        ctx.say(key, text)
    ctx.rule("menu_question", "answered from the menu data; the order is unchanged")
    if ctx.state_after in ("Ordering", "Confirming") and ctx.conv.last_question:
        conv = ctx.conv
        last, count = conv.last_question, conv.question_count
        ask(ctx)
        if conv.last_question == last:  # a menu question is not a failed answer
            conv.question_count = count


def nudge(ctx: Ctx) -> None:
    state, nxt = ctx.conv.state, ctx.state_after
    if nxt == "Thinking" and state != "Thinking" and ctx.conv.silence_count >= 1:
        ctx.say("nudge-second", say(ctx.lang, "nudge-second"))
    elif nxt == "Thinking":
        ctx.say("nudge-thinking", say(ctx.lang, "nudge-thinking"))
    elif nxt == "Closing":
        ctx.say("nudge-closing", say(ctx.lang, "nudge-closing"))
    else:
        tree = ctx.conv.order
        step = next_step(tree, ctx.menu, nxt)
        key, text = question_text(tree, ctx.menu, step, ctx.lang, ctx.conv)
        remember_read_back(ctx, key)
        ctx.say("nudge-question", say(ctx.lang, "nudge-question", question=text))
    ctx.rule("silence", f"nudge #{ctx.conv.silence_count + 1}")


def finalize_ticket(ctx: Ctx) -> None:
    tree = ctx.conv.order
    tree.checkout.order_reviewed = True
    tree.checkout.confirmed = True
    tree.pending = None
    recalculate(tree, ctx.menu)
    ctx.ops.append({"op": "set", "path": "checkout.confirmed", "old": False, "new": True})
    ctx.closed = True
    name = tree.customer_info.name
    total = money(ctx.lang, tree.total(), tree.currency or ctx.menu.currency)
    ctx.conv.last_question = None
    ctx.rule("ticket", f"order frozen, total {tree.total():.2f}")
    ctx.say("ending-comment", say(ctx.lang, "ending-comment", name=f", {name}" if name else "", total=total))


def ask_disambiguation(ctx: Ctx) -> None:
    tree = ctx.conv.order
    items = [f"{n}) {item_text(it)}" for n, (_, it) in enumerate(tree.items.active(), 1)]
    ctx.conv.last_question = "disambiguation"
    ctx.say("clarify-not-right", say(ctx.lang, "clarify-not-right", items=join_list(ctx.lang, items, "word-or")))


def ask_change_confirmation(ctx: Ctx) -> None:
    assert ctx.tentative is not None
    ctx.conv.pending_change = pending_change_dump(ctx)
    before = {i for i, _ in ctx.conv.order.items.active()}
    after = {i for i, _ in ctx.tentative.items.active()}
    gone = [ctx.conv.order.items.items[i] for i in sorted(before - after)]
    names = join_list(ctx.lang, [item_text(it) for it in gone])
    key = "confirm-unsafe-cancel-all" if not after else "confirm-unsafe-change"
    ctx.rule("unsafe_change", f"removing {len(gone)} item(s): kept in pending_change until a yes")
    ctx.tentative = None
    ctx.say(key, say(ctx.lang, key, items=names))


def apply_pending_change(ctx: Ctx) -> None:
    dump = dict(ctx.conv.pending_change or {})
    cancels = list(dump.pop("cancel_indexes", []))
    parsed = ParsedInput.model_validate(dump)
    ctx.conv.pending_change = None
    ctx.tentative, ctx.diff = apply_parsed(ctx.conv.order, parsed, ctx.menu, cancels)
    ctx.rule("unsafe_change", "confirmed: applied")
    _after_change(ctx)


def drop_pending_change(ctx: Ctx) -> None:
    ctx.conv.pending_change = None
    ctx.tentative = None
    ctx.rule("unsafe_change", "declined: dropped")
    ctx.say("change-dropped", say(ctx.lang, "change-dropped"))
    _continue(ctx)


def _after_change(ctx: Ctx) -> None:
    commit(ctx)
    acknowledge(ctx)
    _continue(ctx)


def _continue(ctx: Ctx) -> None:
    if ctx.state_after == "Confirming":
        ask(ctx)
    elif ctx.state_after == "Thinking":
        set_thinking(ctx)
    else:
        ask(ctx)


def cleanup(ctx: Ctx) -> None:
    ctx.ended = True
    ctx.conv.order.pending = None
    ctx.say("goodbye", say(ctx.lang, "goodbye"))


def end_session(ctx: Ctx) -> None:
    ctx.ended = True
    ctx.say("session-ended", say(ctx.lang, "session-ended"))


def cancel_reply(ctx: Ctx) -> None:
    ctx.say("barge-in", say(ctx.lang, "barge-in"))


def reply_off_topic(ctx: Ctx) -> None:
    assert ctx.decision is not None
    ctx.conv.off_topic_count += 1
    level = ctx.conv.off_topic_count
    kind = ctx.decision.off_topic_type or "not-understandable"
    key = f"off-topic-{kind}-{level}"
    ctx.rule("off_topic", f"{kind} level {level}")
    ctx.say(key, say(ctx.lang, key, example=example_order(ctx.menu)))


def end_off_topic(ctx: Ctx) -> None:
    ctx.conv.off_topic_count += 1
    ctx.ended = True
    ctx.rule("off_topic", f"any level 3 (count {ctx.conv.off_topic_count}): session ends")
    ctx.say("off-topic-any-3", say(ctx.lang, "off-topic-any-3"))


ACTIONS: dict[str, Callable[[Ctx], None]] = {
    "apply_and_set_referent": apply_and_set_referent,
    "start_ordering": start_ordering,
    "ask_targeted_question": ask_targeted_question,
    "summarize": summarize,
    "read_back_again": read_back_again,
    "ask_start_order": ask_start_order,
    "set_thinking": set_thinking,
    "propose_alternative": propose_alternative,
    "resume_ordering": resume_ordering,
    "resume_thinking": resume_thinking,
    "answer_menu": answer_menu,
    "nudge": nudge,
    "apply_if_actionable": apply_if_actionable,
    "give_pattern_hint": give_pattern_hint,
    "finalize_ticket": finalize_ticket,
    "ask_disambiguation": ask_disambiguation,
    "ask_change_confirmation": ask_change_confirmation,
    "apply_pending_change": apply_pending_change,
    "drop_pending_change": drop_pending_change,
    "cleanup": cleanup,
    "end_session": end_session,
    "cancel_reply": cancel_reply,
    "reply_off_topic": reply_off_topic,
    "end_off_topic": end_off_topic,
}
