"""The routing decision in a home chat reply: a tag or a function call, offered the way tools are. Pure."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mojodex_core.tags import ParsedReply

ROUTE_TAG = "route_to_task"
ROUTE_FUNCTION = "route_to_task"


@dataclass(frozen=True)
class RoutingDecision:
    task_name: str
    # "tag" or "function": how the model asked.
    form: str


def route_tool(task_names: list[str]) -> dict[str, Any]:
    """The OpenAI function the model may call to start one of ``task_names``."""
    return {
        "type": "function",
        "function": {
            "name": ROUTE_FUNCTION,
            "description": "Start one of the user's tasks when their latest message asks for it.",
            "parameters": {
                "type": "object",
                "properties": {"task_name": {"type": "string", "enum": list(task_names)}},
                "required": ["task_name"],
                "additionalProperties": False,
            },
        },
    }


def _task_name_argument(raw: Any) -> str:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except ValueError:
            return ""
    if isinstance(raw, dict):
        value = raw.get("task_name")
        return value.strip() if isinstance(value, str) else ""
    return ""


def routing_decision(reply: ParsedReply, function_calls: list[dict[str, Any]] | None = None) -> RoutingDecision | None:
    """The first routing request of the reply, function call first; None when the model answered itself."""
    for call in function_calls or []:
        function = call.get("function") or {}
        if function.get("name") == ROUTE_FUNCTION:
            return RoutingDecision(_task_name_argument(function.get("arguments")), "function")
    for content in reply.captured.get(ROUTE_TAG, []):
        name = content.strip()
        if name:
            return RoutingDecision(name, "tag")
    return None
