"""The relational model, SQLAlchemy 2.0 typed ORM, identical on Postgres and SQLite.

Deliberate differences from Mojodex: one produced_text per execution (unique FK), one
user_task per (user, task), client message ids unique per session, event seq unique
per session, and explicit status columns instead of NULL/true/false conventions.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JsonType = JSON().with_variant(JSONB(), "postgresql")


def utcnow() -> datetime:
    return datetime.now(UTC)


def _status_check(column: str, values: tuple[str, ...]) -> CheckConstraint:
    allowed = ", ".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} IN ({allowed})", name=f"{column}_allowed")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


TASK_TYPES = ("instruct", "workflow", "order")
EXECUTION_STATUSES = ("created", "started", "completed", "deleted")
SENDERS = ("user", "assistant", "system")
# user messages: pending -> processing -> answered | failed; others: final | error
MESSAGE_STATUSES = ("pending", "processing", "answered", "failed", "final", "error")
# A message the runner still owes an answer (a user message, or an order or workflow system
# message): waiting for it, or getting it.
MESSAGE_UNANSWERED = ("pending", "processing")
LLM_CALL_STATUSES = ("ok", "error")
# pending -> running -> done | failed; with approval: awaiting_approval -> approved -> running -> ...
# or awaiting_approval -> declined.
TOOL_EXECUTION_STATUSES = ("pending", "awaiting_approval", "approved", "declined", "running", "done", "failed")
REASONING_KINDS = ("TOOL_CALL", "DIRECT", "RULE")
# The background title/summary job: claimed (pending), then done or failed (gave up after its retries).
TITLE_STATUSES = ("pending", "done", "failed")


class User(Base):
    __tablename__ = "md_user"

    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(255), unique=True)
    language_code: Mapped[str] = mapped_column(String(8), default="en")
    timezone_offset_minutes: Mapped[int] = mapped_column(Integer, default=0)
    # argon2id hash (argon2-cffi); None: this user signs in with an API token only.
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_token"

    api_token_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("md_user.user_id", ondelete="CASCADE"), index=True)
    # sha256 of the token: a leaked database does not leak usable tokens.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(255), default="default")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # None: no expiry (a token the CLI issued for an API client); a sign-in's token has one
    # (MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS). Past it the token no longer authenticates.
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Platform(Base):
    __tablename__ = "platform"

    platform_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)


class TextType(Base):
    """Output text types (email, document, meeting_minutes...): what a produced text is."""

    __tablename__ = "text_type"

    text_type_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)


class Task(Base):
    __tablename__ = "task"
    __table_args__ = (_status_check("type", TASK_TYPES),)

    task_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    name_for_system: Mapped[str] = mapped_column(String(255), unique=True)
    type: Mapped[str] = mapped_column(String(16))
    definition_for_system: Mapped[str] = mapped_column(Text, default="")
    final_instruction: Mapped[str | None] = mapped_column(Text)
    output_format_instruction_title: Mapped[str | None] = mapped_column(Text)
    output_format_instruction_draft: Mapped[str | None] = mapped_column(Text)
    output_text_type_fk: Mapped[int | None] = mapped_column(ForeignKey("text_type.text_type_pk"), index=True)
    icon: Mapped[str | None] = mapped_column(String(32))
    infos_to_extract: Mapped[list[Any]] = mapped_column(JsonType, default=list)
    result_chat_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    menu: Mapped[str | None] = mapped_column(String(255))
    # The validated spec as loaded: the source of truth for fields without their own column.
    spec: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    displayed_data: Mapped[list[TaskDisplayedData]] = relationship(
        back_populates="task", cascade="all, delete-orphan", order_by="TaskDisplayedData.language_code"
    )
    output_text_type: Mapped[TextType | None] = relationship()


class TaskDisplayedData(Base):
    __tablename__ = "task_displayed_data"
    __table_args__ = (UniqueConstraint("task_fk", "language_code"),)

    task_displayed_data_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_fk: Mapped[int] = mapped_column(ForeignKey("task.task_pk", ondelete="CASCADE"), index=True)
    language_code: Mapped[str] = mapped_column(String(8))
    name_for_user: Mapped[str] = mapped_column(String(255))
    definition_for_user: Mapped[str] = mapped_column(Text)
    json_input: Mapped[list[Any]] = mapped_column(JsonType, default=list)

    task: Mapped[Task] = relationship(back_populates="displayed_data")


class TaskPlatform(Base):
    __tablename__ = "task_platform"

    task_fk: Mapped[int] = mapped_column(ForeignKey("task.task_pk", ondelete="CASCADE"), primary_key=True)
    platform_fk: Mapped[int] = mapped_column(
        ForeignKey("platform.platform_pk", ondelete="CASCADE"), primary_key=True, index=True
    )


class TaskPredefinedAction(Base):
    """A follow-up task offered once this task has produced its text."""

    __tablename__ = "task_predefined_action"
    __table_args__ = (UniqueConstraint("task_fk", "action_name"),)

    task_predefined_action_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_fk: Mapped[int] = mapped_column(ForeignKey("task.task_pk", ondelete="CASCADE"), index=True)
    # name_for_system of the follow-up task; resolved at read time so load order does not matter.
    action_name: Mapped[str] = mapped_column(String(255))
    displayed_data: Mapped[list[Any]] = mapped_column(JsonType, default=list)


class TextEditAction(Base):
    """A one-click edit offered on a produced text (shorten, formalise...)."""

    __tablename__ = "text_edit_action"

    text_edit_action_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    emoji: Mapped[str | None] = mapped_column(String(16))
    instruction: Mapped[str] = mapped_column(Text)
    displayed_data: Mapped[list[Any]] = mapped_column(JsonType, default=list)


class TextEditActionTextType(Base):
    __tablename__ = "text_edit_action_text_type"

    text_edit_action_fk: Mapped[int] = mapped_column(
        ForeignKey("text_edit_action.text_edit_action_pk", ondelete="CASCADE"), primary_key=True
    )
    text_type_fk: Mapped[int] = mapped_column(
        ForeignKey("text_type.text_type_pk", ondelete="CASCADE"), primary_key=True, index=True
    )


class UserTask(Base):
    __tablename__ = "user_task"
    __table_args__ = (UniqueConstraint("user_id", "task_fk"),)

    user_task_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("md_user.user_id", ondelete="CASCADE"), index=True)
    task_fk: Mapped[int] = mapped_column(ForeignKey("task.task_pk", ondelete="CASCADE"), index=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    task: Mapped[Task] = relationship()


class Session(Base):
    __tablename__ = "md_session"

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("md_user.user_id", ondelete="CASCADE"), index=True)
    platform: Mapped[str] = mapped_column(String(32), default="webapp")
    language: Mapped[str | None] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class UserTaskExecution(Base):
    __tablename__ = "user_task_execution"
    __table_args__ = (_status_check("status", EXECUTION_STATUSES), _status_check("title_status", TITLE_STATUSES))

    user_task_execution_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_task_fk: Mapped[int] = mapped_column(ForeignKey("user_task.user_task_pk", ondelete="CASCADE"), index=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("md_session.session_id", ondelete="CASCADE"), index=True)
    json_input_values: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    status: Mapped[str] = mapped_column(String(16), default="created")
    start_date: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    end_date: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    title: Mapped[str | None] = mapped_column(String(255))
    summary: Mapped[str | None] = mapped_column(Text)
    # NULL until the title/summary job is claimed; then pending -> done | failed (never re-generated).
    title_status: Mapped[str | None] = mapped_column(String(16))
    # The execution whose predefined action started this one (task chaining).
    parent_user_task_execution_fk: Mapped[int | None] = mapped_column(
        # Named explicitly: the conventional name is longer than Postgres' 63-character limit.
        ForeignKey(
            "user_task_execution.user_task_execution_pk", ondelete="SET NULL", name="fk_user_task_execution_parent"
        ),
        index=True,
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)

    user_task: Mapped[UserTask] = relationship()
    session: Mapped[Session] = relationship()


class Message(Base):
    __tablename__ = "message"
    __table_args__ = (
        UniqueConstraint("session_id", "message_id"),
        _status_check("sender", SENDERS),
        _status_check("status", MESSAGE_STATUSES),
        Index("ix_message_session_seq", "session_id", "seq"),
        Index("ix_message_session_pk", "session_id", "message_pk"),  # the conversation, newest first
        Index("ix_message_session_status", "session_id", "status"),  # its waiting messages (the drain)
    )

    message_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("md_session.session_id", ondelete="CASCADE"))
    user_task_execution_fk: Mapped[int | None] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE"), index=True
    )
    sender: Mapped[str] = mapped_column(String(16))
    # The client's idempotency key (user messages only).
    message_id: Mapped[str | None] = mapped_column(String(128))
    event_name: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text, default="")
    text_with_tags: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    # The seq of the session event that announced this message (see SessionEvent).
    seq: Mapped[int | None] = mapped_column(Integer)
    # For a user message: the message_pk of the assistant answer or error that closed its turn.
    answer_message_fk: Mapped[int | None] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ProducedText(Base):
    __tablename__ = "produced_text"

    produced_text_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    # unique: an execution has one produced text; versions accumulate under it.
    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE"), unique=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("md_user.user_id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    versions: Mapped[list[ProducedTextVersion]] = relationship(
        back_populates="produced_text", order_by="ProducedTextVersion.version_index"
    )


class ProducedTextVersion(Base):
    """Append-only: a version is never updated, an edit adds the next index."""

    __tablename__ = "produced_text_version"
    __table_args__ = (UniqueConstraint("produced_text_fk", "version_index"),)

    produced_text_version_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    produced_text_fk: Mapped[int] = mapped_column(ForeignKey("produced_text.produced_text_pk", ondelete="CASCADE"))
    version_index: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text, default="")
    production: Mapped[str] = mapped_column(Text)
    text_type_fk: Mapped[int | None] = mapped_column(ForeignKey("text_type.text_type_pk"), index=True)
    origin: Mapped[str] = mapped_column(String(16), default="assistant")
    message_fk: Mapped[int | None] = mapped_column(ForeignKey("message.message_pk", ondelete="SET NULL"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    produced_text: Mapped[ProducedText] = relationship(back_populates="versions")
    text_type: Mapped[TextType | None] = relationship()


class TaskToolExecution(Base):
    __tablename__ = "task_tool_execution"
    __table_args__ = (_status_check("status", TOOL_EXECUTION_STATUSES),)

    task_tool_execution_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE"), index=True
    )
    tool_name: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(24), default="pending")
    # The model's short explanation for the user (shown when the tool needs approval).
    explanation: Mapped[str | None] = mapped_column(Text)
    requires_approval: Mapped[bool] = mapped_column(Boolean, default=False)
    # None until the user decides (only for tools that require approval).
    approved: Mapped[bool | None] = mapped_column(Boolean)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The provider's tool call id when the model asked by native function calling; None for the tag form.
    call_id: Mapped[str | None] = mapped_column(String(128))
    # The user message whose turn asked for the tool (the follow-up turn answers it).
    message_fk: Mapped[int | None] = mapped_column(ForeignKey("message.message_pk", ondelete="SET NULL"), index=True)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TaskToolQuery(Base):
    __tablename__ = "task_tool_query"

    task_tool_query_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_tool_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("task_tool_execution.task_tool_execution_pk", ondelete="CASCADE"), index=True
    )
    query: Mapped[dict[str, Any]] = mapped_column(JsonType)
    result: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    result_date: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ReasoningTraceEntry(Base):
    """One LLM decision of an execution: "[TOOL_CALL] a, b: why", "[DIRECT] why" or "[RULE] ..."."""

    __tablename__ = "reasoning_trace_entry"
    __table_args__ = (
        UniqueConstraint("user_task_execution_fk", "position"),
        _status_check("kind", REASONING_KINDS),
    )

    reasoning_trace_entry_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    # Which decision point wrote it: "INSTRUCT_TASK", "TOOL_FOLLOW_UP", "ORDER_PARSE"...
    source: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LLMCall(Base):
    __tablename__ = "llm_call"
    __table_args__ = (_status_check("status", LLM_CALL_STATUSES),)

    llm_call_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(128))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(16), default="ok")
    error: Mapped[str | None] = mapped_column(Text)
    user_task_execution_fk: Mapped[int | None] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="SET NULL"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # The recorder's id of the call (32 hex digits): a row spooled before a crash and replayed
    # at the next start is inserted once. Null on rows recorded before it existed.
    call_id: Mapped[str | None] = mapped_column(String(32), unique=True, index=True)


class SessionEvent(Base):
    """Every final event sent to a session, in order, so a reconnecting client can catch up."""

    __tablename__ = "session_event"
    __table_args__ = (UniqueConstraint("session_id", "seq"),)

    session_event_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("md_session.session_id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    event_name: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# --- order tasks -----------------------------------------------------------------------------

ORDER_STATES = ("Ordering", "Thinking", "Clarifying", "Confirming", "Closing", "Idle")
DELIVERY_STATUSES = ("none", "pending", "retrying", "delivered", "failed")


class StoredMenu(Base):
    """A menu uploaded through the admin API (PUT /menu); shipped menus stay files under tasks_config/."""

    __tablename__ = "menu"

    menu_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    # The validated menu JSON (mojodex_core.order.menu.Menu).
    menu: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class MenuStock(Base):
    """An item type, or a value of one of its fields, marked out of / back in stock (PUT /menu_availability).

    Applies to a menu by id, whether it was uploaded or ships as a file. field and value are ''
    when the whole item type is meant (a unique key cannot hold NULLs portably).
    """

    __tablename__ = "menu_stock"
    __table_args__ = (UniqueConstraint("menu_id", "item_type", "field", "value"),)

    menu_stock_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    menu_id: Mapped[str] = mapped_column(String(128), index=True)
    item_type: Mapped[str] = mapped_column(String(128))
    field: Mapped[str] = mapped_column(String(128), default="")
    value: Mapped[str] = mapped_column(String(255), default="")
    in_stock: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class OrderSession(Base):
    """The durable record of an order conversation: one per execution of an order task."""

    __tablename__ = "order_session"
    __table_args__ = (_status_check("state", ORDER_STATES),)

    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE"), primary_key=True
    )
    # What the task spec's menu names: a menu id or a path under tasks_config/.
    menu_ref: Mapped[str] = mapped_column(String(255))
    menu_id: Mapped[str] = mapped_column(String(128), index=True)
    # The live-state key parts: session:{location}:{lane}:{session_id}.
    location: Mapped[str] = mapped_column(String(128))
    lane: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16), index=True)
    turn: Mapped[int] = mapped_column(Integer, default=0)
    # mojodex_core.order.conversation.Conversation as JSON.
    conversation: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class OrderAudit(Base):
    """Audit log: one row per turn of an order conversation (an utterance or a global event)."""

    __tablename__ = "order_audit"
    __table_args__ = (UniqueConstraint("user_task_execution_fk", "seq"),)

    order_audit_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE")
    )
    seq: Mapped[int] = mapped_column(Integer)  # the conversation's turn number, from 1
    message_fk: Mapped[int | None] = mapped_column(ForeignKey("message.message_pk", ondelete="SET NULL"), index=True)
    utterance: Mapped[str | None] = mapped_column(Text)
    event: Mapped[str | None] = mapped_column(String(32))
    intent: Mapped[str | None] = mapped_column(String(32))
    off_topic_type: Mapped[str | None] = mapped_column(String(32))
    parsed: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    diff: Mapped[list[Any]] = mapped_column(JsonType, default=list)
    state_before: Mapped[str] = mapped_column(String(16))
    state_after: Mapped[str] = mapped_column(String(16))
    transition: Mapped[str | None] = mapped_column(String(64))
    response_key: Mapped[str] = mapped_column(String(128))
    reply: Mapped[str] = mapped_column(Text)
    # Reasoning trace entries: "[RULE] ...", "[TOOL_CALL] ...", "[DIRECT] ...".
    trace: Mapped[list[Any]] = mapped_column(JsonType, default=list)
    timings_ms: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class OrderTicket(Base):
    """The frozen order at Closing, its structured lines, and the delivery of it to the POS webhook."""

    __tablename__ = "order_ticket"
    __table_args__ = (_status_check("delivery_status", DELIVERY_STATUSES),)

    order_ticket_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE"), unique=True
    )
    produced_text_version_fk: Mapped[int | None] = mapped_column(
        ForeignKey("produced_text_version.produced_text_version_pk", ondelete="SET NULL"), index=True
    )
    # build_ticket's output: lines, order_type, address, customer, payment, total, currency, text.
    ticket: Mapped[dict[str, Any]] = mapped_column(JsonType)
    lines: Mapped[list[Any]] = mapped_column(JsonType, default=list)
    total: Mapped[float] = mapped_column(Float, default=0.0)
    currency: Mapped[str] = mapped_column(String(8), default="USD")
    # Sent as the Idempotency-Key header on every delivery attempt of this ticket.
    idempotency_key: Mapped[str] = mapped_column(String(64), unique=True)
    webhook_url: Mapped[str | None] = mapped_column(Text)
    delivery_status: Mapped[str] = mapped_column(String(16), default="none")
    delivery_attempts: Mapped[int] = mapped_column(Integer, default=0)
    delivery_last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SessionRunner(Base):
    """Who runs a session's turns in distributed mode: a lease with a fencing token.

    A worker claims a session by bumping ``fence`` (an atomic conditional UPDATE); it renews
    ``heartbeat_at`` while it runs turns. A completion whose fence is no longer current is
    dropped, so a worker that lost its lease can never store an answer twice.
    """

    __tablename__ = "session_runner"

    session_id: Mapped[str] = mapped_column(
        ForeignKey("md_session.session_id", ondelete="CASCADE"), primary_key=True
    )
    owner: Mapped[str | None] = mapped_column(String(128))
    fence: Mapped[int] = mapped_column(Integer, default=0)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)


# --- workflow tasks --------------------------------------------------------------------------

# running -> done | failed; done or failed -> invalidated (rejected, restarted, relaunched);
# running -> lapsed when its heartbeat stopped (its process died): its slot is re-run once.
STEP_EXECUTION_STATUSES = ("running", "done", "failed", "lapsed", "invalidated")
# Rows that no longer count (history): the engine runs their slot again.
STEP_EXECUTION_GONE = ("lapsed", "invalidated")
RESULT_AUTHORS = ("assistant", "user")
_LIVE_STEP = text("status NOT IN ('lapsed', 'invalidated')")


class UserWorkflowStepExecution(Base):
    """One run of one step of a workflow execution on one parameter: the initial inputs for rank 1,
    else one item of the result of a step execution of the previous rank (its parent)."""

    __tablename__ = "user_workflow_step_execution"
    __table_args__ = (
        _status_check("status", STEP_EXECUTION_STATUSES),
        # No slot runs twice at once: one live row per (execution, rank, slot), an atomic claim.
        Index(
            "uq_user_workflow_step_execution_live_slot", "user_task_execution_fk", "rank", "slot",
            unique=True, sqlite_where=_LIVE_STEP, postgresql_where=_LIVE_STEP,
        ),
    )

    user_workflow_step_execution_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE"), index=True
    )
    step_name: Mapped[str] = mapped_column(String(255))
    rank: Mapped[int] = mapped_column(Integer)
    # "<parent pk>:<item index>" ("0:0" for rank 1): which parameter of the rank this row runs.
    slot: Mapped[str] = mapped_column(String(32))
    parent_step_execution_fk: Mapped[int | None] = mapped_column(
        ForeignKey(
            "user_workflow_step_execution.user_workflow_step_execution_pk", ondelete="CASCADE",
            name="fk_user_workflow_step_execution_parent",
        ),
        index=True,
    )
    item_index: Mapped[int] = mapped_column(Integer, default=0)
    parameter: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="running")
    # None until the user decides (or True at once when the step needs no validation).
    validated: Mapped[bool | None] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text)
    # What the user taught the assistant when rejecting this run (review chat).
    learned_instruction: Mapped[str | None] = mapped_column(Text)
    # 1, or 2 for the one re-run of a slot whose first run lapsed.
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    start_date: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    end_date: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class UserWorkflowStepExecutionResult(Base):
    """A result of a step run: the assistant's, then one row per edit by the user (the latest counts)."""

    __tablename__ = "user_workflow_step_execution_result"
    __table_args__ = (_status_check("author", RESULT_AUTHORS),)

    user_workflow_step_execution_result_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_workflow_step_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_workflow_step_execution.user_workflow_step_execution_pk", ondelete="CASCADE"), index=True
    )
    result: Mapped[list[Any]] = mapped_column(JsonType)
    author: Mapped[str] = mapped_column(String(16), default="assistant")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class UserTaskExecutionFile(Base):
    """A file sent with a form input (a transcript, a recording): kept in the database so any
    process running the execution's steps can read it."""

    __tablename__ = "user_task_execution_file"
    __table_args__ = (UniqueConstraint("user_task_execution_fk", "input_name"),)

    user_task_execution_file_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_task_execution_fk: Mapped[int] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="CASCADE")
    )
    input_name: Mapped[str] = mapped_column(String(255))
    filename: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str | None] = mapped_column(String(128))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# --- what the assistant knows about the user, and the home chat ------------------------------


