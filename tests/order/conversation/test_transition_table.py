"""One test per row of the transition table (each scenario reaches the row's state, sends the row's event and
checks the row was the one followed), plus the table's own consistency."""

from __future__ import annotations

import pytest

from mojodex_core.order.conversation import TABLE, mark_unavailable
from mojodex_core.order.conversation.actions import ACTIONS
from mojodex_core.order.conversation.context import GUARDS
from mojodex_core.order.conversation.events import PREDICATES, UTTERANCE_EVENTS
from mojodex_core.order.conversation.model import STATES
from mojodex_core.order.conversation.table import ANY, STAY, candidate_rows

from .conftest import Session

SEED_TABLE = [  # shared/seeds/004, "Transition Table", row by row (E.OOS(item) / E.SILENCE(30s) without arguments)
    ("Ordering", "UTTERANCE_OK", None, "Ordering"),
    ("Ordering", "UTTERANCE_UNCLEAR", "lowConfidence", "Clarifying"),
    ("Ordering", "USER_SAYS_DONE", "hasOrder", "Confirming"),
    ("Ordering", "USER_SAYS_DONE", "!hasOrder", "Clarifying"),
    ("Ordering", "USER_NEEDS_TIME", None, "Thinking"),
    ("Ordering", "E.OOS", None, "Clarifying"),
    ("Thinking", "USER_STARTS_ORDER", None, "Ordering"),
    ("Thinking", "MENU_QUESTION", None, "Thinking"),
    ("Thinking", "E.SILENCE", None, "Thinking"),
    ("Clarifying", "USER_CLARIFIES_OK", None, "Ordering"),
    ("Clarifying", "USER_SAYS_NEVER_MIND", "hasOrder", "Ordering"),
    ("Clarifying", "USER_SAYS_NEVER_MIND", "!hasOrder", "Thinking"),
    ("Clarifying", "STILL_UNCLEAR", None, "Thinking"),
    ("Clarifying", "E.OOS", None, "Clarifying"),
    ("Confirming", "USER_CONFIRMS", None, "Closing"),
    ("Confirming", "USER_WANTS_CHANGES", None, "Ordering"),
    ("Confirming", "USER_SAYS_NOT_RIGHT", None, "Clarifying"),
    ("Confirming", "BIG_CHANGE", "unsafeChange", "Confirming"),
    ("Closing", "ORDER_COMPLETE", None, "Idle"),
    ("Closing", "ADD_MORE", None, "Ordering"),
]


# -- getting to a state ----------------------------------------------------------------------------------

def ordering(menu, order: bool = True, two: bool = False) -> Session:
    s = Session(menu)
    if two:
        s.say("a large iced latte and a small hot mocha")
    elif order:
        s.say("a large iced latte")
    return s


def thinking(menu, order: bool = False) -> Session:
    s = ordering(menu, order)
    assert s.say("give me a minute").state_after == "Thinking"
    return s


def clarifying(menu, order: bool = True) -> Session:
    s = ordering(menu, order)
    out = s.say("a latte with glorp") if order else s.say("that's it")
    assert out.state_after == "Clarifying", out
    return s


def confirming(menu, readback: bool = True, two: bool = False) -> Session:
    s = ordering(menu, two=two)
    s.run("pickup", "that's it")
    if readback:
        s.run("Dana", "dana@example.com", "in store")
        assert s.conv.last_question == "checkout"
    assert s.state == "Confirming"
    return s


def closing(menu) -> Session:
    s = confirming(menu)
    assert s.say("yes").state_after == "Closing"
    return s


def oos(s: Session, item_type="coffee", field="drink_type", value="latte"):
    s.menu = mark_unavailable(s.menu, item_type, field, value, False)
    return s.event("out_of_stock", item_type=item_type, field=field, value=value)


def repriced(s: Session) -> Session:
    """An uploaded menu changed the price of what was read back."""
    s.menu = s.menu.model_copy(deep=True)
    s.menu.item_types["coffee"].size_prices["large"] += 1.0
    return s


def twice_silent(s: Session):
    s.event("silence")
    return s.event("silence")


