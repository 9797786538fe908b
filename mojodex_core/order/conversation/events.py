"""Which state-machine event an utterance is, per state (data: ordered (event, predicate) lists).

The first predicate that holds names the event; the table (``table.py``) then decides the transition.
"""

from __future__ import annotations

from typing import Callable

from .context import Ctx, asked_twice, items_changed, low_confidence, read_back_stale, unsafe_change


def _content(ctx: Ctx) -> bool:
    return ctx.parsed is not None and not ctx.parsed.is_empty()


def _says_yes(ctx: Ctx) -> bool:
    return ctx.only("yes")


def _says_no(ctx: Ctx) -> bool:
    return ctx.only("no", "never_mind") and not items_changed(ctx)


def _progress(ctx: Ctx) -> bool:
    """The utterance changes the order (items or order info)."""
    return ctx.diff is not None and any(op.op != "error" for op in ctx.diff.ops)


# The questions Confirming asks before the read-back: an answer to one given after its clarification goes back to
# Confirming (to the next of them), not to Ordering's "anything else?".
CHECKOUT_QUESTIONS = ("customer_name", "customer_contact", "payment")


def _answers_checkout_question(ctx: Ctx) -> bool:
    return (ctx.conv.last_question in CHECKOUT_QUESTIONS and _progress(ctx) and not low_confidence(ctx)
            and not items_changed(ctx))


def _done(ctx: Ctx) -> bool:
    if ctx.has("done") and not items_changed(ctx):
        return True
    if ctx.parsed is not None and ctx.parsed.wants_checkout and not items_changed(ctx):
        return ctx.conv.last_question != "checkout"
    return ctx.conv.last_question in ("next_step", "more") and ctx.only("no", "done")


def _confirms(ctx: Ctx) -> bool:
    return ctx.conv.last_question == "checkout" and not items_changed(ctx) and (
        _says_yes(ctx) or ((bool(ctx.has("done")) or bool(ctx.parsed and ctx.parsed.wants_checkout))
                           and not low_confidence(ctx)))


PREDICATES: dict[str, Callable[[Ctx], bool]] = {
    "off_topic": lambda c: c.decision is not None and c.decision.intent == "off_topic",
    "menu_question": lambda c: c.decision is not None and c.decision.intent == "menu_question",
    "change_yes": lambda c: c.conv.pending_change is not None and _says_yes(c),
    "change_no": lambda c: c.conv.pending_change is not None and c.only("no", "never_mind"),
    "out_of_stock": lambda c: c.diff is not None and any(e.kind == "out_of_stock" for e in c.diff.errors),
    "unsafe": unsafe_change,
    "done": _done,
    # Done while clarifying: the read-back only when no item still misses a required field (else the
    # read-back would ask the unanswered question a third time: Thinking's pattern hint instead).
    "done_items_complete": lambda c: _done(c) and not any(
        it.get_missing_fields() for _, it in c.conv.order.items.active()),
    "needs_time": lambda c: bool(c.has("needs_time")) and not items_changed(c),
    "idle_words": lambda c: (bool(c.has("needs_time")) or c.only("yes", "no", "goodbye", "greeting"))
    and not items_changed(c),
    "never_mind_alone": lambda c: c.only("never_mind") and not items_changed(c),
    "greeting": lambda c: c.only("greeting") and not items_changed(c) and not asked_twice(c),
    "yes_to_more": lambda c: c.conv.last_question == "next_step" and _says_yes(c),
    "unclear": low_confidence,
    # a new "which one?" or a new item to offer, not an answer to the one just asked: asked, not hinted at (NEW_DOUBT;
    # a second one in a row is the seed's STILL_UNCLEAR, or reference_again once right after "which one?")
    "new_doubt": lambda c: c.repair_unclear and c.pending_reference is not None
    and c.conv.last_question not in ("reference", "new_item"),
    "asked_twice": asked_twice,
    "never_mind": lambda c: bool(c.has("never_mind")) or (_says_no(c) and (
        c.conv.proposal is not None or c.conv.last_question in ("reference", "unparsed", "order"))),
    "answers_checkout_question": _answers_checkout_question,
    # the answer to "which one?" was not one of the items listed: asked again (once), the change kept
    "reference_again": lambda c: c.repair_unclear and c.conv.last_question == "reference" and c.conv.question_count < 2,
    "clarified": lambda c: (c.conv.proposal is not None and _says_yes(c)) or (_progress(c) and not low_confidence(c)),
    "not_right": lambda c: bool(c.has("not_right")) or (c.conv.last_question == "checkout" and _says_no(c)),
    "confirms": _confirms,
    # a yes to a read-back whose total a price change made wrong: read back again (PRICES_CHANGED), not confirmed
    "confirms_stale_total": lambda c: _confirms(c) and read_back_stale(c),
    "unsolicited_change": lambda c: items_changed(c) and not str(c.conv.last_question).startswith("item:"),
    "items_changed": items_changed,
    "goodbye": lambda c: c.only("goodbye", "yes", "no", "done"),
    "always": lambda c: True,
}

