"""``converse``: one turn of an order conversation (pure except the optional LLM calls).

1. utterance: deterministic parse -> supervisor (intent) -> LLM parse when unsure -> conversation repair ->
   tentative ``update_state`` (nothing committed yet); global event: its table event.
2. the event of the utterance (``events.py``) and the table row (``table.py``) whose guard holds.
3. the row's action (``actions.py``) commits or not and composes the reply from the resource files.
"""

from __future__ import annotations

import logging
from time import perf_counter

from ..llm_parser import needs_llm, parse_with_llm
from ..menu import Menu
from ..parsed_input import OrderParseError, ParsedInput
from ..parser import parse_deterministic
from ..tree import new_order
from .actions import ACTIONS
from .context import GUARDS, Ctx, apply_parsed
from .events import detect
from .model import Conversation, ConversationEnded, TurnInput, TurnOutcome
from .repair import repair
from .resources import after_opening_pause, before_price_tail, normalise, say
from .supervisor import bounded, classify
from .table import lookup, next_state

log = logging.getLogger(__name__)

EVENTS = {"silence": "E.SILENCE", "barge_in": "E.BARGE_IN", "out_of_stock": "E.OOS",
          "session_end": "E.SESSION_END", "order_complete": "ORDER_COMPLETE"}
MAX_TRACE = 500


def start_conversation(menu: Menu, language: str = "en") -> tuple[Conversation, str]:
    """A new conversation in Ordering with an empty order, and the greeting."""
    conv = Conversation(order=new_order(menu.id, menu.currency), language=language,
                        last_question="order", question_count=1)
    return conv, say(language, "greeting", shop=menu.name)


def _ms(start: float) -> float:
    return round((perf_counter() - start) * 1000, 3)


def _parse(ctx: Ctx) -> None:
    text = ctx.text or ""
    tree = ctx.conv.order
    start = perf_counter()
    parsed = parse_deterministic(text, ctx.menu, tree)
    ctx.timings["parse"] += _ms(start)
    start = perf_counter()
    # Answering: a question of the order is pending, or the assistant asked one of its own ("anything else?",
    # "which one?", an offer) - not the opening "what would you like?", where gibberish is still off topic.
    answering = tree.pending is not None or ctx.conv.last_question not in (None, "order")
    decision = classify(ctx.turn.text or "", parsed, ctx.menu, ctx.lang, llm=ctx.llm, threshold=ctx.threshold,
                        answering=answering)
    ctx.decision = bounded(decision, ctx.conv.unclear_turns)
    ctx.conv.unclear_turns = ctx.conv.unclear_turns + 1 if decision.unclear else 0
    ctx.timings["supervisor"] += _ms(start)
    ctx.trace.append(ctx.decision.trace)
    if ctx.decision.intent == "order_entry":
        text, parsed = _without_price_tail(ctx, text, parsed)
    if ctx.decision.intent == "order_entry" and ctx.llm is not None \
            and needs_llm(parsed, ctx.threshold, ctx.lang) and not (
            parsed.repeat_last and not parsed.unparsed):  # "same again" alone: repair repeats the last line
        from mojodex_core.llm import LLMError

        start = perf_counter()
        try:
            parsed = parse_with_llm(text, ctx.menu, tree, ctx.llm)
            # The model's own "why" when it gave one; else the seed's fallback (what was called, and how).
            why = (parsed.reasoning or "").strip()[:200] or "deterministic parse unsure"
            ctx.trace.append(f"[TOOL_CALL] order_parse: {why} (LLM parse, confidence {parsed.confidence:.2f})")
        except (OrderParseError, LLMError) as exc:
            ctx.rule("parser", f"LLM parse failed ({type(exc).__name__}), deterministic parse kept")
        ctx.timings["parse"] += _ms(start)
    else:
        ctx.rule("parser", f"deterministic, confidence {parsed.confidence:.2f}")
    ctx.parsed = parsed


def _without_price_tail(ctx: Ctx, text: str, parsed: ParsedInput) -> tuple[str, ParsedInput]:
    """"add mushrooms, how much is that?": an order ending with a price question that refers back (set off by a
    comma, a period or "and") is read without it, and the order's price is said once the order is changed - only
    when what comes before it orders something; else the message is read whole, as before."""
    head = before_price_tail(text, ctx.lang)
    if head is None:
        return text, parsed
    start = perf_counter()
    ordered = parse_deterministic(head, ctx.menu, ctx.conv.order)
    ctx.timings["parse"] += _ms(start)
    if not (ordered.new_items or ordered.modifications):
        return text, parsed
    tail = text[len(head):]
    whole = ctx.turn.text or ""
    ctx.text, ctx.norm = head, normalise(whole[:len(whole) - len(tail)])  # ctx.text ends the turn's text
    ctx.price_asked = True
    ctx.rule("price_tail", f"{tail.strip(' ,.')!r} asks the order's price: said once the order is changed")
    return head, ordered


