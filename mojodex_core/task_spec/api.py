"""validate_spec, load_spec_file, displayed_data_for, cross-spec reference checks and schema export."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from .checks import consistency_issues
from .errors import FILE_PATH, ROOT_PATH, SpecError, SpecIssue, format_path, pydantic_issue
from .fields import FORMAT_MARKER, SCHEMA_DEFS
from .models import MODELS, NESTED_FIELDS, TASK_TYPES, DisplayedData, OrderTaskSpec, TaskSpec

_ADAPTER: TypeAdapter[Any] = TypeAdapter(TaskSpec)
_TAGS = frozenset(TASK_TYPES)
SCHEMA_ID = "https://mojodex.local/schemas/task_spec.schema.json"


def _dedupe(issues: Iterable[SpecIssue]) -> list[SpecIssue]:
    return list(dict.fromkeys(issues))


def _in_document_order(issues: list[SpecIssue], data: dict) -> list[SpecIssue]:
    """Sort issues by the position of their top-level key in the file (stable within a key)."""
    order = {key: i for i, key in enumerate(data)}
    return sorted(
        issues, key=lambda issue: order.get(re.split(r"[.\[]", issue.path, maxsplit=1)[0], len(order))
    )


def validate_spec(data: Any, *, strict: bool = False) -> TaskSpec:
    """Validate parsed JSON and return the typed spec; raise SpecError listing every problem.

    The returned spec's ``warnings`` list what does not block loading (unknown top-level keys,
    input names that differ between languages...). ``strict=True`` turns warnings into errors.
    """
    if not isinstance(data, dict):
        raise SpecError(
            [SpecIssue(ROOT_PATH, f"must be a JSON object (a task spec), got {type(data).__name__}")]
        )
    task_type = data.get("task_type", "instruct")
    if task_type not in TASK_TYPES:
        raise SpecError(
            [SpecIssue("task_type", f"must be one of: {', '.join(TASK_TYPES)} (got {task_type!r})")]
        )
    errors, warnings = consistency_issues(data, task_type)
    spec = None
    try:
        spec = _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raw = exc.errors(include_url=False)
        converted = [issue for e in raw if (issue := pydantic_issue(e, _TAGS, NESTED_FIELDS)) is not None]
        if not converted and not errors:  # never raise an empty SpecError
            converted = [SpecIssue(format_path(e["loc"]), e["msg"]) for e in raw]
        errors = converted + errors
    if strict:
        errors = errors + warnings
    if errors or spec is None:
        raise SpecError(_in_document_order(_dedupe(errors), data))
    spec._warnings = _dedupe(warnings)
    return spec


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key '{key}' in a JSON object")
        out[key] = value
    return out


def load_spec_file(path: str | os.PathLike[str], *, strict: bool = False) -> TaskSpec:
    """Read and validate one spec file.

    Unreadable files and JSON syntax errors (with line and column) are SpecError at path "<file>".
    For an order task, a menu file missing next to the spec (menu is relative to the spec's
    directory, i.e. tasks_config/) is a warning: menus may be installed separately.
    """
    path = Path(path)
    source = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise SpecError(
            [SpecIssue(FILE_PATH, f"cannot read {source}: {exc.strerror or exc}")], source
        ) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            [SpecIssue(FILE_PATH, f"{source} is not UTF-8 text (byte {exc.start})")], source
        ) from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        rule = f"invalid JSON in {source} at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise SpecError([SpecIssue(FILE_PATH, rule)], source) from None
    except ValueError as exc:
        raise SpecError([SpecIssue(FILE_PATH, f"invalid JSON in {source}: {exc}")], source) from None
    try:
        spec = validate_spec(data, strict=strict)
    except SpecError as exc:
        exc.source = source
        raise
    if isinstance(spec, OrderTaskSpec) and not spec.menu_is_id:
        menu = spec.menu_path(path.parent)
        if not menu.is_file():
            issue = SpecIssue("menu", f"file not found: {menu}")
            if strict:
                raise SpecError([issue], source)
            spec._warnings.append(issue)
    return spec


_E = TypeVar("_E")


def pick_language(entries: Sequence[_E], language: str | None) -> _E:
    """The entry for ``language`` ('fr', 'fr-CA', 'FR_ca'...), else its base language, else 'en'."""
    by_code = {str(e.language_code).lower(): e for e in entries}
    wanted = (language or "").strip().lower().replace("_", "-")
    for code in (wanted, wanted.split("-")[0], "en"):
        if code in by_code:
            return by_code[code]
    return entries[0]


def displayed_data_for(spec: TaskSpec, language: str | None) -> DisplayedData:
    """What the user sees of ``spec`` in ``language``, falling back to the base language then to 'en'."""
    return pick_language(spec.task_displayed_data, language)


def check_references(specs: Mapping[str, TaskSpec], known_task_names: Iterable[str] = ()) -> list[SpecIssue]:
    """Rules across a set of specs (e.g. every file of tasks_config/), keyed by a label such as the file name.

    name_for_system is unique across the set, and every predefined action names a task of the set
    or of ``known_task_names`` (tasks already in the database). Each issue's path starts with its label.
    """
    return [
        SpecIssue(f"{label}: {issue.path}", issue.rule)
        for found in (duplicate_name_issues(specs), reference_issues(specs, known_task_names))
        for label, issues in found.items()
        for issue in issues
    ]


def duplicate_name_issues(specs: Mapping[str, TaskSpec]) -> dict[str, list[SpecIssue]]:
    """Every spec whose name_for_system another spec of the set has, by label (path ``name_for_system``).

    All of them, not the later ones: which one is meant depends on the order the set was given in.
    """
    labels: dict[str, list[str]] = {}
    for label, spec in specs.items():
        labels.setdefault(spec.name_for_system, []).append(label)
    return {
        label: [
            SpecIssue(
                "name_for_system",
                f"duplicate name_for_system '{spec.name_for_system}' (also in "
                f"{', '.join(other for other in labels[spec.name_for_system] if other != label)})",
            )
        ]
        for label, spec in specs.items()
        if len(labels[spec.name_for_system]) > 1
    }


def reference_issues(
    specs: Mapping[str, TaskSpec], known_task_names: Iterable[str] = ()
) -> dict[str, list[SpecIssue]]:
    """The predefined actions naming neither a spec of the set nor one of ``known_task_names``, by label,
    each path within its spec (``predefined_actions[0].task_name``); labels without issues are left out."""
    known = {spec.name_for_system for spec in specs.values()} | set(known_task_names)
    issues: dict[str, list[SpecIssue]] = {}
    for label, spec in specs.items():
        for i, action in enumerate(spec.predefined_actions):
            if action.task_name not in known:
                issues.setdefault(label, []).append(
                    SpecIssue(f"predefined_actions[{i}].task_name", f"no task named '{action.task_name}'")
                )
    return issues


def _use_shared_formats(node: Any) -> Any:
    """Replace the inline string formats marked by fields.py with $refs to the shared $defs."""
    if isinstance(node, list):
        return [_use_shared_formats(item) for item in node]
    if not isinstance(node, dict):
        return node
    if FORMAT_MARKER in node:
        keep = {k: v for k, v in node.items() if k in ("title", "description", "default")}
        return {"$ref": f"#/$defs/{node[FORMAT_MARKER]}", **keep}
    return {key: _use_shared_formats(value) for key, value in node.items()}


def export_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a task spec, as written to docs/task_spec.schema.json.

    It carries the per-field rules (types, required, patterns, enums, placeholders, drop-down
    possible_values); rules spanning several entries (uniqueness, 'en' entry, inputs alike in
    every language, step ranks) are only enforced by validate_spec.
    """
    schema = _use_shared_formats(_ADAPTER.json_schema(mode="validation"))
    defs = dict(schema.pop("$defs", {}))
    defs.update(SCHEMA_DEFS)
    for model in MODELS.values():
        foreign = sorted(
            {key for other in MODELS.values() for key in other.model_fields} - set(model.model_fields)
        )
        # Keys of another task type are errors (validate_spec says which type owns them).
        defs[model.__name__]["not"] = {"anyOf": [{"required": [key]} for key in foreign]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Task spec",
        "description": (
            "An instruct, workflow or order task, in the Mojodex JSON format. task_type defaults to "
            "'instruct'. Generated by `python -m mojodex_core.task_spec`; see docs/task_specs.md."
        ),
        **schema,
        "$defs": dict(sorted(defs.items())),
    }


def render_json_schema() -> str:
    """The exact text of docs/task_spec.schema.json."""
    return json.dumps(export_json_schema(), indent=2, ensure_ascii=False) + "\n"