class UserProfile(Base):
    """What the user tells the assistant about themselves (GET/PUT /user_profile). Every field optional."""

    __tablename__ = "user_profile"

    user_id: Mapped[str] = mapped_column(ForeignKey("md_user.user_id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str | None] = mapped_column(String(255))
    language: Mapped[str | None] = mapped_column(String(8))
    # An IANA zone name ("Europe/Paris"); when set it wins over md_user.timezone_offset_minutes.
    timezone: Mapped[str | None] = mapped_column(String(64))
    company_name: Mapped[str | None] = mapped_column(String(255))
    company_description: Mapped[str | None] = mapped_column(Text)
    job: Mapped[str | None] = mapped_column(String(255))
    about_me: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class HomeChat(Base):
    """The user's free chat session (PUT /home_chat), which may route to tasks and host their executions."""

    __tablename__ = "home_chat"

    home_chat_pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    # One home chat per user (opened once, returned afterwards).
    user_id: Mapped[str] = mapped_column(ForeignKey("md_user.user_id", ondelete="CASCADE"), unique=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("md_session.session_id", ondelete="CASCADE"), unique=True)
    # The execution the chat was routed to and that answers its messages until it produces its result.
    running_user_task_execution_fk: Mapped[int | None] = mapped_column(
        ForeignKey("user_task_execution.user_task_execution_pk", ondelete="SET NULL",
                   name="fk_home_chat_running_execution"),
        index=True,
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
