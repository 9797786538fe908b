"""InstructTurn on the suite's database (SQLite, or Postgres with TEST_DATABASE_URL), without a
server: rows made directly, a scripted in-process LLM, the real event log with a recording
transport."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import (
    Message,
    ProducedText,
    ProducedTextVersion,
    ReasoningTraceEntry,
    Session,
    Task,
    User,
    UserProfile,
    UserTask,
    UserTaskExecution,
)
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.turn import InstructTurn
from mojodex_core.llm import LLMError, LLMResult
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from mojodex_core.tools import Tool, ToolContext, register
from tests.support.live import TEST_TASK

QUESTION = "<reasoning>WHY-Q</reasoning><user_language>en</user_language>" \
           "<ask_user_primary_info>Who is it for?</ask_user_primary_info>"
DRAFT = "<reasoning>WHY-D</reasoning><execution><title>Sync</title><draft>The sync moves.</draft></execution>"

# The email task with French texts that differ from the English ones.
PROMPT_TASK = copy.deepcopy(TEST_TASK)
PROMPT_TASK["name_for_system"] = "turn_prompt_email"
PROMPT_TASK["task_displayed_data"][1]["json_input"][0]["description_for_system"] = "Le sujet de l'e-mail"
PROMPT_TASK["task_displayed_data"][1]["name_for_user"] = "Courriel"
# A follow-up of the minutes task below.
FOLLOW_UP_TASK = copy.deepcopy(PROMPT_TASK)
FOLLOW_UP_TASK["name_for_system"] = "turn_prompt_follow_up"
MINUTES_TASK = copy.deepcopy(TEST_TASK)
MINUTES_TASK.update(
    name_for_system="turn_prompt_minutes",
    definition_for_system="The user needs meeting minutes",
    output_type="meeting_minutes",
    infos_to_extract=[],
    predefined_actions=[{
        "task_name": "turn_prompt_follow_up",
        "displayed_data": [
            {"language_code": "en", "data": {"name": "Email", "button_text": "Email", "message_prefix": "Send it:"}},
            {"language_code": "fr", "data": {"name": "Courriel", "button_text": "Courriel",
                                             "message_prefix": "Envoie-le :"}},
        ],
    }],
)
MINUTES_TASK["task_displayed_data"][0]["name_for_user"] = "Minutes"
MINUTES_TASK["task_displayed_data"][1]["name_for_user"] = "Compte rendu"
TOOL_TASK = copy.deepcopy(PROMPT_TASK)
TOOL_TASK["name_for_system"] = "turn_prompt_tools"
TOOL_TASK["tools"] = [
    {"name": "turn_echo", "usage_description": "Echo a text."},
    {"name": "turn_guarded", "usage_description": "Echo after the user agrees.", "requires_approval": True},
]
SPECS = (PROMPT_TASK, FOLLOW_UP_TASK, MINUTES_TASK, TOOL_TASK)


class TurnEcho(Tool):
    name = "turn_echo"
    description = "Returns its text."
    query_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return {"echo": query["text"]}


class TurnGuarded(TurnEcho):
    name = "turn_guarded"


register(TurnEcho())
register(TurnGuarded())


def tool_call(name: str, text: str, why: str = "WHY-T") -> str:
    return (f"<reasoning>{why}</reasoning><tool_call><tool_name>{name}</tool_name>"
            f'<tool_query>{{"text": "{text}"}}</tool_query><tool_explanation>Echoing.</tool_explanation></tool_call>')


@dataclass
class Step:
    """One scripted LLM call: its reply (or the error it raises), and what happens while it streams."""

    reply: str | BaseException
    during: Callable[[], None] | None = None


@dataclass
class ScriptedLLM:
    steps: list[Step] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def script(self, *steps: Step | str) -> None:
        self.steps += [s if isinstance(s, Step) else Step(s) for s in steps]

    def chat(self, messages: list[dict[str, Any]], *, label: str, on_token: Callable[[str], None] | None = None,
             tools: list[dict[str, Any]] | None = None, **_: Any) -> LLMResult:
        self.requests.append({"messages": list(messages), "label": label, "tools": tools})
        if not self.steps:
            raise LLMError("no scripted reply left")
        step = self.steps.pop(0)
        if isinstance(step.reply, BaseException):
            raise step.reply
        middle = len(step.reply) // 2
        if on_token is not None:
            on_token(step.reply[:middle])
        if step.during is not None:
            step.during()
        if on_token is not None:
            on_token(step.reply[middle:])
        return LLMResult(text=step.reply, model="scripted", prompt_tokens=0, completion_tokens=0, latency_ms=0.0,
                         first_token_ms=None, finish_reason="stop")


class Sent:
    """The transport: events in the order they were sent to clients."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, session_id: str, name: str, payload: dict[str, Any]) -> None:
        self.events.append((session_id, name, payload))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [p for _s, n, p in self.events if n == name]


