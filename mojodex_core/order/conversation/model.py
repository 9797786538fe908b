"""The conversation's data: live state, one turn's input and its outcome (pydantic, JSON round-trippable).

Field names are the platform contract (``helper_notes/conversation_contract.md``): fields may be added,
never renamed or removed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from ..tree import OrderTask

ConvStateName = Literal["Ordering", "Thinking", "Clarifying", "Confirming", "Closing", "Idle"]
Intent = Literal["order_entry", "menu_question", "off_topic"]
OffTopicType = Literal["sexual-content", "prompt-engineering", "not-understandable", "simply-unrelated"]
# "order_complete" (added): the platform acknowledges the ticket (POS ack) -> Closing ends in Idle.
EventName = Literal["silence", "barge_in", "out_of_stock", "session_end", "order_complete"]

STATES: tuple[str, ...] = ("Ordering", "Thinking", "Clarifying", "Confirming", "Closing", "Idle")


class ConversationEnded(Exception):
    """``converse`` was called on a conversation in Idle (final state)."""


class Conversation(BaseModel):
    """The whole live session state (persisted as JSON between turns)."""

    state: ConvStateName = "Ordering"
    order: OrderTask
    language: str = "en"
    off_topic_count: int = 0
    unclear_turns: int = 0  # hesitations and unclear answers in a row (supervisor.MAX_UNCLEAR_TURNS)
    clarify_attempts: int = 0
    silence_count: int = 0
    pending_change: dict | None = None  # an unsafe change (ParsedInput dump + "cancel_indexes") waiting for a yes
    last_mentioned_item: int | None = None
    turn: int = 0
    # -- added fields --------------------------------------------------------------------------------
    last_question: str | None = None  # key of the last question asked ("item:0:size", "order_type", ...)
    question_count: int = 0  # how many times in a row last_question was asked without progress
    next_step_offered: bool = False  # the "anything else?" prompt was offered since the last item change
    proposal: dict | None = None  # an alternative offered (out of stock): {"kind", "item_index(es)", "field", "value"}
    last_response_key: str | None = None
    read_back_total: float | None = None  # the total the last read-back said (a "yes" confirms that total only)
    trace: list[str] = Field(default_factory=list)  # the whole reasoning trace (bounded)

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | dict) -> Conversation:
        if isinstance(data, dict):
            return cls.model_validate(data)
        return cls.model_validate_json(data)


class TurnInput(BaseModel):
    """A customer utterance (``text``) or a global event (``event``).

    Exactly one of them, except ``barge_in`` which may carry the utterance that interrupted the reply
    (it is then routed normally). ``out_of_stock`` needs ``item``.
    """

    text: str | None = None
    event: EventName | None = None
    item: dict | None = None  # out_of_stock: {"item_type": str, "field": str | None, "value": str | None}

    @model_validator(mode="after")
    def _one_of(self) -> TurnInput:
        if self.event is None and self.text is None:
            raise ValueError("a turn needs text or an event")
        if self.event is not None and self.text is not None and self.event != "barge_in":
            raise ValueError("give either text or an event (only barge_in may carry text)")
        if self.event == "out_of_stock":
            if not isinstance(self.item, dict) or not self.item.get("item_type"):
                raise ValueError("out_of_stock needs item = {item_type, field, value}")
        return self


class TurnOutcome(BaseModel):
    conversation: Conversation
    reply: str
    response_key: str
    state_before: ConvStateName
    state_after: ConvStateName
    transition: str
    intent: Intent | None = None
    off_topic_type: OffTopicType | None = None
    parsed: dict | None = None
    diff: list[dict] = Field(default_factory=list)
    trace: list[str] = Field(default_factory=list)
    closed: bool = False
    ended: bool = False
    cancel_reply: bool = False
    timings_ms: dict[str, float] = Field(default_factory=dict)
    # -- added fields --------------------------------------------------------------------------------
    response_keys: list[str] = Field(default_factory=list)  # every resource entry the reply is made of
    errors: list[dict] = Field(default_factory=list)  # OrderError dumps of this turn
    guard: str | None = None  # the guard of the table row used
    action: str | None = None  # the action of the table row used
