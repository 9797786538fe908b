"""What one order turn carries between its phases, and the small adapters it hands out."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from mojodex_core.order.conversation import Conversation, TurnInput
from mojodex_core.order.menu import Menu


class TurnFailed(Exception):
    """A turn that cannot produce an answer; the message is shown to the user."""


class OrderClosed(TurnFailed):
    """A turn no retry can answer: the order is finished, or its execution gone. Its error event
    says ``retryable: false`` (sending the message again would only be refused)."""


class BoundLLM:
    """The platform's provider with this turn's execution and cancel flag bound (StructuredLLM)."""

    def __init__(self, llm: Any, user_task_execution_pk: int, cancel: threading.Event) -> None:
        self._llm = llm
        self._pk = user_task_execution_pk
        self._cancel = cancel

    def structured(self, messages: list[dict], response_model: type, *, label: str) -> Any:
        return self._llm.structured(
            messages, response_model, label=label, user_task_execution_pk=self._pk, cancel=self._cancel
        )


@dataclass
class OrderTurnContext:
    session_id: str
    message_pk: int
    message_id: str | None
    user_task_execution_pk: int
    user_id: str
    output_text_type_fk: int | None
    webhook_url: str | None
    key: str
    conversation: Conversation | None
    turn: int  # the platform's count of turns answered in this conversation, before this one
    menu: Menu | None
    turn_input: TurnInput | None
    utterance: str | None = None
    event: str | None = None
    routed: bool = False  # started by the home chat's routing (order_runtime.routed)
    setup_error: str | None = None
    setup_final: bool = False  # no retry can answer it (the order finished, its execution gone)
    started_now: bool = False
    begin_ms: float = 0.0


def live_state(user_task_execution_pk: int, turn: int, conversation: Conversation) -> str:
    """What the live store keeps: the conversation, the execution and the platform's turn counter it
    belongs to. The key names the session, which a home chat shares between the orders it routed to."""
    return json.dumps({"execution": user_task_execution_pk, "turn": turn,
                       "conversation": json.loads(conversation.to_json())})
