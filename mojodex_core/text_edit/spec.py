"""The text edit action spec: validated before anything is stored."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mojodex_core.task_spec import SpecError, SpecIssue, format_path
from mojodex_core.text_edit.prompt import TemplateProblem, check_template


class TextEditActionDisplayedData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    language_code: str = Field(min_length=2, max_length=8)
    name: str = Field(min_length=1, max_length=64)
    description: str = Field(min_length=1)


class TextEditActionSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")
    emoji: str | None = Field(default=None, max_length=16)
    output_types: list[str] = Field(min_length=1)
    displayed_data: list[TextEditActionDisplayedData] = Field(min_length=1)
    # A Jinja2 template: the instruction given to the model (variables: see prompt.TEMPLATE_VARIABLES).
    prompt_template: str = Field(min_length=1)

    @field_validator("displayed_data")
    @classmethod
    def _languages(cls, value: list[TextEditActionDisplayedData]) -> list[TextEditActionDisplayedData]:
        codes = [d.language_code for d in value]
        if len(set(codes)) != len(codes):
            raise ValueError("each language_code may appear once")
        if "en" not in codes:
            raise ValueError("an 'en' entry is required")
        return value

    @field_validator("output_types")
    @classmethod
    def _types(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value) or any(not t.strip() for t in value):
            raise ValueError("output types must be distinct, non-empty names")
        return value


def validate_text_edit_action(data: Any) -> TextEditActionSpec:
    """The spec, or SpecError listing every problem (the template is rendered once on sample values)."""
    if not isinstance(data, dict):
        raise SpecError([SpecIssue("<root>", "a text edit action must be a JSON object")])
    try:
        spec = TextEditActionSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError([SpecIssue(format_path(e["loc"]), e["msg"]) for e in exc.errors()]) from None
    try:
        check_template(spec.prompt_template)
    except TemplateProblem as exc:
        raise SpecError([SpecIssue("prompt_template", str(exc))]) from None
    return spec
