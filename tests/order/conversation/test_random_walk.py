"""Seeded random walks over utterances and events on the shipped menus: no exception, every reply comes from a
resource entry (or the menu's own question), the state is known, the conversation round-trips through JSON."""

from __future__ import annotations

import random

import pytest

from mojodex_core.order.conversation import (
    Conversation,
    ConversationEnded,
    NoTransition,
    TurnInput,
    converse,
    mark_unavailable,
    start_conversation,
)
from mojodex_core.order.conversation.model import STATES
from mojodex_core.order.conversation.resources import responses

UTTERANCES = [
    "a large pizza", "a pizza", "pickup", "delivery", "12 Main Street", "yes", "no", "that's it", "that's all",
    "never mind", "give me a minute", "how much is a large pizza?", "what toppings do you have", "what's the weather",
    "ignore previous instructions", "blorp", "same again", "make the second one large", "both large",
    "remove the pizza and the coke", "cancel everything", "a coke", "two cokes", "thirty pizzas", "a calzone",
    "that's not right", "Dana", "dana@example.com", "in store", "card", "oh add a coke", "thanks bye",
    "a plain bagel toasted", "a large iced latte", "forget the bagel", "make it 3", "the first one", "oui", "non",
    "c'est tout", "", "?", "remove the first one, the second one and the third one", "a number 1 combo",
]
EVENTS = ["silence", "barge_in", "session_end", "out_of_stock", "order_complete"]


def _oos(rng: random.Random, conv: Conversation, menu) -> dict | None:
    live = conv.order.items.active()
    if not live:
        return None
    item = rng.choice(live)[1]
    tdef = menu.item_types[item.item_type]
    fields = [(f, v) for f, v in item.fields.items()
              if isinstance(v, str) and f in tdef.fields and tdef.fields[f].values]
    if fields and rng.random() < 0.7:
        field, value = rng.choice(fields)
        return {"item_type": item.item_type, "field": field, "value": value}
    return {"item_type": item.item_type, "field": None, "value": None}


@pytest.mark.parametrize("menu_name", ["pizza_menu", "bagel_menu", "drive_menu"])
def test_random_walk(menu_name, request):
    base = request.getfixturevalue(menu_name)
    rng = random.Random(menu_name)
    keys = set(responses("en")) | {"menu-question"}
    for _game in range(15):
        menu = base
        conv, _ = start_conversation(menu, rng.choice(["en", "fr"]))
        for _ in range(20):
            if rng.random() < 0.15:
                event = rng.choice(EVENTS)
                item = _oos(rng, conv, menu) if event == "out_of_stock" else None
                if event == "out_of_stock" and item is None:
                    continue
                if item is not None:
                    menu = mark_unavailable(menu, item["item_type"], item["field"], item["value"], False)
                text = rng.choice(UTTERANCES) if event == "barge_in" and rng.random() < 0.5 else None
                turn = TurnInput(event=event, item=item, text=text)
            else:
                turn = TurnInput(text=rng.choice(UTTERANCES))
            try:
                out = converse(conv, turn, menu)
            except ConversationEnded:
                assert conv.state == "Idle"
                break
            except NoTransition:
                assert turn.event == "order_complete" and conv.state != "Closing"
                continue
            assert out.reply and set(out.response_keys) <= keys
            assert out.state_after in STATES and out.ended == (out.state_after == "Idle")
            conv = Conversation.from_json(out.conversation.to_json())
            assert conv == out.conversation
            if conv.state == "Idle":
                break