class Turns:
    """Rows, a turn and what it sent, on one database."""

    def __init__(self, factory: sessionmaker[DbSession], **turn_options: Any) -> None:
        self.factory = factory
        self.sent = Sent()
        self.events = SessionEventLog(factory, self.sent)
        self.llm = ScriptedLLM()
        self.turn = InstructTurn(factory, self.events, self.llm, coalesce_ms=0, **turn_options)
        self.sessions: list[str] = []
        with transaction(factory) as db:
            for spec in SPECS:
                store_spec(db, validate_spec(spec), "upsert")

    # --- rows
    def user(self, *, language: str = "en", offset: int = 60, profile: dict[str, Any] | None = None) -> str:
        user_id = uuid.uuid4().hex
        with transaction(self.factory) as db:
            db.add(User(user_id=user_id, name="Ada", email=f"{user_id}@example.com", language_code=language,
                        timezone_offset_minutes=offset))
            if profile is not None:
                db.flush()
                db.add(UserProfile(user_id=user_id, **profile))
        return user_id

    def execution(
        self, user_id: str, task: str = "turn_prompt_email", *, language: str | None = "en",
        inputs: dict[str, Any] | None = None, parent: int | None = None, session_id: str | None = None,
        platform: str = "webapp",
    ) -> tuple[int, str]:
        with transaction(self.factory) as db:
            task_pk = db.scalar(select(Task.task_pk).where(Task.name_for_system == task))
            user_task = db.scalar(select(UserTask).where(UserTask.user_id == user_id, UserTask.task_fk == task_pk))
            if user_task is None:
                user_task = UserTask(user_id=user_id, task_fk=task_pk)
                db.add(user_task)
            if session_id is None:
                session_id = uuid.uuid4().hex
                db.add(Session(session_id=session_id, user_id=user_id, platform=platform, language=language))
                self.sessions.append(session_id)
            db.flush()
            execution = UserTaskExecution(user_task_fk=user_task.user_task_pk, session_id=session_id,
                                          json_input_values=inputs, parent_user_task_execution_fk=parent)
            db.add(execution)
            db.flush()
            return execution.user_task_execution_pk, session_id

    def message(self, session_id: str, pk: int | None, text: str, *, status: str = "pending",
                sender: str = "user") -> int:
        with transaction(self.factory) as db:
            row = Message(session_id=session_id, user_task_execution_fk=pk, sender=sender,
                          message_id=uuid.uuid4().hex if sender == "user" else None,
                          event_name="user_message" if sender == "user" else "mojo_message", text=text,
                          status=status, data={})
            db.add(row)
            db.flush()
            return row.message_pk

    def answered(self, session_id: str, pk: int | None, text: str, answer: str, raw: str | None = None) -> int:
        """A user message and its answer, as an earlier turn left them."""
        user_pk = self.message(session_id, pk, text, status="answered")
        answer_pk = self.message(session_id, pk, answer, status="final", sender="assistant")
        with transaction(self.factory) as db:
            db.get(Message, answer_pk).text_with_tags = raw
            db.get(Message, user_pk).answer_message_fk = answer_pk
        return user_pk

    def version(self, pk: int, user_id: str, title: str, production: str) -> None:
        with transaction(self.factory) as db:
            produced = db.scalar(select(ProducedText).where(ProducedText.user_task_execution_fk == pk))
            if produced is None:
                produced = ProducedText(user_task_execution_fk=pk, user_id=user_id)
                db.add(produced)
                db.flush()
            count = len(produced.versions)
            db.add(ProducedTextVersion(produced_text_fk=produced.produced_text_pk, version_index=count + 1,
                                       title=title, production=production))

    def close(self) -> None:
        """Leaves no message waiting for an answer: a live server sharing the database would resume it."""
        with transaction(self.factory) as db:
            db.execute(update(Message).where(Message.session_id.in_(self.sessions),
                                             Message.status.in_(("pending", "processing")))
                       .values(status="failed", error="left by a tests/turn test"))

    # --- running
    def run(self, session_id: str, message_pk: int, **job: Any) -> None:
        import threading

        self.turn(TurnJob(session_id=session_id, message_pk=message_pk, **job), threading.Event())

    def row(self, model: type, pk: Any) -> Any:
        with self.factory() as db:
            row = db.get(model, pk)
            if row is not None:
                db.expunge(row)
            return row

    def messages(self, session_id: str) -> list[Message]:
        with self.factory() as db:
            rows = list(db.scalars(select(Message).where(Message.session_id == session_id)
                                   .order_by(Message.message_pk)))
            db.expunge_all()
            return rows

    def trace(self, pk: int) -> list[tuple[int, str, str]]:
        with self.factory() as db:
            return [(r.position, r.text, r.source) for r in db.scalars(
                select(ReasoningTraceEntry).where(ReasoningTraceEntry.user_task_execution_fk == pk)
                .order_by(ReasoningTraceEntry.position))]


class Transactions:
    """The statements run on an engine, grouped by the transaction (connection-level) they ran in."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.groups: list[list[str]] = []
        self._open: dict[int, list[str]] = {}

    def __enter__(self) -> Transactions:
        event.listen(self.engine, "begin", self._begin)
        event.listen(self.engine, "commit", self._end)
        event.listen(self.engine, "rollback", self._end)
        event.listen(self.engine, "before_cursor_execute", self._statement)
        return self

    def __exit__(self, *_: Any) -> None:
        event.remove(self.engine, "begin", self._begin)
        event.remove(self.engine, "commit", self._end)
        event.remove(self.engine, "rollback", self._end)
        event.remove(self.engine, "before_cursor_execute", self._statement)

    def _begin(self, conn: Any) -> None:
        self._open[id(conn)] = []

    def _end(self, conn: Any) -> None:
        group = self._open.pop(id(conn), None)
        if group:
            self.groups.append(group)

    def _statement(self, conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        self._open.setdefault(id(conn), []).append(" ".join(statement.split()))

    def with_statement(self, fragment: str) -> list[list[str]]:
        return [g for g in self.groups if any(fragment in s for s in g)]