def _understand(ctx: Ctx) -> None:
    _parse(ctx)
    assert ctx.parsed is not None
    if ctx.decision is not None and ctx.decision.intent == "order_entry":
        ctx.parsed, ctx.cancels, ctx.repair_unclear = repair(ctx)
        start = perf_counter()
        ctx.tentative, ctx.diff = apply_parsed(ctx.conv.order, ctx.parsed, ctx.menu, ctx.cancels)
        ctx.timings["update"] += _ms(start)


def converse(conversation: Conversation, turn: TurnInput, menu: Menu, *, llm: object | None = None,
             threshold: float = 0.8) -> TurnOutcome:
    """One turn. Idle is final: raises :class:`ConversationEnded`."""
    if conversation.state == "Idle":
        raise ConversationEnded("the conversation has ended")
    conv = conversation.model_copy(deep=True)
    ctx = Ctx(conv=conv, menu=menu, turn=turn, llm=llm, threshold=threshold)
    ctx.completed_before = {i for i, it in conv.order.items.active() if it.status == "complete"}
    state_before = conv.state
    if turn.event == "barge_in":
        ctx.cancel_reply = True
        ctx.rule("barge_in", "the platform cancels the reply being streamed")
    if turn.text is not None:
        # "hold on, mushrooms on that": the parse reads what follows the pause; the keywords ("hold on": needs
        # time) and the supervisor still hear the whole message
        ctx.text, ctx.norm = after_opening_pause(turn.text, conv.language), normalise(turn.text)
        _understand(ctx)
        event = detect(ctx)
    else:
        event = EVENTS[str(turn.event)]
    row = lookup(conv.state, event, GUARDS, ctx)
    ctx.state_after = next_state(row, conv.state)
    guard = f"[{row.guard}]" if row.guard else ""
    ctx.rule("transition", f"{state_before} --{event}{guard}--> {ctx.state_after}")
    start = perf_counter()
    ACTIONS[row.action](ctx)
    ctx.timings["response"] += _ms(start)
    _expire_pending_change(ctx, event, row.action)
    _bookkeeping(ctx, event)
    conv.state = ctx.state_after  # type: ignore[assignment]
    conv.turn += 1
    conv.last_response_key = ctx.parts[-1][0] if ctx.parts else None
    conv.trace = (conv.trace + ctx.trace)[-MAX_TRACE:]
    decision = ctx.decision
    return TurnOutcome(
        conversation=conv,
        reply=" ".join(text for _, text in ctx.parts),
        response_key=ctx.parts[-1][0] if ctx.parts else "",
        response_keys=[k for k, _ in ctx.parts],
        state_before=state_before,
        state_after=conv.state,
        transition=event,
        guard=row.guard,
        action=row.action,
        intent=decision.intent if decision else None,
        off_topic_type=decision.off_topic_type if decision else None,
        parsed=ctx.parsed.model_dump() if ctx.parsed is not None else None,
        diff=ctx.ops,
        errors=ctx.errors,
        trace=ctx.trace,
        closed=ctx.closed,
        ended=ctx.ended,
        cancel_reply=ctx.cancel_reply,
        timings_ms=ctx.timings,
    )


def _expire_pending_change(ctx: Ctx, event: str, action: str) -> None:
    """An unsafe change waits for the very next answer: a customer who says something else has moved on, and a
    later "yes" to another question must not apply it."""
    if (ctx.turn.text is not None and ctx.conv.pending_change is not None
            and event not in ("CHANGE_CONFIRMED", "CHANGE_REJECTED") and action != "ask_change_confirmation"):
        ctx.conv.pending_change = None
        ctx.rule("unsafe_change", "not answered: dropped")


def _bookkeeping(ctx: Ctx, event: str) -> None:
    conv = ctx.conv
    conv.silence_count = conv.silence_count + 1 if event == "E.SILENCE" else 0
    if ctx.state_after == "Clarifying":
        conv.clarify_attempts = conv.clarify_attempts + 1 if conv.state == "Clarifying" else 1
    else:
        conv.clarify_attempts = 0
    keeps_proposal = ("E.SILENCE", "E.BARGE_IN", "MENU_QUESTION", "OFF_TOPIC")
    # kept while its question is open: in Clarifying, or asked this turn (Confirming asks "which one?" in place)
    if ctx.state_after != "Clarifying" and event not in keeps_proposal and not ctx.proposed:
        conv.proposal = None
    if ctx.state_after == "Idle":
        conv.order.pending = None

