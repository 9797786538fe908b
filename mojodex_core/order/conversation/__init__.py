"""The conversation layer of order tasks: a state machine (Ordering, Thinking, Clarifying, Confirming,
Closing, Idle) driven by one transition table, an intent supervisor, predefined responses from resource
files and a reasoning trace. Pure: no server, no DB; the LLM only through ``llm.structured(...)``.

See ``docs/order_conversation.md``.
"""

from .engine import converse, start_conversation
from .model import (
    Conversation,
    ConversationEnded,
    ConvStateName,
    EventName,
    Intent,
    OffTopicType,
    TurnInput,
    TurnOutcome,
)
from .table import TABLE, NoTransition, Row
from .views import affected_by, at_current_prices, build_ticket, mark_unavailable, order_view

__all__ = [
    "TABLE", "ConvStateName", "Conversation", "ConversationEnded", "EventName", "Intent", "NoTransition",
    "OffTopicType", "Row",
    "TurnInput", "TurnOutcome", "affected_by", "at_current_prices", "build_ticket", "converse", "mark_unavailable",
    "order_view", "start_conversation",
]
