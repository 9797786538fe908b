"""Pydantic v2 models of a task spec: the Mojodex instruct format, Mojodex workflows, and our order tasks.

Nested objects forbid unknown keys (a typo there would silently drop data); the top level ignores
unknown keys and the validator reports them as warnings, because Mojodex exports carry metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    Tag,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from .errors import SpecIssue
from .fields import (
    LANE_MAX_CHARS,
    Icon,
    InputType,
    Key,
    LanguageCode,
    MenuPath,
    Name,
    OutputType,
    Platform,
    ShortText,
    Text,
    WebhookUrl,
    at_most,
    is_menu_id,
)

TASK_TYPES = ("instruct", "workflow", "order")

# Schema side of the "an 'en' entry is required" rule (uniqueness of languages is validator-only).
_HAS_EN: dict[str, Any] = {
    "contains": {
        "type": "object",
        "required": ["language_code"],
        "properties": {"language_code": {"const": "en"}},
    }
}


class _Nested(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PossibleValue(_Nested):
    """One choice of a drop_down_list input."""

    value: Text = Field(description="What the assistant receives when this choice is picked.")
    displayed_text: Text = Field(description="Label shown to the user, in the entry's language.")


def _json_input_schema(schema: dict[str, Any]) -> None:
    schema["allOf"] = [
        {
            "if": {"properties": {"type": {"const": "drop_down_list"}}, "required": ["type"]},
            "then": {"required": ["possible_values"], "properties": {"possible_values": {"minItems": 1}}},
            "else": {"not": {"required": ["possible_values"]}},
        }
    ]


class JsonInput(_Nested):
    """One field of the form the user fills in to start the task."""

    model_config = ConfigDict(json_schema_extra=_json_input_schema)

    input_name: Key = Field(description="Key of the input; unique within a language entry.")
    description_for_user: Text = Field(description="Question or label shown to the user.")
    description_for_system: Text = Field(description="What the input contains, told to the assistant.")
    type: InputType = Field(description="Kind of input widget.")
    placeholder: Text | None = Field(default=None, description="Hint shown in an empty text_area.")
    possible_values: list[PossibleValue] | None = Field(
        default=None,
        validate_default=True,
        description="Choices of a drop_down_list (required and non-empty for it, forbidden otherwise).",
    )

    @field_validator("possible_values")
    @classmethod
    def _possible_values_match_type(cls, value: list[PossibleValue] | None, info: ValidationInfo) -> Any:
        kind = info.data.get("type")
        if kind is None:  # the type itself is invalid and reported on its own
            return value
        if kind == "drop_down_list":
            if value is None:
                raise PydanticCustomError("spec_rule", "is required when type is 'drop_down_list'")
            if not value:
                raise PydanticCustomError("spec_rule", "must be a non-empty list")
        elif value is not None:
            raise PydanticCustomError(
                "spec_rule",
                "is only allowed when type is 'drop_down_list' (type is '{type}')",
                {"type": kind},
            )
        return value


def _accept_json_inputs(schema: dict[str, Any]) -> None:
    """Workflow specs spell the list ``json_inputs``; the schema accepts either spelling, not both."""
    props = schema.get("properties", {})
    if "json_input" in props:
        props["json_inputs"] = dict(props["json_input"], description="Alternative spelling of json_input.")
        required = [r for r in schema.get("required", []) if r != "json_input"]
        if "json_input" in schema.get("required", []):
            schema["oneOf"] = [{"required": ["json_input"]}, {"required": ["json_inputs"]}]
        else:
            schema["not"] = {"required": ["json_input", "json_inputs"]}
        schema["required"] = required


class DisplayedData(_Nested):
    """What the user sees of the task, in one language."""

    model_config = ConfigDict(json_schema_extra=_accept_json_inputs)

    language_code: LanguageCode = Field(description="ISO 639-1 code: 'en', 'fr'...; one entry must be 'en'.")
    name_for_user: ShortText = Field(description="Task name shown to the user (at most 255 characters).")
    definition_for_user: Text = Field(description="One-line description shown to the user.")
    json_input: list[JsonInput] = Field(
        min_length=1,
        validation_alias=AliasChoices("json_input", "json_inputs"),
        description="Form inputs (also accepted as json_inputs, the spelling of Mojodex workflow files).",
    )


class OrderDisplayedData(DisplayedData):
    """Displayed data of an order task: the form is optional, the order is taken in conversation."""

    json_input: list[JsonInput] = Field(
        default_factory=list,
        validation_alias=AliasChoices("json_input", "json_inputs"),
        description="Optional form inputs (an order is taken in conversation).",
    )


class InfoToExtract(_Nested):
    """An information the assistant must have (asking the user if needed) before writing."""

    info_name: Key = Field(description="Short key of the information; unique in the spec.")
    description: Text = Field(description="What the information is, for the assistant.")


MAX_TOOL_TIMEOUT_S = 600.0


class ToolSpec(_Nested):
    """A tool the assistant may use during the task (see docs/tools_and_reasoning.md)."""

    name: Name = Field(description="Registered tool name, e.g. 'internal_memory' or 'http_json'.")
    usage_description: Text = Field(description="When and how the assistant should use the tool for this task.")
    requires_approval: StrictBool = Field(
        default=False, description="Ask the user to approve each use before the tool runs."
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="Admin settings of the tool for this task (e.g. http_json's url); "
        f"timeout_s, when set, is a number of seconds above 0 and at most {MAX_TOOL_TIMEOUT_S:g}.",
        json_schema_extra={"properties": {"timeout_s": {
            "type": "number", "exclusiveMinimum": 0, "maximum": MAX_TOOL_TIMEOUT_S}}},
    )

    @field_validator("config")
    @classmethod
    def _timeout(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Every tool reads timeout_s (the platform bounds each run with it): a bad one would fail each use.
        timeout = value.get("timeout_s")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                    or not 0 < timeout <= MAX_TOOL_TIMEOUT_S):
            raise PydanticCustomError("spec_rule", "timeout_s must be a number of seconds above 0 and at most "
                                      "{limit}", {"limit": f"{MAX_TOOL_TIMEOUT_S:g}"})
        return value


class PredefinedActionData(_Nested):
    name: Text = Field(description="Name of the action shown to the user.")
    button_text: Text | None = Field(default=None, description="Text of the action's button.")
    message_prefix: Text | None = Field(
        default=None, description="Message sent on the user's behalf to start the referenced task."
    )


class PredefinedActionDisplayedData(_Nested):
    language_code: LanguageCode
    data: PredefinedActionData


class PredefinedAction(_Nested):
    """A follow-up offered on the task's result that starts another task, named by its name_for_system."""

    task_name: Name = Field(description="name_for_system of the task this action starts.")
    displayed_data: list[PredefinedActionDisplayedData] = Field(
        min_length=1, description="One entry per language; one must be 'en'.", json_schema_extra=_HAS_EN
    )


