"""Task spec validation: real Mojodex specs, our samples, the template, malformed specs, the JSON Schema."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mojodex_core.task_spec import (
    InstructTaskSpec,
    OrderTaskSpec,
    SpecError,
    SpecIssue,
    WorkflowTaskSpec,
    check_references,
    displayed_data_for,
    duplicate_name_issues,
    export_json_schema,
    load_spec_file,
    reference_issues,
    render_json_schema,
    validate_spec,
)

REPO = Path(__file__).resolve().parents[1]
REAL_DIR = REPO.parent / "shared" / "data" / "mojodex_task_specs"
TASKS_CONFIG = REPO / "tasks_config"
SCHEMA_FILE = REPO / "docs" / "task_spec.schema.json"
TEMPLATE = "task_spec.json"

needs_real = pytest.mark.skipif(not REAL_DIR.is_dir(), reason=f"real Mojodex specs not found at {REAL_DIR}")


def _real_files() -> list[str]:
    if not REAL_DIR.is_dir():
        return ["<missing>"]
    return sorted(p.name for p in REAL_DIR.glob("*.json") if p.name != TEMPLATE)


SAMPLES = sorted(p.name for p in TASKS_CONFIG.glob("*.json"))


def _input(name: str, kind: str = "text_area", **extra: Any) -> dict[str, Any]:
    return {
        "input_name": name,
        "description_for_user": f"{name}?",
        "description_for_system": f"the {name}",
        "type": kind,
        **extra,
    }


SIZES = [{"value": "small", "displayed_text": "Small"}, {"value": "large", "displayed_text": "Large"}]
TAILLES = [{"value": "small", "displayed_text": "Petit"}, {"value": "large", "displayed_text": "Grand"}]


def instruct() -> dict[str, Any]:
    return {
        "task_type": "instruct",
        "platforms": ["webapp", "mobile"],
        "name_for_system": "recap",
        "definition_for_system": "The user needs a recap",
        "final_instruction": "Write the recap",
        "output_format_instruction_title": "SHORT TITLE",
        "output_format_instruction_draft": "CONTENT OF THE RECAP",
        "output_type": "document",
        "icon": "📝",
        "infos_to_extract": [
            {"info_name": "topic", "description": "Topic"},
            {"info_name": "date", "description": "Date"},
        ],
        "task_displayed_data": [
            {
                "language_code": "en",
                "name_for_user": "Recap",
                "definition_for_user": "Write a recap",
                "json_input": [
                    _input("notes", placeholder="Your notes"),
                    _input("size", "drop_down_list", possible_values=copy.deepcopy(SIZES)),
                ],
            },
            {
                "language_code": "fr",
                "name_for_user": "Récap",
                "definition_for_user": "Écrire un récap",
                "json_input": [
                    _input("notes"),
                    _input("size", "drop_down_list", possible_values=copy.deepcopy(TAILLES)),
                ],
            },
        ],
        "predefined_actions": [
            {
                "task_name": "follow_up",
                "displayed_data": [
                    {
                        "language_code": "en",
                        "data": {"name": "Follow up", "message_prefix": "Write a follow-up"},
                    }
                ],
            },
        ],
        "result_chat_enabled": True,
    }


def workflow() -> dict[str, Any]:
    step = {
        "name_for_system": "transcribe",
        "definition_for_system": "Transcribe",
        "rank": 1,
        "review_chat_enabled": False,
        "user_validation_required": False,
        "step_displayed_data": [
            {
                "language_code": "en",
                "name_for_user": "Transcribe",
                "definition_for_user": "Transcribe the video",
            }
        ],
    }
    second = copy.deepcopy(step) | {"name_for_system": "summarize", "rank": 2}
    return {
        "task_type": "workflow",
        "platforms": ["webapp"],
        "name_for_system": "video_doc",
        "definition_for_system": "Document from a video",
        "output_type": "document",
        "icon": "📖",
        "steps": [step, second],
        "predefined_actions": [],
        "task_displayed_data": [
            {
                "language_code": "en",
                "name_for_user": "Video doc",
                "definition_for_user": "Doc from a video",
                "json_inputs": [_input("video_recording", "video")],
            }
        ],
    }


def order() -> dict[str, Any]:
    return {
        "task_type": "order",
        "platforms": ["webapp", "mobile"],
        "name_for_system": "order_pizzeria",
        "definition_for_system": "Take a pizza order",
        "icon": "🍕",
        "menu": "menus/pizzeria.json",
        "task_displayed_data": [
            {"language_code": "en", "name_for_user": "Pizza", "definition_for_user": "Order pizzas"}
        ],
    }


def errors_of(data: Any, **kwargs: Any) -> list[SpecIssue]:
    with pytest.raises(SpecError) as info:
        validate_spec(data, **kwargs)
    return info.value.errors


# --- real Mojodex specs ------------------------------------------------------------------------------------


@needs_real
@pytest.mark.parametrize("name", _real_files())
def test_real_mojodex_specs_load_unchanged(name: str) -> None:
    path = REAL_DIR / name
    raw = json.loads(path.read_text(encoding="utf-8"))
    spec = load_spec_file(path)
    assert spec.name_for_system == raw["name_for_system"]
    assert spec.task_type == raw.get("task_type", "instruct")
    assert [d.language_code for d in spec.task_displayed_data] == [
        d["language_code"] for d in raw["task_displayed_data"]
    ]
    assert all(w.path != "<file>" for w in spec.warnings)


@needs_real
def test_real_specs_details() -> None:
    follow_up = load_spec_file(REAL_DIR / "follow_up_email.json")
    assert isinstance(follow_up, InstructTaskSpec)
    assert follow_up.name_for_system == "follow-up_email"
    assert follow_up.output_type == "email"
    # French input names are translated in the real file: accepted, with a warning.
    assert [w.path for w in follow_up.warnings] == ["task_displayed_data[1].json_input[0].input_name"]
    wf = load_spec_file(REAL_DIR / "doc_gen_workflow.json")
    assert isinstance(wf, WorkflowTaskSpec)
    assert [s.name_for_system for s in wf.steps] == [
        "transcribe_recording",
        "transcription_to_chapters",
        "chapters_to_doc",
    ]
    assert wf.steps[1].user_validation_required is True
    assert wf.task_displayed_data[1].json_input[0].type == "video"  # "json_inputs" in the file
    dumped = wf.model_dump()
    assert "json_input" in dumped["task_displayed_data"][0] and "datetime" not in dumped
    assert wf.warnings == []


@needs_real
def test_template_is_rejected_on_its_placeholders_only() -> None:
    with pytest.raises(SpecError) as info:
        load_spec_file(REAL_DIR / TEMPLATE)
    expected = {
        "name_for_system",
        "definition_for_system",
        "final_instruction",
        "output_format_instruction_title",
        "output_format_instruction_draft",
        "output_type",
        "icon",
        "infos_to_extract[0].info_name",
        "infos_to_extract[0].description",
        "task_displayed_data[0].name_for_user",
        "task_displayed_data[0].definition_for_user",
        "task_displayed_data[0].json_input[0].input_name",
        "task_displayed_data[0].json_input[0].description_for_user",
        "task_displayed_data[0].json_input[0].description_for_system",
        "task_displayed_data[0].json_input[0].placeholder",
    }
    errors = info.value.errors
    assert {e.path for e in errors} == expected
    assert len(errors) == len(expected)
    assert all("template placeholder" in e.rule for e in errors)
    assert "name_for_system: must be filled in: '<SYSTEM TASK NAME>' is a template placeholder" in str(
        info.value
    )
    assert info.value.source == str(REAL_DIR / TEMPLATE)


# --- our samples -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_load(name: str) -> None:
    spec = load_spec_file(TASKS_CONFIG / name)
    assert spec.name_for_system == Path(name).stem
    assert {d.language_code for d in spec.task_displayed_data} == {"en", "fr"}
    assert [w for w in spec.warnings if w.path != "menu"] == []


def test_samples_cover_the_formats_and_reference_each_other() -> None:
    specs = {name: load_spec_file(TASKS_CONFIG / name) for name in SAMPLES}
    assert check_references(specs) == []
    instructs = [s for s in specs.values() if isinstance(s, InstructTaskSpec)]
    assert len(instructs) >= 3
    assert {"document", "email"} & {s.output_type for s in instructs}
    assert any(i.type == "drop_down_list" for s in instructs for i in s.task_displayed_data[0].json_input)
    assert any(s.predefined_actions for s in instructs)
    orders = {s.name_for_system: s.menu for s in specs.values() if isinstance(s, OrderTaskSpec)}
    assert orders == {
        "order_bagel_shop": "menus/bagel_shop.json",
        "order_drive_thru": "menus/drive_thru.json",
        "order_pizzeria": "menus/pizzeria.json",
    }


# --- malformed specs ---------------------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Mutation:
    """Set a value at a dotted/bracket path: 'task_displayed_data[0].json_input[1].type'."""

    def mutate(data: dict[str, Any]) -> None:
        parts = path.replace("[", ".").replace("]", "").split(".")
        node: Any = data
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = parts[-1]
        if value is _DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return mutate


_DELETE = object()
DD0 = "task_displayed_data[0]"
IN = "task_displayed_data[0].json_input"

MALFORMED: list[tuple[str, Callable[[], dict[str, Any]], Mutation, str, str]] = [
    (
        "missing-final-instruction",
        instruct,
        _set("final_instruction", _DELETE),
        "final_instruction",
        "is required",
    ),
    (
        "blank-definition",
        instruct,
        _set("definition_for_system", "  "),
        "definition_for_system",
        "must not be empty",
    ),
    ("name-with-spaces", instruct, _set("name_for_system", "Meeting Recap"), "name_for_system", "must match"),
    (
        "unknown-platform",
        instruct,
        _set("platforms", ["webapp", "desktop"]),
        "platforms[1]",
        "must be one of: webapp, mobile",
    ),
    ("no-platform", instruct, _set("platforms", []), "platforms", "must be a non-empty list"),
    (
        "duplicate-platform",
        instruct,
        _set("platforms", ["webapp", "webapp"]),
        "platforms[1]",
        "duplicate platform 'webapp'",
    ),
    (
        "unknown-output-type",
        instruct,
        _set("output_type", "emial"),
        "output_type",
        "must be one of: document, email",
    ),
    (
        "no-displayed-data",
        instruct,
        _set("task_displayed_data", []),
        "task_displayed_data",
        "must be a non-empty list",
    ),
    (
        "no-english",
        instruct,
        _set(f"{DD0}.language_code", "de"),
        "task_displayed_data",
        "must include an entry with language_code 'en'",
    ),
    (
        "duplicate-language",
        instruct,
        _set("task_displayed_data[1].language_code", "en"),
        "task_displayed_data[1].language_code",
        "duplicate language_code 'en'",
    ),
    (
        "bad-language-code",
        instruct,
        _set(f"{DD0}.language_code", "English"),
        f"{DD0}.language_code",
        "must be a language code",
    ),
    (
        "duplicate-input-name",
        instruct,
        _set(f"{IN}[1].input_name", "notes"),
        f"{IN}[1].input_name",
        "duplicate input_name 'notes'",
    ),
    (
        "dropdown-without-values",
        instruct,
        _set(f"{IN}[1].possible_values", _DELETE),
        f"{IN}[1].possible_values",
        "is required when type is 'drop_down_list'",
    ),
    (
        "dropdown-empty-values",
        instruct,
        _set(f"{IN}[1].possible_values", []),
        f"{IN}[1].possible_values",
        "must be a non-empty list",
    ),
    (
        "dropdown-duplicate-value",
        instruct,
        _set(f"{IN}[1].possible_values[1].value", "small"),
        f"{IN}[1].possible_values[1].value",
        "duplicate value 'small'",
    ),
    (
        "possible-values-on-text-area",
        instruct,
        _set(f"{IN}[0].possible_values", copy.deepcopy(SIZES)),
        f"{IN}[0].possible_values",
        "only allowed when type is 'drop_down_list'",
    ),
    (
        "unknown-input-type",
        instruct,
        _set(f"{IN}[0].type", "checkbox"),
        f"{IN}[0].type",
        "must be one of: text_area, drop_down_list, image, multiple_images, audio_file, video",
    ),
    (
        "input-missing-in-french",
        instruct,
        _set("task_displayed_data[1].json_input[1]", _DELETE),
        "task_displayed_data[1].json_input",
        "must have the same number of inputs as the 'en' entry (2), got 1",
    ),
    (
        "input-type-differs-in-french",
        instruct,
        _set("task_displayed_data[1].json_input[1]", _input("size", "image")),
        "task_displayed_data[1].json_input[1].type",
        "must be 'drop_down_list' like the matching 'en' input 'size'",
    ),
    (
        "dropdown-values-differ-in-french",
        instruct,
        _set("task_displayed_data[1].json_input[1].possible_values[1].value", "huge"),
        "task_displayed_data[1].json_input[1].possible_values",
        "must offer the same values",
    ),
    (
        "input-list-not-a-list",
        instruct,
        _set(f"{DD0}.json_input", "notes"),
        f"{DD0}.json_input",
        "must be a list",
    ),
    (
        "unknown-input-key",
        instruct,
        _set(f"{IN}[0].placehoder", "x"),
        f"{IN}[0].placehoder",
        "unknown field (did you mean 'placeholder'?)",
    ),
    (
        "placeholder-marker",
        instruct,
        _set(f"{DD0}.name_for_user", "TASK_NAME"),
        f"{DD0}.name_for_user",
        "is a template placeholder",
    ),
    (
        "duplicate-info-name",
        instruct,
        _set("infos_to_extract[1].info_name", "topic"),
        "infos_to_extract[1].info_name",
        "duplicate info_name 'topic'",
    ),
    (
        "info-name-with-spaces",
        instruct,
        _set("infos_to_extract[0].info_name", "the topic"),
        "infos_to_extract[0].info_name",
        "no spaces",
    ),
    (
        "action-without-english",
        instruct,
        _set("predefined_actions[0].displayed_data[0].language_code", "fr"),
        "predefined_actions[0].displayed_data",
        "must include an entry with language_code 'en'",
    ),
    (
        "action-by-task-pk",
        instruct,
        _set("predefined_actions[0].task_pk", 12),
        "predefined_actions[0].task_pk",
        "reference the task by its name_for_system",
    ),
    (
        "action-without-name",
        instruct,
        _set("predefined_actions[0].displayed_data[0].data.name", _DELETE),
        "predefined_actions[0].displayed_data[0].data.name",
        "is required",
    ),
    ("icon-is-a-word", instruct, _set("icon", "book"), "icon", "must be an emoji"),
    (
        "chat-flag-not-bool",
        instruct,
        _set("result_chat_enabled", "yes"),
        "result_chat_enabled",
        "must be true or false",
    ),
    (
        "unknown-task-type",
        instruct,
        _set("task_type", "chat"),
        "task_type",
        "must be one of: instruct, workflow, order",
    ),
    ("steps-on-instruct", instruct, _set("steps", []), "steps", "only allowed when task_type is workflow"),
    ("no-steps", workflow, _set("steps", []), "steps", "must be a non-empty list"),
    (
        "duplicate-step",
        workflow,
        _set("steps[1].name_for_system", "transcribe"),
        "steps[1].name_for_system",
        "duplicate name_for_system 'transcribe'",
    ),
    (
        "step-rank-out-of-order",
        workflow,
        _set("steps[0].rank", 2),
        "steps[0].rank",
        "must be 1: steps run in list order",
    ),
    (
        "both-input-spellings",
        workflow,
        _set(f"{DD0}.json_input", [_input("video_recording", "video")]),
        f"{DD0}.json_inputs",
        "use either json_input or json_inputs, not both",
    ),
    ("menu-escapes", order, _set("menu", "../menus/pizzeria.json"), "menu", "must not contain '..'"),
    ("menu-absolute", order, _set("menu", "/etc/menus/pizzeria.json"), "menu", "must be a relative path"),
    ("menu-not-json", order, _set("menu", "menus/pizzeria.yaml"), "menu", "to a .json file"),
    ("order-without-menu", order, _set("menu", _DELETE), "menu", "is required"),
]


@pytest.mark.parametrize(
    ("make", "mutate", "path", "rule"), [case[1:] for case in MALFORMED], ids=[case[0] for case in MALFORMED]
)
def test_malformed_spec_is_rejected(
    make: Callable[[], dict[str, Any]], mutate: Mutation, path: str, rule: str
) -> None:
    data = make()
    validate_spec(copy.deepcopy(data))  # the base spec is valid
    mutate(data)
    errors = errors_of(data)
    matching = [e for e in errors if e.path == path]
    assert matching, f"no error at {path}: {errors}"
    assert any(rule in e.rule for e in matching), f"{rule!r} not in {matching}"


def test_not_an_object() -> None:
    assert errors_of(["a", "list"]) == [SpecIssue("<root>", "must be a JSON object (a task spec), got list")]


def test_every_problem_is_reported_with_the_documented_format() -> None:
    data = instruct()
    data["platforms"] = ["tv"]
    data["task_displayed_data"][0]["json_input"][1]["possible_values"] = []
    data["infos_to_extract"][1]["info_name"] = "topic"
    with pytest.raises(SpecError) as info:
        validate_spec(data)
    assert [e.path for e in info.value.errors] == [
        "platforms[0]",
        "infos_to_extract[1].info_name",
        "task_displayed_data[0].json_input[1].possible_values",
    ]
    assert (
        "task_displayed_data[0].json_input[1].possible_values: must be a non-empty list"
        in str(info.value).splitlines()
    )


def test_single_issue_str() -> None:
    data = instruct()
    data["task_displayed_data"][0]["json_input"][1]["possible_values"] = []
    data["task_displayed_data"][1]["json_input"][1]["possible_values"] = []
    data["task_displayed_data"].pop()
    with pytest.raises(SpecError) as info:
        validate_spec(data)
    assert str(info.value) == "task_displayed_data[0].json_input[1].possible_values: must be a non-empty list"


def test_defaults_and_fallbacks() -> None:
    data = instruct()
    del data["task_type"], data["predefined_actions"], data["result_chat_enabled"]
    data["datetime"] = "2024-02-14T10:53:06.502Z"
    spec = validate_spec(data)
    assert isinstance(spec, InstructTaskSpec) and spec.result_chat_enabled and spec.predefined_actions == []
    assert displayed_data_for(spec, "fr").name_for_user == "Récap"
    assert displayed_data_for(spec, "fr-CA").name_for_user == "Récap"
    assert displayed_data_for(spec, "de").name_for_user == "Recap"
    assert displayed_data_for(spec, None).language_code == "en"
    order_spec = validate_spec(order())
    assert isinstance(order_spec, OrderTaskSpec) and order_spec.output_type == "order"
    assert order_spec.task_displayed_data[0].json_input == []
    assert order_spec.menu_path(TASKS_CONFIG) == (TASKS_CONFIG / "menus" / "pizzeria.json").resolve()


def test_unknown_top_level_key_warns_and_strict_rejects() -> None:
    data = instruct() | {"final_instructions": "typo", "exported_by": "backoffice"}
    spec = validate_spec(data)
    assert [(w.path, w.rule) for w in spec.warnings] == [
        ("final_instructions", "unknown field, ignored (did you mean 'final_instruction'?)"),
        ("exported_by", "unknown field, ignored"),
    ]
    assert [e.path for e in errors_of(data, strict=True)] == ["final_instructions", "exported_by"]


def test_translated_input_names_match_by_position_with_a_warning() -> None:
    data = instruct()
    data["task_displayed_data"][1]["json_input"][0]["input_name"] = "mes_notes"
    spec = validate_spec(data)
    assert [w.path for w in spec.warnings] == ["task_displayed_data[1].json_input[0].input_name"]


def test_same_names_in_another_order_are_matched_by_name() -> None:
    data = instruct()
    data["task_displayed_data"][1]["json_input"].reverse()
    assert validate_spec(data).warnings == []


# --- files -------------------------------------------------------------------------------------------------


def test_json_syntax_error_is_a_spec_error_with_position(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "name_for_system": "x",\n  "icon" "📝"\n}\n', encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec_file(path)
    [issue] = info.value.errors
    assert issue.path == "<file>"
    assert "line 3, column 10" in issue.rule and "Expecting ':' delimiter" in issue.rule
    assert info.value.source == str(path)


def test_duplicate_json_key_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"icon": "📝", "icon": "📖"}', encoding="utf-8")
    with pytest.raises(SpecError, match="duplicate key 'icon'"):
        load_spec_file(path)
    with pytest.raises(SpecError, match="cannot read"):
        load_spec_file(tmp_path / "absent.json")


def test_errors_from_a_file_name_the_file(tmp_path: Path) -> None:
    data = instruct()
    data["output_type"] = "tweet"
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec_file(path)
    assert info.value.source == str(path) and info.value.paths == ["output_type"]


def test_order_menu_missing_next_to_the_spec_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "order.json"
    path.write_text(json.dumps(order()), encoding="utf-8")
    assert [w.path for w in load_spec_file(path).warnings] == ["menu"]
    (tmp_path / "menus").mkdir()
    (tmp_path / "menus" / "pizzeria.json").write_text("{}", encoding="utf-8")
    assert load_spec_file(path).warnings == []


def test_check_references() -> None:
    a, b = validate_spec(instruct()), validate_spec(instruct())
    issues = check_references({"a.json": a, "b.json": b})
    assert SpecIssue("a.json: name_for_system", "duplicate name_for_system 'recap' (also in b.json)") in issues
    assert SpecIssue("b.json: name_for_system", "duplicate name_for_system 'recap' (also in a.json)") in issues
    assert SpecIssue("a.json: predefined_actions[0].task_name", "no task named 'follow_up'") in issues
    assert check_references({"a.json": a}, known_task_names={"follow_up"}) == []


def test_reference_and_duplicate_issues_by_spec() -> None:
    a, b = validate_spec(instruct()), validate_spec({**instruct(), "predefined_actions": []})
    assert reference_issues({"a.json": a, "b.json": b}) == {
        "a.json": [SpecIssue("predefined_actions[0].task_name", "no task named 'follow_up'")]
    }
    assert reference_issues({"a.json": a}, known_task_names={"follow_up"}) == {}
    assert duplicate_name_issues({"a.json": a, "b.json": b}) == {
        "a.json": [SpecIssue("name_for_system", "duplicate name_for_system 'recap' (also in b.json)")],
        "b.json": [SpecIssue("name_for_system", "duplicate name_for_system 'recap' (also in a.json)")],
    }
    c = validate_spec({**instruct(), "name_for_system": "other", "predefined_actions": []})
    assert duplicate_name_issues({"a.json": a, "c.json": c}) == {}


# --- JSON Schema -------------------------------------------------------------------------------------------


def test_exported_schema_is_up_to_date() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_json_schema(), (
        "docs/task_spec.schema.json is stale: "
        "run `python -m mojodex_core.task_spec > docs/task_spec.schema.json`"
    )
    out = subprocess.run(
        [sys.executable, "-m", "mojodex_core.task_spec"], capture_output=True, cwd=REPO, check=True
    )
    assert out.stdout.decode("utf-8") == render_json_schema()


def _schema_errors(data: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    return [e.message for e in validator.iter_errors(data)]


def test_schema_is_valid_and_accepts_our_specs() -> None:
    jsonschema.Draft202012Validator.check_schema(export_json_schema())
    for make in (instruct, workflow, order):
        assert _schema_errors(make()) == []
    for name in SAMPLES:
        assert _schema_errors(json.loads((TASKS_CONFIG / name).read_text(encoding="utf-8"))) == [], name


@needs_real
@pytest.mark.parametrize("name", _real_files())
def test_schema_accepts_real_specs(name: str) -> None:
    assert _schema_errors(json.loads((REAL_DIR / name).read_text(encoding="utf-8"))) == []


@needs_real
def test_schema_rejects_the_template() -> None:
    assert _schema_errors(json.loads((REAL_DIR / TEMPLATE).read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "mutate",
    [
        _set(f"{IN}[1].possible_values", []),
        _set(f"{IN}[0].possible_values", SIZES),
        _set("name_for_system", "<NAME>"),
        _set("platforms", ["tv"]),
        _set("menu", "menus/x.json"),
    ],
    ids=["empty-dropdown", "values-on-text-area", "placeholder", "platform", "foreign-key"],
)
def test_schema_enforces_field_rules(mutate: Mutation) -> None:
    data = instruct()
    mutate(data)
    assert _schema_errors(data)