SCENARIOS = {
    0: lambda m: ordering(m, order=False).say("a large iced latte"),
    1: lambda m: ordering(m).say("a latte with glorp"),
    2: lambda m: ordering(m).say("that's it"),
    3: lambda m: ordering(m, order=False).say("that's it"),
    4: lambda m: ordering(m, order=False).say("give me a minute"),
    5: lambda m: oos(ordering(m)),
    6: lambda m: thinking(m).say("a large iced latte"),
    7: lambda m: thinking(m).say("how much is a latte?"),
    8: lambda m: thinking(m).event("silence"),
    9: lambda m: clarifying(m).say("a plain bagel toasted"),
    10: lambda m: clarifying(m).say("never mind"),
    11: lambda m: clarifying(m, order=False).say("never mind"),
    12: lambda m: clarifying(m, order=False).say("yes"),
    13: lambda m: oos(clarifying(m)),
    14: lambda m: confirming(m).say("yes"),
    15: lambda m: confirming(m).say("make the latte small"),
    16: lambda m: confirming(m).say("that's not right"),
    17: lambda m: confirming(m, two=True).say("remove the latte and the mocha"),
    18: lambda m: closing(m).say("thanks, bye"),
    19: lambda m: closing(m).say("oh, add a plain bagel"),
    20: lambda m: ordering(m).event("session_end"),
    21: lambda m: ordering(m).event("barge_in"),
    22: lambda m: oos(thinking(m, order=True)),
    23: lambda m: ordering(m, order=False).event("silence"),
    24: lambda m: twice_silent(ordering(m)),
    25: lambda m: twice_silent(clarifying(m)),
    26: lambda m: twice_silent(closing(m)),
    27: lambda m: ordering(m).event("silence"),
    28: lambda m: ordering(m).run("what's the weather like?", "who won the football?", "tell me a joke"),
    29: lambda m: ordering(m).say("what's the weather like?"),
    30: lambda m: ordering(m).say("how much is a bagel?"),
    31: lambda m: ordering(m, two=True).say("remove the latte and the mocha"),
    32: lambda m: ordering(m, two=True).run("remove the latte and the mocha", "yes"),
    33: lambda m: ordering(m, two=True).run("remove the latte and the mocha", "no"),
    34: lambda m: ordering(m, order=False).run("a plain bagel", "pickup", "pickup"),
    # Done while clarifying, every item complete (seen by a user: "actually no lox" not understood, then
    # "that's it" sent them to Thinking instead of the read-back).
    35: lambda m: ordering(m).run("pickup", "make it glorp", "that's it"),
    36: lambda m: clarifying(m, order=False).say("that's it"),
    37: lambda m: thinking(m, order=True).say("that's it"),
    38: lambda m: thinking(m).say("that's it"),
    39: lambda m: thinking(m).say("still looking"),
    40: lambda m: thinking(m).say("a latte with glorp"),
    41: lambda m: confirming(m, readback=False).say("Dana"),
    42: lambda m: confirming(m, readback=False).say("yes"),
    43: lambda m: confirming(m, readback=False).run("Dana", "pickup", "pickup"),
    44: lambda m: confirming(m, readback=False).run("hmm", "umm", "Dana"),
    45: lambda m: confirming(m, readback=False).run("hmm", "umm", "errr", "Dana"),
    46: lambda m: ordering(m, two=True).run("a plain bagel", "remove the coffee", "the third one"),
    47: lambda m: repriced(confirming(m)).say("yes"),
    48: lambda m: clarifying(m).say("toasted"),
}


def test_every_row_has_a_scenario():
    assert sorted(SCENARIOS) == list(range(len(TABLE)))


@pytest.mark.parametrize("index", range(len(TABLE)), ids=[f"{i}:{r.label()}" for i, r in enumerate(TABLE)])
def test_row(index, bagel_menu):
    row = TABLE[index]
    out = SCENARIOS[index](bagel_menu)
    assert (out.transition, out.guard, out.action) == (row.event, row.guard, row.action), out.trace
    if row.state != ANY:
        assert out.state_before == row.state
    expected = out.state_before if row.next == STAY else row.next
    assert out.state_after == expected
    guard = f"[{row.guard}]" if row.guard else ""
    assert f"[RULE] transition: {out.state_before} --{row.event}{guard}--> {expected}" in out.trace
    assert out.reply and out.response_key
    if out.state_after == "Clarifying":
        assert out.reply.count("?") == 1, out.reply  # exactly one question


def test_the_seed_rows_are_the_seed_table_in_order():
    seed = [(r.state, r.event, r.guard, r.next) for r in TABLE if r.source == "seed"]
    assert seed == SEED_TABLE


def test_table_names_only_known_states_guards_and_actions():
    for row in TABLE:
        assert row.state in STATES or row.state == ANY
        assert row.next in STATES or row.next == STAY
        assert row.guard is None or row.guard.lstrip("!") in GUARDS
        assert row.action in ACTIONS
        assert row.source in ("seed", "global", "ext")


def test_every_detectable_event_has_a_row_in_its_state():
    for state, pairs in UTTERANCE_EVENTS.items():
        for event, predicate in pairs:
            assert predicate in PREDICATES
            assert candidate_rows(state, event), (state, event)
        assert pairs[-1][1] == "always"
    for state in STATES[:-1]:
        for event in ("E.SILENCE", "E.BARGE_IN", "E.OOS", "E.SESSION_END", "OFF_TOPIC", "MENU_QUESTION"):
            assert candidate_rows(state, event), (state, event)