COMMON = (("OFF_TOPIC", "off_topic"), ("MENU_QUESTION", "menu_question"), ("CHANGE_CONFIRMED", "change_yes"),
          ("CHANGE_REJECTED", "change_no"))

UTTERANCE_EVENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "Ordering": COMMON + (("E.OOS", "out_of_stock"), ("BIG_CHANGE", "unsafe"), ("USER_SAYS_DONE", "done"),
                          ("USER_NEEDS_TIME", "needs_time"), ("UTTERANCE_OK", "yes_to_more"),
                          ("UTTERANCE_OK", "greeting"), ("UTTERANCE_OK", "never_mind_alone"),
                          ("UTTERANCE_UNCLEAR", "unclear"), ("NO_PROGRESS", "asked_twice"),
                          ("UTTERANCE_OK", "always")),
    "Thinking": COMMON + (("E.OOS", "out_of_stock"), ("BIG_CHANGE", "unsafe"), ("USER_SAYS_DONE", "done"),
                          ("USER_NEEDS_TIME", "idle_words"), ("UTTERANCE_UNCLEAR", "unclear"),
                          ("INFO_GIVEN", "answers_checkout_question"), ("USER_STARTS_ORDER", "always")),
    "Clarifying": COMMON + (("USER_SAYS_NEVER_MIND", "never_mind"), ("E.OOS", "out_of_stock"),
                            ("BIG_CHANGE", "unsafe"), ("USER_SAYS_DONE", "done_items_complete"),
                            ("INFO_GIVEN", "answers_checkout_question"), ("UTTERANCE_UNCLEAR", "reference_again"),
                            ("USER_CLARIFIES_OK", "clarified"), ("NEW_DOUBT", "new_doubt"),
                            ("STILL_UNCLEAR", "always")),
    "Confirming": COMMON + (("E.OOS", "out_of_stock"), ("BIG_CHANGE", "unsafe"),
                            ("USER_SAYS_NOT_RIGHT", "not_right"), ("PRICES_CHANGED", "confirms_stale_total"),
                            ("USER_CONFIRMS", "confirms"),
                            ("USER_WANTS_CHANGES", "unsolicited_change"), ("NO_PROGRESS", "asked_twice"),
                            ("UTTERANCE_UNCLEAR", "unclear"), ("INFO_GIVEN", "always")),
    "Closing": COMMON + (("ORDER_COMPLETE", "goodbye"), ("BIG_CHANGE", "unsafe"), ("ADD_MORE", "items_changed"),
                         ("ORDER_COMPLETE", "always")),
}


def detect(ctx: Ctx) -> str:
    for event, predicate in UTTERANCE_EVENTS[ctx.conv.state]:
        if PREDICATES[predicate](ctx):
            ctx.rule("event", f"{event} ({predicate})")
            return event
    raise AssertionError("every state ends with an 'always' predicate")
