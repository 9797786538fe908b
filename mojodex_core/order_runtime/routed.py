"""What an order the home chat routed to does differently from a standalone order. Pure.

A standalone order is the customer's whole session: a cancelled order stays open for the next
one ("What can I get for you today?"). An order the home chat started is one request among the
user's others: once cancelled (confirmed) it is finished, so the chat is free for the next request.
"""

from __future__ import annotations

from mojodex_core.order.conversation import TurnOutcome
from mojodex_core.order.conversation.resources import say

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
