"""What an order the home chat routed to does differently from a standalone order. Pure.

A standalone order is the customer's whole session: a cancelled order stays open for the next
one ("What can I get for you today?"). An order the home chat started is one request among the
user's others: once cancelled (confirmed) it is finished, so the chat is free for the next request.
Its first utterance is the message the chat routed: one that names nothing on the menu is greeted,
not answered "we don't have ...".
"""

from __future__ import annotations

from mojodex_core.order.conversation import Conversation, TurnOutcome
from mojodex_core.order.conversation.resources import say
from mojodex_core.order.menu import Menu

# The response the engine composes a confirmed cancellation of the whole order with.
ORDER_CANCELLED = "ack-order-cancelled"


def ended_by_cancel(outcome: TurnOutcome) -> TurnOutcome:
    """The turn's outcome, finished (Idle, its reply the cancellation's alone) when it cancelled the order."""
    live = [item for item in outcome.conversation.order.items.items if item.status != "skipped"]
    if ORDER_CANCELLED not in outcome.response_keys or live:
        return outcome
    conversation = outcome.conversation.model_copy(update={"state": "Idle", "pending_change": None})
    language = conversation.language
    return outcome.model_copy(update={
        "conversation": conversation, "state_after": "Idle", "ended": True,
        "reply": say(language, ORDER_CANCELLED), "response_key": ORDER_CANCELLED, "response_keys": [ORDER_CANCELLED],
        "trace": [*outcome.trace, "routed from the home chat: a cancelled order is finished"],
    })


# The replies that understood nothing of the message ("Sorry, we don't have "pizzeria"...").
NOTHING_UNDERSTOOD = ("clarify-unparsed", "off-topic-not-understandable-1")
GREETING = "greeting"


def greeted_instead(opening: Conversation, outcome: TurnOutcome, menu: Menu) -> TurnOutcome:
    """The first turn of a routed order (the routing message itself): when nothing of it was understood
    (it named no menu item: "I want to order from the pizzeria"), the order's greeting, the conversation
    as it was opened."""
    live = [item for item in outcome.conversation.order.items.items if item.status != "skipped"]
    if live or len(outcome.response_keys) != 1 or outcome.response_key not in NOTHING_UNDERSTOOD:
        return outcome
    return outcome.model_copy(update={
        "conversation": opening.model_copy(update={"turn": outcome.conversation.turn}),
        "state_after": opening.state, "reply": say(opening.language, GREETING, shop=menu.name),
        "response_key": GREETING, "response_keys": [GREETING],
        "trace": [*outcome.trace, "routed from the home chat: the message named nothing on the menu, greeted"],
    })
