"""Shared set-up of the tool tests: test tools, a task that lists them, one-turn helpers."""

from __future__ import annotations

import copy
import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from sqlalchemy import select

from mojodex_core.db.models import ReasoningTraceEntry, TaskToolExecution, TaskToolQuery
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from mojodex_core.tools import Tool, ToolContext, register
from tests.integration._helpers import FINAL_EVENTS, new_execution, send, turn_deltas
from tests.support.live import TEST_TASK, Client, LiveServer

TOOL_TASK = "test_tools"
# Nothing a client receives may carry markup, a reasoning or a tool tag.
LEAKS = ("<", ">", "reasoning", "tool_", "user_language", "SECRET-WHY")


class EchoTool(Tool):
    name = "echo"
    description = "Returns its text."
    query_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return {"echo": query["text"], "user_id": context.user_id}


class GuardedTool(EchoTool):
    name = "guarded_echo"


class SlowTool(EchoTool):
    name = "slow"

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        time.sleep(3)
        return {"late": True}


class BoomTool(EchoTool):
    name = "boom"

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        raise RuntimeError("kaboom")


class ClockTool(EchoTool):
    """Returns what JSON cannot hold (a datetime), as a careless tool may."""

    name = "clock"

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return {"now": datetime.now(UTC)}


for _tool in (EchoTool(), GuardedTool(), SlowTool(), BoomTool(), ClockTool()):
    register(_tool)


class JsonService:
    """A local HTTP service for http_json: GET /status?x=.. answers JSON, /big answers 200 KB."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                service.requests.append(self.path)
                parsed = urlparse(self.path)
                if parsed.path == "/big":
                    body = json.dumps({"blob": "x" * 200_000}).encode()
                elif parsed.path == "/slow":
                    time.sleep(2)
                    body = b"{}"
                else:
                    params = {k: v[0] for k, v in parse_qs(parsed.query).items()}
                    body = json.dumps({"status": "gold", "params": params}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def tool_task_spec(service_url: str) -> dict[str, Any]:
    spec = copy.deepcopy(TEST_TASK)
    spec["name_for_system"] = TOOL_TASK
    spec["tools"] = [
        {"name": "echo", "usage_description": "Echo a text."},
        {"name": "guarded_echo", "usage_description": "Echo, after the user agrees.", "requires_approval": True},
        {"name": "slow", "usage_description": "Slow.", "config": {"timeout_s": 0.3}},
        {"name": "boom", "usage_description": "Crashes."},
        {"name": "clock", "usage_description": "The time, not as JSON."},
        {"name": "internal_memory", "usage_description": "Search the user's earlier work."},
        {"name": "http_json", "usage_description": "Customer status.",
         "config": {"url": service_url + "/status", "allowed_hosts": ["127.0.0.1"], "timeout_s": 2}},
    ]
    return spec


def install_tool_task(live: LiveServer, service_url: str) -> None:
    with live.db() as db:
        store_spec(db, validate_spec(tool_task_spec(service_url)), "upsert")


def tag_call(name: str, query: Any, explanation: str = "Checking something.", why: str = "SECRET-WHY tool") -> str:
    query_text = query if isinstance(query, str) else json.dumps(query)
    return (
        f"<reasoning>{why}</reasoning><tool_call><tool_name>{name}</tool_name>"
        f"<tool_query>{query_text}</tool_query><tool_explanation>{explanation}</tool_explanation></tool_call>"
    )


def answer(text: str, why: str = "SECRET-WHY answer") -> str:
    return f"<reasoning>{why}</reasoning><user_language>en</user_language><ask_user_input>{text}</ask_user_input>"


def one_char(text: str) -> list[str]:
    return list(text)


class ToolTurn:
    """A user of the tool task with an open socket; as a context manager, closed (and the server idle) at its end."""

    def __init__(self, live: LiveServer, client: Client | None = None) -> None:
        self.live = live
        self.client = client or live.new_user(tasks=[TOOL_TASK])
        execution = self.client.new_execution(TOOL_TASK)
        self.pk, self.session_id = execution["user_task_execution_pk"], execution["session_id"]
        self.socket = self.client.socket(self.session_id)

    def send(self, text: str, final_event: str = "mojo_message", count: int = 1) -> dict[str, Any]:
        send(self.client, self.pk, self.session_id, text)
        return self.wait(final_event, count)

    def wait(self, final_event: str = "mojo_message", count: int = 1) -> dict[str, Any]:
        finals = self.socket.wait_event(final_event, count, timeout=30)
        assert not self.socket.named("error"), self.socket.named("error")
        return finals[count - 1]

    def deltas(self, final: dict[str, Any]) -> dict[str, list[str]]:
        return turn_deltas(list(self.socket.events), final)

    def all_text_sent(self) -> list[str]:
        """Every text a client received on this session: deltas and final messages."""
        out = []
        for name, data in self.socket.events:
            if name in ("mojo_token", "draft_token"):
                out.append(data["delta"])
            elif name in FINAL_EVENTS and isinstance(data, dict):
                out += [str(data.get(k) or "") for k in ("text", "produced_text", "produced_text_title")]
        return out

    def close(self) -> None:
        self.socket.close()
        self.live.wait_idle()

    def __enter__(self) -> ToolTurn:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def assert_nothing_leaked(texts: list[str]) -> None:
    for text in texts:
        for bad in LEAKS:
            assert bad not in text, f"{bad!r} leaked to a client in {text!r}"


def tool_rows(live: LiveServer, pk: int) -> list[tuple[TaskToolExecution, list[TaskToolQuery]]]:
    with live.db() as db:
        executions = list(db.scalars(select(TaskToolExecution).where(TaskToolExecution.user_task_execution_fk == pk)
                                     .order_by(TaskToolExecution.task_tool_execution_pk)))
        out = []
        for execution in executions:
            queries = list(db.scalars(select(TaskToolQuery)
                                      .where(TaskToolQuery.task_tool_execution_fk == execution.task_tool_execution_pk)))
            out.append((execution, queries))
        db.expunge_all()
        return out


def trace(live: LiveServer, pk: int) -> list[ReasoningTraceEntry]:
    with live.db() as db:
        rows = list(db.scalars(select(ReasoningTraceEntry).where(ReasoningTraceEntry.user_task_execution_fk == pk)
                               .order_by(ReasoningTraceEntry.position)))
        db.expunge_all()
        return rows


def tool_results_sent(request: dict[str, Any]) -> list[str]:
    """The tool results a follow-up LLM request carried (tool messages, or <tool_result> user messages)."""
    out = []
    for message in request["messages"]:
        content = message.get("content") or ""
        if message["role"] == "tool" or (message["role"] == "user" and "<tool_result>" in content):
            out.append(content)
    return out


__all__ = ["new_execution"]
