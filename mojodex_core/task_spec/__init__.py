"""Task specs: admin configuration of tasks through JSON files, validated before they reach the database.

A spec is one JSON object in the Mojodex format (instruct or workflow) or our ``order`` type. The
public API:

- ``validate_spec(data)`` -> ``TaskSpec`` (InstructTaskSpec | WorkflowTaskSpec | OrderTaskSpec),
  raising ``SpecError`` whose ``.errors`` list every ``SpecIssue(path, rule)``;
- ``load_spec_file(path)``: the same from a file, JSON syntax errors included;
- ``displayed_data_for(spec, language)``: the user-facing texts, falling back to 'en';
- ``check_references(specs)``: rules across a directory of specs (``duplicate_name_issues`` and
  ``reference_issues``: the same by spec);
- ``export_json_schema()`` / ``render_json_schema()``: docs/task_spec.schema.json.

See docs/task_specs.md for the format and every rule.
"""

from .api import (
    check_references,
    displayed_data_for,
    duplicate_name_issues,
    export_json_schema,
    load_spec_file,
    pick_language,
    reference_issues,
    render_json_schema,
    validate_spec,
)
from .errors import SpecError, SpecIssue, format_path
from .fields import INPUT_TYPES, OUTPUT_TYPES, PLATFORMS, is_placeholder
from .models import (
    TASK_TYPES,
    DisplayedData,
    InfoToExtract,
    InstructTaskSpec,
    JsonInput,
    OrderDisplayedData,
    OrderTaskSpec,
    PossibleValue,
    PredefinedAction,
    PredefinedActionData,
    PredefinedActionDisplayedData,
    StepDisplayedData,
    TaskSpec,
    ToolSpec,
    WorkflowStep,
    WorkflowTaskSpec,
)

__all__ = [
    "INPUT_TYPES",
    "OUTPUT_TYPES",
    "PLATFORMS",
    "TASK_TYPES",
    "DisplayedData",
    "InfoToExtract",
    "ToolSpec",
    "InstructTaskSpec",
    "JsonInput",
    "OrderDisplayedData",
    "OrderTaskSpec",
    "PossibleValue",
    "PredefinedAction",
    "PredefinedActionData",
    "PredefinedActionDisplayedData",
    "SpecError",
    "SpecIssue",
    "StepDisplayedData",
    "TaskSpec",
    "WorkflowStep",
    "WorkflowTaskSpec",
    "check_references",
    "displayed_data_for",
    "duplicate_name_issues",
    "export_json_schema",
    "format_path",
    "is_placeholder",
    "load_spec_file",
    "pick_language",
    "reference_issues",
    "render_json_schema",
    "validate_spec",
]
