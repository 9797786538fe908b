"""Phase 2 of an instruct turn: stream the LLM reply, run the tools it asks for, follow up.

One turn may make several LLM calls: the first answers the user's message; when it asks for
tools (tag form or native function calls), they run and their results go back to the model in
a follow-up call, until the model answers without tools or the per-turn bound is reached
(then it is told no more tools and must answer). Every call adds one reasoning trace entry:
given a ``trace`` list, ``generate`` collects the entries there for the caller to write with
its outcome (an instruct turn writes them in its answer's transaction); without one, each is
written at once in a transaction of its own.

What the user sees: the visible text of every call, streamed live through the tag parser
(so ``<reasoning>`` and tool tags never reach a client, at any chunk split), the calls' texts
joined with a newline; the final reply's title/draft when it writes the result.

A tool that requires approval ends the turn: the outcome carries the request, and the turn
stores it with a message asking the user (see ``tool_runs.record_approval_request``).

A turn answering a message again (a retry of a failed turn, the follow-up of a decision) starts
from the tool uses already recorded for that message (``TurnRequest.recorded_uses``), replayed
as the calls and results they were: the model goes on from them instead of asking again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.execution.coalescer import TokenCoalescer
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.reasoning import append_trace, trace_entry
from mojodex_core.execution.tool_requests import (
    NO_MORE_TOOLS,
    RecordedUse,
    ToolRequest,
    from_function_calls,
    from_tags,
    openai_tools,
    replayed_messages,
    result_messages,
)
from mojodex_core.execution.tool_runs import ToolRuns, check_request
from mojodex_core.llm import LLMProvider
from mojodex_core.tags import ParsedReply, TagStreamParser
from mojodex_core.tools import get_tool

log = logging.getLogger("mojodex.turn")

ToolMode = Literal["auto", "tags", "functions"]
TOOL_MODES: tuple[str, ...] = ("auto", "tags", "functions")
FIRST_CALL_LABEL = "INSTRUCT_TASK"
FOLLOW_UP_LABEL = "TOOL_FOLLOW_UP"


@dataclass(frozen=True)
class ToolSettings:
    mode: ToolMode = "auto"
    max_calls: int = 3
    timeout_s: float = 10.0


@dataclass(frozen=True)
class TurnRequest:
    """What the generator needs from the turn's context."""

    session_id: str
    user_task_execution_pk: int
    user_id: str
    message_pk: int
    llm_messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    resume_tool_execution_pk: int | None = None
    # The uses already made for the message (a retry of a failed turn, a follow-up): see tool_runs.recorded_uses.
    recorded_uses: tuple[RecordedUse, ...] = ()


@dataclass(frozen=True)
class TurnOutcome:
    reply: ParsedReply
    # Set when the turn ends waiting for the user to approve this request.
    approval: ToolRequest | None = None


