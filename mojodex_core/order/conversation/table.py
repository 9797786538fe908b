"""The conversation state machine as ONE data table, and its lookup.

Rows marked ``seed`` are the normative transition table of ``shared/seeds/004`` (state, event, guard, next,
action), in its order. The other rows write down what the seed says in prose ("global" events apply from any
state; "ext" rows cover situations the seed's table leaves open: supervisor intents, the unsafe-change
micro-confirmation, answers to the info asked within Confirming, the question-loop guard). ``*`` matches any
state, ``=`` means "stay in the current state". Rows are tried in order: a specific state before ``*``, the
first row whose guard holds wins. The engine never decides a next state itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Row:
    state: str
    event: str
    guard: str | None  # a guard name from GUARDS, "!name" negates it, None = always
    next: str
    action: str
    source: str = "seed"

    def label(self) -> str:
        guard = f"[{self.guard}]" if self.guard else ""
        return f"{self.state} --{self.event}{guard}--> {self.next}"


ANY, STAY = "*", "="

TABLE: tuple[Row, ...] = (
    # ---- seed 004 transition table (normative) ----
    Row("Ordering", "UTTERANCE_OK", None, "Ordering", "apply_and_set_referent"),
    Row("Ordering", "UTTERANCE_UNCLEAR", "lowConfidence", "Clarifying", "ask_targeted_question"),
    Row("Ordering", "USER_SAYS_DONE", "hasOrder", "Confirming", "summarize"),
    Row("Ordering", "USER_SAYS_DONE", "!hasOrder", "Clarifying", "ask_start_order"),
    Row("Ordering", "USER_NEEDS_TIME", None, "Thinking", "set_thinking"),
    Row("Ordering", "E.OOS", None, "Clarifying", "propose_alternative"),
    Row("Thinking", "USER_STARTS_ORDER", None, "Ordering", "start_ordering"),
    Row("Thinking", "MENU_QUESTION", None, "Thinking", "answer_menu"),
    Row("Thinking", "E.SILENCE", None, "Thinking", "nudge"),
    Row("Clarifying", "USER_CLARIFIES_OK", None, "Ordering", "apply_if_actionable"),
    Row("Clarifying", "USER_SAYS_NEVER_MIND", "hasOrder", "Ordering", "resume_ordering"),
    Row("Clarifying", "USER_SAYS_NEVER_MIND", "!hasOrder", "Thinking", "resume_thinking"),
    Row("Clarifying", "STILL_UNCLEAR", None, "Thinking", "give_pattern_hint"),
    Row("Clarifying", "E.OOS", None, "Clarifying", "propose_alternative"),
    Row("Confirming", "USER_CONFIRMS", None, "Closing", "finalize_ticket"),
    Row("Confirming", "USER_WANTS_CHANGES", None, "Ordering", "apply_and_set_referent"),
    Row("Confirming", "USER_SAYS_NOT_RIGHT", None, "Clarifying", "ask_disambiguation"),
    Row("Confirming", "BIG_CHANGE", "unsafeChange", "Confirming", "ask_change_confirmation"),
    Row("Closing", "ORDER_COMPLETE", None, "Idle", "cleanup"),
    Row("Closing", "ADD_MORE", None, "Ordering", "apply_and_set_referent"),
    # ---- global events (seed 004 "Global Events", from any state) ----
    Row(ANY, "E.SESSION_END", None, "Idle", "end_session", "global"),
    Row(ANY, "E.BARGE_IN", None, STAY, "cancel_reply", "global"),
    Row(ANY, "E.OOS", None, "Clarifying", "propose_alternative", "global"),
    Row("Ordering", "E.SILENCE", "!hasOrder", "Thinking", "nudge", "global"),
    Row("Ordering", "E.SILENCE", "silencedBefore", "Thinking", "nudge", "global"),
    Row("Clarifying", "E.SILENCE", "silencedBefore", "Thinking", "give_pattern_hint", "global"),
    Row("Closing", "E.SILENCE", "silencedBefore", "Idle", "cleanup", "global"),
    Row(ANY, "E.SILENCE", None, STAY, "nudge", "global"),
    # ---- supervisor intents (seed 003) ----
    Row(ANY, "OFF_TOPIC", "offTopicLimit", "Idle", "end_off_topic", "ext"),
    Row(ANY, "OFF_TOPIC", None, STAY, "reply_off_topic", "ext"),
    Row(ANY, "MENU_QUESTION", None, STAY, "answer_menu", "ext"),
    # ---- unsafe changes need a yes (seed 004 "Risk-Gated Confirmation") ----
    Row(ANY, "BIG_CHANGE", "unsafeChange", "Ordering", "ask_change_confirmation", "ext"),
    Row(ANY, "CHANGE_CONFIRMED", None, STAY, "apply_pending_change", "ext"),
    Row(ANY, "CHANGE_REJECTED", None, STAY, "drop_pending_change", "ext"),
    # ---- situations the seed table leaves open ----
    Row("Ordering", "NO_PROGRESS", "askedTwice", "Clarifying", "ask_targeted_question", "ext"),
    Row("Clarifying", "USER_SAYS_DONE", "hasOrder", "Confirming", "summarize", "ext"),
    Row("Clarifying", "USER_SAYS_DONE", "!hasOrder", "Thinking", "give_pattern_hint", "ext"),
    Row("Thinking", "USER_SAYS_DONE", "hasOrder", "Confirming", "summarize", "ext"),
    Row("Thinking", "USER_SAYS_DONE", "!hasOrder", "Thinking", "give_pattern_hint", "ext"),
    Row("Thinking", "USER_NEEDS_TIME", None, "Thinking", "set_thinking", "ext"),
    Row("Thinking", "UTTERANCE_UNCLEAR", "lowConfidence", "Clarifying", "ask_targeted_question", "ext"),
    Row("Confirming", "INFO_GIVEN", None, "Confirming", "summarize", "ext"),
    Row("Confirming", "UTTERANCE_UNCLEAR", "lowConfidence", "Confirming", "ask_targeted_question", "ext"),
    Row("Confirming", "NO_PROGRESS", "askedTwice", "Clarifying", "ask_targeted_question", "ext"),
    # the name, contact or payment asked again (Clarifying) or hinted at (Thinking): its answer resumes Confirming
    Row("Clarifying", "INFO_GIVEN", None, "Confirming", "summarize", "ext"),
    Row("Thinking", "INFO_GIVEN", None, "Confirming", "summarize", "ext"),
    # "which one?" answered with a number its list does not have: asked again with the same list
    Row("Clarifying", "UTTERANCE_UNCLEAR", "lowConfidence", "Clarifying", "ask_targeted_question", "ext"),
    # a yes to a read-back whose total a price change (an uploaded menu) made wrong: read back with the new total
    Row("Confirming", "PRICES_CHANGED", None, "Confirming", "read_back_again", "ext"),
    # a new reference several lines fit, or values no line takes, said while clarifying: its own question ("which
    # one?", "a coffee with honey?"), not the pattern hint of an answer still unclear
    Row("Clarifying", "NEW_DOUBT", "lowConfidence", "Clarifying", "ask_targeted_question", "ext"),
)

GuardFn = Callable[[object], bool]


class NoTransition(LookupError):
    """No row of the table for (state, event) whose guard holds."""


def _guard_ok(guard: str | None, guards: dict[str, GuardFn], ctx: object) -> bool:
    if guard is None:
        return True
    negate = guard.startswith("!")
    value = guards[guard.lstrip("!")](ctx)
    return not value if negate else value


def candidate_rows(state: str, event: str) -> list[Row]:
    exact = [r for r in TABLE if r.state == state and r.event == event]
    return exact + [r for r in TABLE if r.state == ANY and r.event == event]


def lookup(state: str, event: str, guards: dict[str, GuardFn], ctx: object) -> Row:
    """The row to follow for ``event`` in ``state``: first a specific-state row, then a ``*`` row."""
    for row in candidate_rows(state, event):
        if _guard_ok(row.guard, guards, ctx):
            return row
    raise NoTransition(f"no transition for {event} in {state}")


def next_state(row: Row, current: str) -> str:
    return current if row.next == STAY else row.next