class StepDisplayedData(_Nested):
    language_code: LanguageCode
    name_for_user: Text
    definition_for_user: Text


class WorkflowStep(_Nested):
    name_for_system: Name = Field(description="Step name; must exist in the steps library.")
    definition_for_system: Text
    rank: StrictInt | None = Field(default=None, description="Position in the workflow, from 1 (optional).")
    review_chat_enabled: StrictBool = False
    user_validation_required: StrictBool = True
    step_displayed_data: list[StepDisplayedData] = Field(min_length=1, json_schema_extra=_HAS_EN)


class _TaskSpecBase(BaseModel):
    model_config = ConfigDict(extra="ignore")

    datetime: Any = Field(
        default=None, exclude=True, description="Accepted and ignored (Mojodex export time)."
    )
    name_for_system: Name = Field(description="Unique task identifier, e.g. 'meeting_minutes'.")
    definition_for_system: Text = Field(description="What the task is, for the assistant.")
    platforms: list[Platform] = Field(
        min_length=1, description="Where the task is offered.", json_schema_extra={"uniqueItems": True}
    )
    icon: Icon = Field(description="An emoji.")
    output_type: OutputType = Field(description="Kind of text produced.")
    predefined_actions: list[PredefinedAction] = Field(default_factory=list)
    result_chat_enabled: StrictBool = Field(default=True, description="Can the user chat about the result.")

    _warnings: list[SpecIssue] = PrivateAttr(default_factory=list)

    @property
    def warnings(self) -> list[SpecIssue]:
        """Problems that do not block loading (unknown top-level keys, translated input names...)."""
        return self._warnings

    @property
    def languages(self) -> list[str]:
        return [d.language_code for d in self.task_displayed_data]  # type: ignore[attr-defined]


