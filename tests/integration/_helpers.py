"""Small helpers shared by the integration tests: sending, reading events back, DB peeks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import func, select

from mojodex_core.db.models import LLMCall, Message, Session, SessionEvent, UserTaskExecution
from tests.support.live import Client, LiveServer, SocketRecorder

QUESTION_TEXT = "Who should get this email?"
QUESTION = (
    "<user_language>en</user_language><ask_user_primary_info>" + QUESTION_TEXT + "</ask_user_primary_info>"
)
TITLE = "Weekly sync"
BODY = "Hi team, the sync moves to Friday. Sam"
DRAFT = f"<execution><title>{TITLE}</title><draft>{BODY}</draft></execution>"
INPUTS = {"email_content": "the weekly sync moves", "tone": "formal"}

# Nothing a client receives as a live delta may carry markup or a tag name.
FORBIDDEN_IN_DELTAS = ("<", ">", "user_language", "ask_user", "execution", "title", "draft", "missing")

FINAL_EVENTS = ("mojo_message", "draft_message", "error")


def new_execution(client: Client) -> tuple[int, str]:
    execution = client.new_execution()
    return execution["user_task_execution_pk"], execution["session_id"]


def run_form(client: Client, pk: int, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    return client.ok("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk,
                                                               "inputs": inputs or INPUTS})


def send(client: Client, pk: int, session_id: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    return client.ok("PUT", "/user_message", json={
        "session_id": session_id, "user_task_execution_pk": pk, "text": text,
        "message_id": message_id or uuid.uuid4().hex,
    })


@contextmanager
def session_socket(live: LiveServer, client: Client, session_id: str) -> Iterator[SocketRecorder]:
    """The client's socket on the session; at the end closed, and the server idle (no turn left running)."""
    socket = client.socket(session_id)
    try:
        yield socket
    finally:
        socket.close()
        live.wait_idle()


def one_turn(
    live: LiveServer, llm: Any, reply: Any, text: str, final_event: str
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A new user's message answered by the scripted reply: the final event and the deltas per channel."""
    client = live.new_user()
    pk, session_id = new_execution(client)
    with session_socket(live, client, session_id) as socket:
        llm.script(reply)
        send(client, pk, session_id, text)
        final = socket.wait_event(final_event)[0]
        deltas = turn_deltas(list(socket.events), final)
    return final, deltas


def by_seq(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return sorted((e for e in events if isinstance(e[1], dict) and "seq" in e[1]), key=lambda e: e[1]["seq"])


def turn_deltas(events: list[tuple[str, dict[str, Any]]], final: dict[str, Any]) -> dict[str, list[str]]:
    """Token deltas of the turn that ended with ``final``, per channel ("mojo", "title", "draft").

    Turns of a session never overlap, so a turn's tokens are exactly those published after the
    previous final event and before its own.
    """
    ordered = by_seq(events)
    previous = max((d["seq"] for n, d in ordered if n in FINAL_EVENTS and d["seq"] < final["seq"]), default=0)
    out: dict[str, list[str]] = {"mojo": [], "title": [], "draft": []}
    for name, data in ordered:
        if previous < data["seq"] < final["seq"]:
            if name == "mojo_token":
                out["mojo"].append(data["delta"])
            elif name == "draft_token":
                out[data["part"]].append(data["delta"])
    return out


def assert_clean(deltas: list[str]) -> None:
    for delta in deltas:
        assert delta, "an empty delta was sent"
        for bad in FORBIDDEN_IN_DELTAS:
            assert bad not in delta, f"markup {bad!r} leaked in delta {delta!r}"


def messages(live: LiveServer, session_id: str) -> list[Message]:
    with live.db() as db:
        rows = list(db.scalars(select(Message).where(Message.session_id == session_id)
                               .order_by(Message.message_pk)))
        db.expunge_all()
        return rows


def message(live: LiveServer, message_pk: int) -> Message:
    with live.db() as db:
        row = db.get(Message, message_pk)
        db.expunge(row)
        return row


def execution_row(live: LiveServer, pk: int) -> UserTaskExecution:
    with live.db() as db:
        row = db.get(UserTaskExecution, pk)
        db.expunge(row)
        return row


def session_language(live: LiveServer, session_id: str) -> str | None:
    with live.db() as db:
        return db.get(Session, session_id).language


def llm_calls(live: LiveServer, pk: int) -> list[LLMCall]:
    # The rows are written a moment after the answer: store the queued ones first, as GET /usage does.
    live.platform.flush_llm_calls()
    with live.db() as db:
        rows = list(db.scalars(select(LLMCall).where(LLMCall.user_task_execution_fk == pk)
                               .order_by(LLMCall.llm_call_pk)))
        db.expunge_all()
        return rows


def event_count(live: LiveServer, session_id: str) -> int:
    with live.db() as db:
        return db.scalar(select(func.count()).where(SessionEvent.session_id == session_id)) or 0
