"""The input of every route as one pydantic model (query string or JSON body), and its answers.

Lengths are the database columns' (mojodex_core/db/models.py); integers are the 32-bit INTEGER
columns' range. Routes still apply the domain rules (a task's form inputs, a menu's stock...);
these models refuse what could never be stored. Response models document the answers for clients
and for the schema fuzzer (they allow extra keys, so adding a key is not a breaking change).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    StrictBool,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from spectree import Response

from backend.validation import INT_MAX, Int32, Pk, Text, no_bool
from mojodex_core.execution.intake import MAX_TEXT_CHARS
from mojodex_core.order.menu import Menu
from mojodex_core.order_runtime.intake import CLIENT_EVENTS
from mojodex_core.task_spec.models import TaskSpec
from mojodex_core.usage import GROUP_BYS


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


# An optional query-string integer: absent or empty means "not given".
OptPk = Annotated[Pk | None, BeforeValidator(_blank_is_none)]
# A 1-based version index (absent or empty: the latest).
OptIndex = Annotated[
    Annotated[int, Field(ge=1, le=INT_MAX), BeforeValidator(no_bool)] | None, BeforeValidator(_blank_is_none)
]
ClientPlatform = Literal["webapp", "mobile"]
SessionId = Text(64, min_length=1)
MessageId = Text(128)


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _StrictBody(BaseModel):
    """A body whose unknown fields are refused (400 ``"<name>: unknown field"``), as PUT /user_profile's.

    ``datetime``, which Mojodex clients send with every request, is accepted and ignored, whatever its
    value (a string of any format, a number), as the other bodies ignore it."""

    model_config = ConfigDict(extra="forbid")

    datetime: Any = Field(None, description="Sent by Mojodex clients (any value); ignored.")


# ---- query strings ---------------------------------------------------------------------------

class ExecutionPkQuery(_In):
    user_task_execution_pk: Pk


Offset = Annotated[int, Field(ge=0, le=INT_MAX)]
PageLimit = Annotated[int, Field(ge=1, le=100)]
# Paging parameters: absent or empty means the default (the routes read them so: query_int).
OptOffset = Annotated[Offset | None, BeforeValidator(_blank_is_none)]
OptPageLimit = Annotated[PageLimit | None, BeforeValidator(_blank_is_none)]


class ExecutionListQuery(_In):
    user_task_execution_pk: OptPk = Field(None, description="One execution; the paged list when absent.")
    offset: OptOffset = Field(0, description="Executions to skip, newest first (absent or empty: 0).")
    limit: OptPageLimit = Field(20, description="At most this many (1 to 100; absent or empty: 20).")


class ReasoningQuery(_In):
    user_task_execution_pk: Pk
    offset: OptOffset = Field(0, description="Entries to skip, in position order (absent or empty: 0).")
    limit: OptPageLimit = Field(
        None, description="At most this many entries (1 to 100); absent: every entry from offset."
    )


class ExecutionDeleteQuery(_In):
    user_task_execution_pk: OptPk = Field(None, description="Mojodex clients may send it in the body instead.")


class TaskQuery(_In):
    name_for_system: Text(255) | None = None


class UserTaskQuery(_In):
    platform: ClientPlatform | None = None


class MessagesQuery(_In):
    session_id: SessionId
    after_seq: Annotated[int, Field(ge=0, le=INT_MAX)] = 0
    limit: Annotated[int, Field(ge=1, le=500)] = 50


class ExecutionProducedTextQuery(_In):
    user_task_execution_pk: Pk
    produced_text_version_index: OptIndex = None


class ProducedTextQuery(_In):
    produced_text_pk: Pk
    produced_text_version_index: OptIndex = None


class MenuQuery(_In):
    menu_id: Text(255, min_length=1)


class VersionQuery(_In):
    produced_text_version_pk: Pk


class UsageQueryModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: Text(64) | None = Field(None, alias="from", description="Date (YYYY-MM-DD) or ISO 8601 datetime.")
    to: Text(64) | None = Field(None, description="Date (YYYY-MM-DD) or ISO 8601 datetime.")
    group_by: Literal[GROUP_BYS] | None = None  # type: ignore[valid-type]


# ---- JSON bodies -----------------------------------------------------------------------------

class NewExecutionBody(_In):
    user_task_pk: Pk
    platform: ClientPlatform = "webapp"
    user_task_execution_fk: Pk | None = Field(None, description="The parent execution when chaining.")


class ExecutionPkBody(_In):
    user_task_execution_pk: Pk


class RunBody(_In):
    """Workflows may also post a multipart form: these fields, ``inputs`` as JSON text, and file fields."""

    user_task_execution_pk: Pk
    inputs: dict[Text(255), Any] | Text() | None = Field(
        None, description="The form's values by input_name (required, except for order tasks; a workflow's "
        "multipart form carries them as JSON text)."
    )


class TitleBody(_In):
    user_task_execution_pk: Pk
    title: Text() = Field(description="1 to MOJODEX_MAX_TITLE_CHARS characters once trimmed (413 past it).")


class UserMessageBody(_In):
    """A user message as JSON (an audio message is the same fields as multipart form data, plus ``file``)."""

    session_id: SessionId
    origin: Literal["home_chat"] | None = Field(None, description="home_chat: a message of the user's home chat.")
    user_task_execution_pk: Pk | None = Field(None, description="Required unless origin is home_chat.",
                                              validate_default=True)
    text: Text(MAX_TEXT_CHARS)
    message_id: MessageId | None = Field(None, description="Idempotency key; a UUID is made when absent.")

    @field_validator("user_task_execution_pk")
    @classmethod
    def _execution_unless_home_chat(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None and info.data.get("origin") != "home_chat":
            raise ValueError("is required (unless origin is home_chat)")
        return value


class ProducedTextBody(_In):
    production: Text()
    title: Text() | None = None
    produced_text_pk: Pk | None = None
    user_task_execution_pk: Pk | None = Field(None, description="Required when produced_text_pk is absent.")
    base_produced_text_version_index: Annotated[Int32, Field(ge=0)] | None = Field(
        None, description="The produced_text_version_index this edit was made on (0: none yet): 409 when it is no"
        " longer the latest, 400 beyond the latest. For API clients (the web app does not send it)."
    )


class StockBody(_In):
    menu_id: Text(128)
    item_type: Text(128)
    field: Text(128) | None = None
    value: Text(255) | None = None
    in_stock: StrictBool


class StockItem(_In):
    item_type: Text(128)
    field: Text(128) | None = None
    value: Text(255) | None = None


class OrderEventBody(_In):
    user_task_execution_pk: Pk
    event: Text(32) = Field(description="One of: " + ", ".join(CLIENT_EVENTS) + ".")
    item: StockItem | None = Field(None, description="What is out of stock (out_of_stock only).")


class TextEditBody(_In):
    produced_text_version_pk: Pk
    text_edit_action_pk: Pk
    message_id: MessageId | None = None


class ToolDecisionBody(_In):
    task_tool_execution_pk: Pk
    approved: StrictBool


class LoginBody(_In):
    email: Text(255, min_length=1)
    password: Text(1024) = Field(description="At most 1024 characters (hashing an unbounded text is a DoS).")


class StopBody(_In):
    user_task_execution_pk: Pk


class WorkflowStepsQuery(_In):
    user_task_execution_pk: Pk
    include_history: Text(8) | None = Field(None, description="1 or true: every attempt, not only the live ones.")


class StepDecisionBody(_In):
    user_workflow_step_execution_pk: Pk
    validated: StrictBool = Field(description="true validates the step; false rejects it.")


class StepPkBody(_In):
    user_workflow_step_execution_pk: Pk


class StepResultBody(_In):
    user_workflow_step_execution_pk: Pk
    # The workflow service checks the shape and says what is wrong ("a non-empty list of objects").
    result: Annotated[list[Any], WithJsonSchema({"type": "array", "minItems": 1, "items": {"type": "object"}})] = Field(
        description="The step's result as the user edited it: a non-empty list of objects."
    )


class RestartBody(_In):
    user_task_execution_pk: Pk
    from_rank: Int32 = Field(1, description="Rank of the first step to run again.")
    inputs: dict[Text(255), Any] | Text() | None = Field(
        None, description="New form values (an object, or its JSON text in a multipart form); kept when absent."
    )


class TaskSpecBody(RootModel[TaskSpec]):
    """A task spec (docs/task_spec.md); validated by the task loader, which names every problem."""


class MenuBody(RootModel[Menu]):
    """A menu (docs/orders.md); validated by the menu loader, which names every problem."""


# ---- answers ---------------------------------------------------------------------------------

class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorOut(_Out):
    error: str
    field: str | None = None
    errors: list[Any] | None = None


class HealthOut(_Out):
    status: Literal["ok", "error"]
    database: str
    redis: str
    llm: str


class TaskSummaryOut(_Out):
    task_pk: int
    name_for_system: str
    type: str
    icon: str | None
    languages: list[str]
    updated_at: str | None


class TaskOut(TaskSummaryOut):
    """One task (with its spec) when name_for_system is given, or the list under ``tasks``."""

    task_pk: int | None = None
    name_for_system: str | None = None
    type: str | None = None
    icon: str | None = None
    languages: list[str] | None = None
    updated_at: str | None = None
    spec: dict[str, Any] | None = None
    tasks: list[TaskSummaryOut] | None = None


class UserTaskOut(_Out):
    user_task_pk: int
    task_pk: int
    name_for_system: str
    type: str
    icon: str | None
    name: str
    description: str
    language_code: str | None
    json_input: list[Any]
    enabled: bool


class UserTasksOut(_Out):
    user_tasks: list[UserTaskOut]


class NewExecutionOut(_Out):
    user_task_execution_pk: int
    session_id: str
    json_input: list[Any]
    actions: list[Any]
    text_edit_actions: list[Any]
    parent_user_task_execution_pk: int | None


class ExecutionOut(_Out):
    user_task_execution_pk: int
    user_task_pk: int
    session_id: str
    task_name: str
    name_for_system: str
    icon: str | None
    status: str
    title: str | None
    summary: str | None
    title_status: str | None
    parent_user_task_execution_pk: int | None
    json_inputs_values: Any
    start_date: str | None
    end_date: str | None
    created_at: str | None
    produced_text_version_count: int


class ExecutionPageOut(ExecutionOut):
    """One execution when user_task_execution_pk is given, else a page of them."""

    user_task_execution_pk: int | None = None
    user_task_pk: int | None = None
    session_id: str | None = None
    task_name: str | None = None
    name_for_system: str | None = None
    icon: str | None = None
    status: str | None = None
    title: str | None = None
    summary: str | None = None
    title_status: str | None = None
    parent_user_task_execution_pk: int | None = None
    json_inputs_values: Any = None
    start_date: str | None = None
    end_date: str | None = None
    created_at: str | None = None
    produced_text_version_count: int | None = None
    actions: list[Any] | None = None
    text_edit_actions: list[Any] | None = None
    type: str | None = None
    user_task_executions: list[ExecutionOut] | None = None
    total: int | None = None
    offset: int | None = None
    limit: int | None = None


class DeletedOut(_Out):
    user_task_execution_pk: int
    status: Literal["deleted"]


class RunOut(_Out):
    user_task_execution_pk: int
    session_id: str
    message_pk: int | None = Field(description="The form message's, or an order's greeting's (null when the customer "
                                   "spoke before the order was started).")


class TitleOut(_Out):
    user_task_execution_pk: int
    title: str


class AcceptedMessageOut(_Out):
    message_pk: int
    message_id: str
    status: str


class MessageOut(_Out):
    message_pk: int
    seq: int | None
    session_id: str
    user_task_execution_pk: int | None
    sender: str
    event_name: str
    message_id: str | None
    text: str
    status: str
    error: str | None
    answer_message_pk: int | None
    data: Any
    created_at: str | None


class MessagesOut(_Out):
    messages: list[MessageOut]
    has_more: bool
    last_seq: int


class VersionOut(_Out):
    produced_text_pk: int
    produced_text_version_pk: int
    produced_text_version_index: int
    produced_text_title: str
    produced_text: str
    text_type: str | None
    origin: str
    user_task_execution_pk: int
    created_at: str | None
    produced_text_version_count: int


class MenuStoredOut(_Out):
    menu_id: str
    created: bool
    item_types: list[str]


class MenuOut(_Out):
    menu_id: str
    menu: dict[str, Any]


class StockOut(_Out):
    menu_id: str
    item_type: str
    field: str | None
    value: str | None
    in_stock: bool
    out_of_stock_raised: list[int]


class OrderOut(_Out):
    user_task_execution_pk: int
    state: str
    turn: int
    menu_id: str
    order: Any
    ticket: Any


class OrderEventOut(_Out):
    user_task_execution_pk: int
    event: str
    message_pk: int
    status: str


class AuditOut(_Out):
    user_task_execution_pk: int
    turns: list[dict[str, Any]]


class TextEditActionsOut(_Out):
    produced_text_version_pk: int
    text_edit_actions: list[dict[str, Any]]


class TextEditOut(_Out):
    message_pk: int
    message_id: str | None
    status: str
    error: str | None
    session_id: str
    user_task_execution_pk: int | None
    source_produced_text_version_pk: int | None
    text_edit_action_pk: int | None
    produced_text_version_pk: int | None


class UsageOut(_Out):
    from_: str | None = Field(alias="from")
    to: str | None
    group_by: str | None


class ToolDecisionOut(_Out):
    task_tool_execution_pk: int
    approved: bool
    status: str


class ReasoningOut(_Out):
    user_task_execution_pk: int
    reasoning: list[dict[str, Any]]
    total: int | None = Field(None, description="Entries in the whole trace.")
    offset: int | None = None
    limit: int | None = Field(None, description="The limit asked for; null: no limit.")


class LoginOut(_Out):
    token: str
    expires_at: str = Field(description="When the token stops authenticating (MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS).")
    user: dict[str, Any]


class LogoutOut(_Out):
    revoked: bool


class UserOut(_Out):
    user_id: str
    name: str
    email: str
    language_code: str


class StopOut(_Out):
    user_task_execution_pk: int
    stopped: bool


class WorkflowStepsOut(_Out):
    user_task_execution_pk: int
    status: str
    steps: list[dict[str, Any]]
    step_executions: list[dict[str, Any]]


class StepOut(_Out):
    user_workflow_step_execution_pk: int
    user_task_execution_pk: int
    step_name_for_system: str
    rank: int
    status: str
    validated: bool | None
    result: list[Any] | None
    run_submitted: bool


class RestartOut(_Out):
    user_task_execution_pk: int
    from_rank: int
    run_submitted: bool


# Every route may answer these (bad input, auth, ownership, conflicts, size, throttling, outage).
class HomeChatBody(_StrictBody):
    platform: ClientPlatform = "webapp"
    leave_task: StrictBool = Field(False, description="Leave the task the chat is running; back to free chat.")


class HomeChatOut(_Out):
    home_chat_pk: int
    session_id: str
    platform: str | None = None
    running_user_task_execution_pk: int | None = None
    created_at: str | None = None
    left_user_task_execution_pk: int | None = None


class UserProfileBody(_In):
    """Partial update: only the fields sent are written; an empty string clears a field."""

    name: Text(255) | None = None
    language: Text(16) | None = None
    timezone: Text(64) | None = Field(None, description="An IANA zone, e.g. Europe/Paris.")
    company_name: Text(255) | None = None
    company_description: Text(2000) | None = None
    job: Text(255) | None = None
    about_me: Text(2000) | None = None


class UserProfileOut(_Out):
    user_profile: dict[str, Any]


class MessagePkQuery(_In):
    message_pk: Pk


ERROR_CODES = ("400", "401", "403", "404", "409", "413", "415", "422", "429", "503")


def answers(ok: type[BaseModel], *codes: str) -> Response:
    """The documented answers of a route: its 200 model, and the shared error shape."""
    errors = {f"HTTP_{code}": ErrorOut for code in (codes or ERROR_CODES)}
    return Response(HTTP_200=ok, **errors)


# ---- Socket.IO payloads ----------------------------------------------------------------------

class StartSessionPayload(_In):
    """``start_session``: join a session's room and get the events after ``last_seq`` (0: all)."""

    session_id: SessionId
    last_seq: Annotated[Annotated[int, Field(ge=0, le=INT_MAX), BeforeValidator(no_bool)],
                        BeforeValidator(lambda v: 0 if v is None or v == "" else v)] = 0