class InstructTaskSpec(_TaskSpecBase):
    """Mojodex instruct task: the assistant gathers infos_to_extract, then writes one text."""

    task_type: Literal["instruct"] = Field(
        default="instruct", description="Defaults to instruct when absent."
    )
    final_instruction: Text
    output_format_instruction_title: Text
    output_format_instruction_draft: Text
    infos_to_extract: list[InfoToExtract] = Field(description="May be empty; info_name values are unique.")
    tools: list[ToolSpec] = Field(
        default_factory=list, description="Tools the assistant may use; tool names are unique."
    )
    task_displayed_data: list[DisplayedData] = Field(min_length=1, json_schema_extra=_HAS_EN)

    @field_validator("tools")
    @classmethod
    def _unique_tool_names(cls, value: list[ToolSpec]) -> list[ToolSpec]:
        names = [t.name for t in value]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise PydanticCustomError(
                "spec_rule", "tool names must be unique, repeated: {names}", {"names": ", ".join(duplicates)}
            )
        return value


class WorkflowTaskSpec(_TaskSpecBase):
    """Mojodex workflow task: steps from the steps library run in list order."""

    task_type: Literal["workflow"]
    steps: list[WorkflowStep] = Field(min_length=1)
    task_displayed_data: list[DisplayedData] = Field(min_length=1, json_schema_extra=_HAS_EN)


class OrderTaskSpec(_TaskSpecBase):
    """Order capture against a menu: a file under tasks_config/ or a menu uploaded with PUT /menu."""

    task_type: Literal["order"]
    menu: MenuPath = Field(
        description="Menu file relative to tasks_config/ (e.g. 'menus/pizzeria.json'), or the id of a menu "
        "uploaded with PUT /menu (no '/' and no '.', e.g. 'florist')."
    )
    pos_webhook_url: WebhookUrl | None = Field(
        default=None, description="Where the ticket is POSTed at Closing (signed, retried); none when absent."
    )
    location: Key | None = Field(
        default=None, description="Shop or drive-thru id in the live-state key; defaults to the task name."
    )
    lane: Annotated[Key, at_most(LANE_MAX_CHARS)] | None = Field(
        default=None, description="Lane in the live-state key (at most 32 characters); defaults to '0'."
    )
    output_type: OutputType = Field(
        default="order", description="Kind of text produced; defaults to 'order'."
    )
    task_displayed_data: list[OrderDisplayedData] = Field(min_length=1, json_schema_extra=_HAS_EN)

    @property
    def menu_is_id(self) -> bool:
        return is_menu_id(self.menu)

    def menu_path(self, tasks_config_dir: str | Path) -> Path:
        """Absolute path of the menu file, resolved against the tasks_config directory."""
        return (Path(tasks_config_dir) / self.menu).resolve()


MODELS: dict[str, type[_TaskSpecBase]] = {
    "instruct": InstructTaskSpec,
    "workflow": WorkflowTaskSpec,
    "order": OrderTaskSpec,
}


def _task_type_of(value: Any) -> str | None:
    if isinstance(value, dict):
        kind = value.get("task_type", "instruct")
    else:
        kind = getattr(value, "task_type", None)
    return kind if kind in TASK_TYPES else None


TaskSpec = Annotated[
    Annotated[InstructTaskSpec, Tag("instruct")]
    | Annotated[WorkflowTaskSpec, Tag("workflow")]
    | Annotated[OrderTaskSpec, Tag("order")],
    Discriminator(
        _task_type_of,
        custom_error_type="spec_rule",
        custom_error_message="task_type must be one of: " + ", ".join(TASK_TYPES),
    ),
]

# Keys allowed in each nested container, by the name of the key that holds it (for suggestions).
NESTED_FIELDS: dict[str, tuple[str, ...]] = {
    "task_displayed_data": ("language_code", "name_for_user", "definition_for_user", "json_input"),
    "json_input": tuple(JsonInput.model_fields),
    "json_inputs": tuple(JsonInput.model_fields),
    "possible_values": tuple(PossibleValue.model_fields),
    "infos_to_extract": tuple(InfoToExtract.model_fields),
    "predefined_actions": tuple(PredefinedAction.model_fields),
    "displayed_data": tuple(PredefinedActionDisplayedData.model_fields),
    "data": tuple(PredefinedActionData.model_fields),
    "steps": tuple(WorkflowStep.model_fields),
    "step_displayed_data": tuple(StepDisplayedData.model_fields),
    "tools": tuple(ToolSpec.model_fields),
}
