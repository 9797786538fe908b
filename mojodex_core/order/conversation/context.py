"""One turn's working data, the guards of the state machine and the apply helpers shared by the actions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..menu import Menu
from ..parsed_input import ParsedInput
from ..state import StateDiff, update_state
from ..tree import OrderTask
from .model import Conversation, TurnInput
from .resources import has_phrase, hesitation_only, keywords, normalise, only_phrases
from .steps import Step, next_step
from .supervisor import Decision
from .views import current_total


@dataclass
class Ctx:
    conv: Conversation  # the working copy: actions change it, the input conversation is never touched
    menu: Menu
    turn: TurnInput
    llm: Any
    threshold: float
    trace: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=lambda: {"parse": 0.0, "supervisor": 0.0,
                                                                "update": 0.0, "response": 0.0})
    text: str | None = None
    norm: str = ""
    parsed: ParsedInput | None = None
    decision: Decision | None = None
    tentative: OrderTask | None = None  # the order with this utterance applied (committed by the actions)
    diff: StateDiff | None = None
    cancels: list[int] = field(default_factory=list)  # extra item removals found by conversation repair
    parts: list[tuple[str, str]] = field(default_factory=list)  # (response key, text) of the reply
    ops: list[dict] = field(default_factory=list)  # diff ops committed this turn
    errors: list[dict] = field(default_factory=list)
    closed: bool = False
    ended: bool = False
    cancel_reply: bool = False
    state_after: str = ""
    completed_before: set[int] = field(default_factory=set)  # items already complete before this turn
    repair_unclear: bool = False  # a reference the parser output could not represent
    pending_reference: dict | None = None  # the change that reference asked for, kept for "which one?"
    proposed: bool = False  # this turn's reply asked about a proposal ("which one?", "a coffee with honey?")
    price_asked: bool = False  # the message ended with "how much is that?": the order's price, once changed

    @property
    def lang(self) -> str:
        return self.conv.language

    @property
    def kw(self) -> dict[str, Any]:
        return keywords(self.conv.language)

    def rule(self, name: str, what: str) -> None:
        self.trace.append(f"[RULE] {name}: {what}")

    def say(self, key: str, text: str) -> None:
        self.parts.append((key, text))

    # -- keyword predicates ----------------------------------------------------------------------
    def only(self, *keys: str) -> bool:
        return only_phrases(self.norm, *(self.kw.get(k, ()) for k in keys))

    def has(self, key: str) -> str | None:
        return has_phrase(self.norm, self.kw.get(key, ()))

    def hesitates(self) -> bool:
        """Nothing but hesitation words ("hmm", "umm", "errr")."""
        return hesitation_only(self.norm, self.kw.get("hesitation", ()))

    @property
    def tree(self) -> OrderTask:
        return self.tentative if self.tentative is not None else self.conv.order


def live_count(tree: OrderTask) -> int:
    return len(tree.items.active())


def item_signature(tree: OrderTask) -> list[tuple[str, dict[str, Any], bool]]:
    return [(it.item_type, it.fields, it.status == "skipped") for it in tree.items.items]


def items_changed(ctx: Ctx) -> bool:
    return ctx.tentative is not None and item_signature(ctx.tentative) != item_signature(ctx.conv.order)


def removed_count(ctx: Ctx) -> int:
    if ctx.tentative is None:
        return 0
    before = {i: it.quantity for i, it in ctx.conv.order.items.active()}
    after = {i for i, _ in ctx.tentative.items.active()}
    # Items, not lines: "remove the pizzas" on a line of two pizzas removes two items.
    return sum(quantity for i, quantity in before.items() if i not in after)


# -- guards (named in the table) -----------------------------------------------------------------------

def has_order(ctx: Ctx) -> bool:
    return live_count(ctx.tree) > 0


def low_confidence(ctx: Ctx) -> bool:
    """The parse (after the LLM fallback, when there is one) is under the threshold or left words unresolved,
    or conversation repair met a reference the parse cannot represent."""
    p = ctx.parsed
    if p is None:
        return False
    return ctx.repair_unclear or p.confidence < ctx.threshold or bool(p.unparsed)


def unsafe_change(ctx: Ctx) -> bool:
    """Removing two or more items, or emptying the order."""
    if ctx.tentative is None:
        return False
    before = live_count(ctx.conv.order)
    return removed_count(ctx) >= 2 or (before > 0 and live_count(ctx.tentative) == 0)


def silenced_before(ctx: Ctx) -> bool:
    return ctx.conv.silence_count >= 1


OFF_TOPIC_LIMIT = 3


def off_topic_limit(ctx: Ctx) -> bool:
    return ctx.conv.off_topic_count + 1 >= OFF_TOPIC_LIMIT


def read_back_stale(ctx: Ctx) -> bool:
    """The read-back being answered said a total the menu's prices no longer give (a price changed since). A
    conversation stored before ``read_back_total`` was kept has the read-back's total in its order's stored line
    totals (the prices are those of the last turn, the read-back's)."""
    said = ctx.conv.read_back_total
    if said is None:
        said = ctx.conv.order.total()
    return ctx.conv.last_question == "checkout" and abs(current_total(ctx.conv.order, ctx.menu) - said) >= 0.005


def upcoming_step(ctx: Ctx, state: str | None = None) -> Step:
    return next_step(ctx.tree, ctx.menu, state or ctx.conv.state)


def asked_twice(ctx: Ctx) -> bool:
    """The question to ask now was already asked twice in a row without progress."""
    step = upcoming_step(ctx)
    return step.key == ctx.conv.last_question and ctx.conv.question_count >= 2 and not items_changed(ctx)


GUARDS = {
    "hasOrder": has_order,
    "lowConfidence": low_confidence,
    "unsafeChange": unsafe_change,
    "silencedBefore": silenced_before,
    "offTopicLimit": off_topic_limit,
    "askedTwice": asked_twice,
}


# -- applying parses -----------------------------------------------------------------------------------

def apply_parsed(tree: OrderTask, parsed: ParsedInput, menu: Menu, cancels: list[int]) -> tuple[OrderTask, StateDiff]:
    """``update_state``, plus the extra removals conversation repair found (one update per removal)."""
    new, diff = update_state(tree, parsed, menu)
    for idx in cancels:
        if idx == parsed.cancel_item_index:
            continue
        notes = new.last_turn
        new, more = update_state(new, ParsedInput(cancel_item_index=idx), menu)
        notes.cancelled.extend(new.last_turn.cancelled)
        notes.errors.extend(new.last_turn.errors)
        new.last_turn = notes
        new.turn -= 1
        diff.ops.extend(more.ops)
        diff.errors.extend(more.errors)
    return new, diff


def pending_change_dump(ctx: Ctx) -> dict:
    assert ctx.parsed is not None
    return ctx.parsed.model_dump() | {"cancel_indexes": list(ctx.cancels)}


def normalise_text(text: str) -> str:
    return normalise(text)
