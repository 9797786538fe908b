"""Tool requests in LLM replies, both forms, and the messages that carry results back. Pure.

Tag form (any chunk split is hidden from the stream, like every ``<tool_*>`` tag)::

    <tool_call><tool_name>internal_memory</tool_name><tool_query>{"query": "budget"}</tool_query>
    <tool_explanation>I will look for your earlier budget notes.</tool_explanation></tool_call>

Native form: the provider's merged ``tool_calls`` (``{"id", "function": {"name", "arguments"}}``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mojodex_core.tags import ParsedReply

TAG_CALL = "tool_call"
_PART = {
    name: re.compile(rf"<{name}>(.*?)(?:</{name}>|$)", re.DOTALL | re.IGNORECASE)
    for name in ("tool_name", "tool_query", "tool_explanation")
}


@dataclass(frozen=True)
class ToolRequest:
    name: str
    # The parsed JSON query; None when it did not parse (see query_error).
    query: Any
    explanation: str = ""
    # The provider's call id (native form); None for the tag form.
    call_id: str | None = None
    raw_query: str = ""
    query_error: str | None = None

    @property
    def native(self) -> bool:
        return self.call_id is not None

    def stored_query(self) -> dict[str, Any]:
        """What task_tool_query.query keeps: the query, or the raw text when it was not a JSON object."""
        if isinstance(self.query, dict):
            return self.query
        return {"raw": self.raw_query}


@dataclass(frozen=True)
class RecordedUse:
    """A use a run of the message already made, as asked and with its result (see tool_runs.recorded_uses)."""

    request: ToolRequest
    result: dict[str, Any]
    # It spent one of the turn's calls: it ran or the user declined it. One that failed (refused, timed out,
    # errored) is told to the model but leaves a retried turn free to try again.
    counts: bool = True


def _parse_query(raw: str) -> tuple[Any, str | None]:
    text = raw.strip()
    if not text:
        return {}, None
    try:
        return json.loads(text), None
    except ValueError as exc:
        return None, f"the query is not valid JSON ({exc.msg} at position {exc.pos})"


def _part(name: str, content: str) -> str:
    match = _PART[name].search(content)
    return match.group(1).strip() if match else ""


def from_tags(reply: ParsedReply) -> list[ToolRequest]:
    requests = []
    for content in reply.captured.get(TAG_CALL, []):
        raw = _part("tool_query", content)
        query, error = _parse_query(raw)
        requests.append(ToolRequest(
            name=_part("tool_name", content), query=query, explanation=_part("tool_explanation", content),
            raw_query=raw, query_error=error,
        ))
    return requests


def from_function_calls(tool_calls: list[dict[str, Any]]) -> list[ToolRequest]:
    requests = []
    for index, call in enumerate(tool_calls or []):
        function = call.get("function") or {}
        raw = function.get("arguments") or ""
        query, error = _parse_query(raw)
        explanation = ""
        if isinstance(query, dict) and isinstance(query.get("explanation"), str):
            query = dict(query)
            explanation = query.pop("explanation")
        requests.append(ToolRequest(
            name=(function.get("name") or "").strip(), query=query, explanation=explanation,
            call_id=call.get("id") or f"call_{index}", raw_query=raw, query_error=error,
        ))
    return requests


def openai_tools(tools: list[dict[str, Any]], schemas: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The task's tools as OpenAI ``tools`` (each schema gains an optional ``explanation`` for the user)."""
    offered = []
    for tool in tools:
        schema = json.loads(json.dumps(schemas.get(tool["name"]) or {"type": "object"}))
        properties = schema.setdefault("properties", {})
        properties["explanation"] = {"type": "string", "description": "One short sentence for the user."}
        offered.append({
            "type": "function",
            "function": {"name": tool["name"], "description": tool.get("usage_description", ""),
                         "parameters": schema},
        })
    return offered


def tag_call_text(request: ToolRequest) -> str:
    """The tag form of a request (how a resumed turn replays the model's ask)."""
    return (
        f"<{TAG_CALL}><tool_name>{request.name}</tool_name>"
        f"<tool_query>{json.dumps(request.stored_query())}</tool_query>"
        f"<tool_explanation>{request.explanation}</tool_explanation></{TAG_CALL}>"
    )


def result_messages(
    assistant_text: str, visible_text: str, done: list[tuple[ToolRequest, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The assistant's ask and the results, appended to the conversation for the follow-up call."""
    native = [(r, res) for r, res in done if r.native]
    tagged = [(r, res) for r, res in done if not r.native]
    messages: list[dict[str, Any]] = []
    if native:
        messages.append({
            "role": "assistant",
            "content": visible_text or None,
            "tool_calls": [
                {"id": r.call_id, "type": "function",
                 "function": {"name": r.name, "arguments": r.raw_query or json.dumps(r.stored_query())}}
                for r, _ in native
            ],
        })
        messages += [
            {"role": "tool", "tool_call_id": r.call_id, "content": json.dumps(res, default=str)} for r, res in native
        ]
    if tagged:
        if not native:
            messages.append({"role": "assistant", "content": assistant_text})
        blocks = [
            f"<tool_result><tool_name>{r.name}</tool_name><result>{json.dumps(res, default=str)}</result></tool_result>"
            for r, res in tagged
        ]
        messages.append({"role": "user", "content": "\n".join(blocks)})
    return messages


def replayed_messages(uses: list[RecordedUse]) -> list[dict[str, Any]]:
    """Recorded uses (a resumed or retried turn's) as the conversation carries them, each its ask and its
    result in the form it was made (``result_messages``), in call order."""
    messages: list[dict[str, Any]] = []
    for use in uses:
        asked = "" if use.request.native else tag_call_text(use.request)
        messages += result_messages(asked, "", [(use.request, use.result)])
    return messages


NO_MORE_TOOLS = (
    "You have used all the tool calls allowed for this answer ({limit}). Do not ask for any tool now: "
    "answer the user with what you already have."
)
