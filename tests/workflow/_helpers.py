"""Driving workflows through the public API: start, wait for step states, decide."""

from __future__ import annotations

import time
from typing import Any, Callable

from sqlalchemy import select

from mojodex_core.db.models import Message
from mojodex_core.workflow.runner import RUN_EVENT
from tests.support.live import Client, LiveServer

POEM = "write_poem"
DOC = "generate_documentation_from_video"


def poem_user(live: LiveServer) -> Client:
    return live.new_user(tasks=[POEM, DOC])


def start_poem(user: Client, topic: str = "the sea at night") -> dict[str, Any]:
    created = user.new_execution(POEM)
    user.ok("POST", "/user_task_execution_run", json={
        "user_task_execution_pk": created["user_task_execution_pk"], "inputs": {"poem_topic": topic}})
    return created


def start_doc(user: Client, filename: str, content: bytes) -> dict[str, Any]:
    created = user.new_execution(DOC)
    user.ok("POST", "/user_task_execution_run", data={"user_task_execution_pk": created["user_task_execution_pk"]},
            files={"video_recording": (filename, content, "text/plain")})
    return created


def steps(user: Client, pk: int, history: bool = False) -> list[dict[str, Any]]:
    params = {"user_task_execution_pk": pk, **({"include_history": "1"} if history else {})}
    return user.ok("GET", "/user_workflow_step_execution", params=params)["step_executions"]


def wait_steps(user: Client, pk: int, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 15.0,
               history: bool = False) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        current = steps(user, pk, history)
        if predicate(current):
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; step executions: {current}")
        time.sleep(0.05)


def execution(user: Client, pk: int) -> dict[str, Any]:
    return user.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})


def wait_completed(user: Client, pk: int, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while execution(user, pk)["status"] != "completed":
        if time.monotonic() > deadline:
            raise AssertionError(f"not completed: {steps(user, pk, True)}")
        time.sleep(0.05)
    return user.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": pk})


def awaiting(rank: int) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda rows: any(r["rank"] == rank and r["status"] == "done" and r["validated"] is None for r in rows)


def validate(user: Client, step_pk: int, validated: bool = True) -> dict[str, Any]:
    return user.ok("POST", "/user_workflow_step_execution",
                   json={"user_workflow_step_execution_pk": step_pk, "validated": validated})


def prompts(llm) -> list[str]:  # noqa: ANN001
    """The system prompts the scripted LLM received, in order."""
    return [next((m["content"] for m in r["messages"] if m["role"] == "system"), "") for r in llm.requests]


def at_the_divider(live: LiveServer, llm, topics: list[str]) -> tuple[Client, dict[str, Any], int, dict[str, Any]]:  # noqa: ANN001
    """A new poem whose divider answered ``topics`` and awaits validation: (user, created, pk, the divider's row)."""
    from tests.support.scripted_llm import Reply

    user = poem_user(live)
    llm.script(Reply(json={"stanza_topics": topics}))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    (divider,) = wait_steps(user, pk, awaiting(1))
    return user, created, pk, divider


def run_messages(live: LiveServer, session_id: str) -> list[tuple[str, str | None]]:
    """(status, error) of the session's step-run messages, oldest first."""
    with live.db() as db:
        return list(db.execute(select(Message.status, Message.error).where(
            Message.session_id == session_id, Message.event_name == RUN_EVENT).order_by(Message.message_pk)).all())