def prompt_tools(task_spec: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The task's tools as the instruct prompt describes them: name, usage, query schema."""
    described = []
    for spec in (task_spec or {}).get("tools") or []:
        tool = get_tool(spec["name"])
        described.append({
            "name": spec["name"],
            "usage_description": spec.get("usage_description", ""),
            "description": tool.description if tool else "",
            "query_schema": json.dumps(tool.query_schema if tool else {"type": "object"}),
        })
    return described


def offers_native(mode: str) -> bool:
    return mode in ("auto", "functions")


def describes_tags(mode: str) -> bool:
    return mode in ("auto", "tags")


class ReplyGenerator:
    def __init__(
        self,
        session_factory: sessionmaker[DbSession],
        events: EventPublisher,
        llm: LLMProvider,
        settings: ToolSettings,
        *,
        coalesce_ms: int,
        grammar: str | None,
        max_tokens: int | None,
    ) -> None:
        self._factory = session_factory
        self._events = events
        self._llm = llm
        self._settings = settings
        self._coalesce_ms = coalesce_ms
        self._grammar = grammar
        self._max_tokens = max_tokens
        self._runs = ToolRuns(session_factory, settings.timeout_s)

    def generate(
        self, turn: TurnRequest, cancel: threading.Event, trace: list[tuple[str, str]] | None = None
    ) -> TurnOutcome:
        """The turn's outcome. ``trace``: collects each call's ``(entry, source)`` as it is decided
        (entries of calls made before an error included) instead of writing them here."""
        base = {"session_id": turn.session_id, "user_task_execution_pk": turn.user_task_execution_pk}

        def publish_tokens(channel: str, text: str) -> None:
            if channel == "mojo":
                self._events.publish(turn.session_id, "mojo_token", {**base, "delta": text}, durable=False)
            else:
                self._events.publish(
                    turn.session_id, "draft_token", {**base, "part": channel, "delta": text}, durable=False
                )

        coalescer = TokenCoalescer(publish_tokens, self._coalesce_ms)
        try:
            outcome = self._loop(turn, cancel, coalescer, trace)
        except BaseException:
            coalescer.discard()  # the error event replaces the partial answer
            raise
        coalescer.close()
        return outcome

    # ------------------------------------------------------------------ the loop

    def _loop(
        self, turn: TurnRequest, cancel: threading.Event, coalescer: TokenCoalescer,
        trace: list[tuple[str, str]] | None,
    ) -> TurnOutcome:
        task_tools = {t["name"]: t for t in turn.tools}
        # A grammar-constrained model cannot write tool tags nor function calls: no tools then.
        tools_on = bool(task_tools) and self._grammar is None
        native = (
            openai_tools(turn.tools, {n: get_tool(n).query_schema for n in task_tools if get_tool(n)})
            if tools_on and offers_native(self._settings.mode) else None
        )
        # The turn goes on from the uses its message made already, told to the model as they were. Those that ran
        # or were declined count toward the bound; failed ones do not (a retry after an outage may try again).
        messages = list(turn.llm_messages) + replayed_messages(list(turn.recorded_uses))
        shown: list[str] = []  # visible mojo text of each call so far
        used = sum(use.counts for use in turn.recorded_uses)
        label = FOLLOW_UP_LABEL if turn.recorded_uses else FIRST_CALL_LABEL
        if turn.resume_tool_execution_pk is not None:
            request, result = self._runs.resume(turn.resume_tool_execution_pk, task_tools, turn.user_id)
            messages += replayed_messages([RecordedUse(request, result)])
            used, label = used + 1, FOLLOW_UP_LABEL
        forced = False
        while True:
            offer = used < self._settings.max_calls
            if not offer:
                forced = True
                messages.append(
                    {"role": "system", "content": NO_MORE_TOOLS.format(limit=self._settings.max_calls)}
                )
            reply, native_calls = self._call(messages, label, turn, cancel, coalescer, shown,
                                             native if offer else None)
            # Parsed even when the task has no tools: an unknown tool is told to the model.
            requests = from_tags(reply) + from_function_calls(native_calls)
            reasoning = " ".join(reply.captured.get("reasoning", [])) or None
            # Past the bound the calls asked for are ignored: the decision traced is the answer given.
            entry = trace_entry(reasoning, [] if forced else requests, reply.text)
            if trace is not None:
                trace.append((entry, label))
            else:
                self._trace(turn.user_task_execution_pk, entry, label)
            if reply.text:
                shown.append(reply.text)
            if not requests or forced:
                if requests:
                    log.warning("model asked for tools past the bound execution=%s; ignored",
                                turn.user_task_execution_pk)
                return TurnOutcome(dataclasses.replace(reply, text="\n".join(shown)))
            # Only a request that could run is put to the user: one with a bad query is refused like any
            # other (recorded as failed, the error told to the model), never approved and run unchecked.
            approval = next(
                (r for r in requests if r.name in task_tools and task_tools[r.name].get("requires_approval")
                 and check_request(r, task_tools) is None), None
            )
            if approval is not None:
                if len(requests) > 1:
                    log.warning("tool %s needs approval: %d other tool call(s) of the reply dropped",
                                approval.name, len(requests) - 1)
                ask = approval.explanation or f"I would like to use the tool {approval.name}. Do you approve?"
                if shown:
                    coalescer.add("mojo", "\n")
                coalescer.add("mojo", ask)
                shown.append(ask)
                return TurnOutcome(dataclasses.replace(reply, text="\n".join(shown)), approval=approval)
            done = []
            for request in requests:
                # A call past the bound is refused, and recorded like every other use asked for.
                refused = NO_MORE_TOOLS.format(limit=self._settings.max_calls) if used >= self._settings.max_calls \
                    else None
                result = self._runs.run(request, task_tools, user_id=turn.user_id,
                                        user_task_execution_pk=turn.user_task_execution_pk,
                                        message_pk=turn.message_pk, refused=refused)
                used += 1
                done.append((request, result))
            messages += result_messages(reply.text_with_tags, reply.text, done)
            label = FOLLOW_UP_LABEL

    def _call(
        self,
        messages: list[dict[str, Any]],
        label: str,
        turn: TurnRequest,
        cancel: threading.Event,
        coalescer: TokenCoalescer,
        shown: list[str],
        tools: list[dict[str, Any]] | None,
    ) -> tuple[ParsedReply, list[dict[str, Any]]]:
        parser = TagStreamParser()
        separate = [bool(shown)]  # the previous call's text and this one's are joined by a newline

        def add(channel: str, text: str) -> None:
            if channel == "mojo" and separate[0]:
                coalescer.add("mojo", "\n")
                separate[0] = False
            coalescer.add(channel, text)

        def on_token(chunk: str) -> None:
            for delta in parser.feed(chunk):
                add(delta.channel, delta.text)

        result = self._llm.chat(
            messages,
            label=label,
            stream=True,
            on_token=on_token,
            user_task_execution_pk=turn.user_task_execution_pk,
            cancel=cancel,
            grammar=self._grammar,
            max_tokens=self._max_tokens,
            tools=tools,
        )
        calls = list(result.tool_calls or []) if tools else []
        # An earlier call's text is the turn's reply already, and a reply cut off by the token limit never got
        # past its reasoning: a <reasoning> this one left open then stays hidden.
        deltas, reply = parser.finish(calls_tools=bool(calls), shown_before=bool(shown), truncated=result.truncated)
        for delta in deltas:
            add(delta.channel, delta.text)
        return reply, calls

    def _trace(self, user_task_execution_pk: int, entry: str, source: str) -> None:
        try:
            with transaction(self._factory) as db:  # a transaction of its own: see append_trace_entries
                append_trace(db, user_task_execution_pk, [entry], source, lock=True)
        except Exception:  # observability must never break the user's turn
            log.exception("could not append to the reasoning trace of execution %s", user_task_execution_pk)
