"""Rules that span several entries (uniqueness, languages, inputs across languages, steps order).

They run on the raw JSON data, next to the pydantic models and whatever those find, so one run
reports every problem. Each check looks only at values of the right shape and leaves the rest to
the models, which report wrong types and missing fields.
"""

from __future__ import annotations

from typing import Any

from .errors import SpecIssue, did_you_mean
from .fields import INPUT_TYPES
from .models import MODELS

_Issues = list[SpecIssue]


def _dicts(value: Any) -> list[tuple[int, dict]]:
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def _duplicates(items: list[tuple[int, dict]], key: str, base: str, errors: _Issues) -> None:
    seen: dict[str, int] = {}
    for i, item in items:
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            continue
        if value in seen:
            errors.append(
                SpecIssue(f"{base}[{i}].{key}", f"duplicate {key} '{value}' (first at {base}[{seen[value]}])")
            )
        else:
            seen[value] = i


def _languages(value: Any, base: str, errors: _Issues) -> dict[str, int]:
    """Unique language codes, an 'en' entry; returns code -> index."""
    items = _dicts(value)
    _duplicates(items, "language_code", base, errors)
    codes: dict[str, int] = {}
    for i, item in items:
        code = item.get("language_code")
        if isinstance(code, str):
            codes.setdefault(code, i)
    if items and "en" not in codes:
        errors.append(SpecIssue(base, "must include an entry with language_code 'en'"))
    return codes


def _inputs_key(entry: dict, base: str, errors: _Issues) -> str:
    if "json_input" in entry and "json_inputs" in entry:
        errors.append(SpecIssue(f"{base}.json_inputs", "use either json_input or json_inputs, not both"))
    return "json_inputs" if "json_inputs" in entry and "json_input" not in entry else "json_input"


def _dropdown_values(item: dict) -> set[str] | None:
    if item.get("type") != "drop_down_list" or not isinstance(item.get("possible_values"), list):
        return None
    return {
        v["value"] for v in item["possible_values"] if isinstance(v, dict) and isinstance(v.get("value"), str)
    }


def _compare_inputs(
    en: list[tuple[int, dict]],
    other: list[tuple[int, dict]],
    en_len: int,
    other_len: int,
    base: str,
    errors: _Issues,
    warnings: _Issues,
) -> None:
    """Each language offers the same inputs as 'en': same count, same types, same drop-down values.

    Inputs are matched by input_name when both entries use the same names, by position otherwise:
    real Mojodex specs translate input names (follow_up_email.json), so different names only warn.
    """
    en_names = [item.get("input_name") for _, item in en]
    names = [item.get("input_name") for _, item in other]
    all_text = all(isinstance(name, str) for name in names + en_names)
    if all_text and sorted(names) == sorted(en_names) and len(set(names)) == len(names):
        by_name = {item.get("input_name"): item for _, item in en}
        pairs = [(k, item, by_name[item.get("input_name")]) for k, item in other]
    elif other_len != en_len:
        errors.append(
            SpecIssue(
                base, f"must have the same number of inputs as the 'en' entry ({en_len}), got {other_len}"
            )
        )
        return
    else:
        en_at = dict(en)
        pairs = [(k, item, en_at[k]) for k, item in other if k in en_at]
        for k, item, en_item in pairs:
            if item.get("input_name") != en_item.get("input_name"):
                warnings.append(
                    SpecIssue(
                        f"{base}[{k}].input_name",
                        f"differs from the 'en' input '{en_item.get('input_name')}' at the same position; "
                        "inputs of different languages are matched by position",
                    )
                )
    for k, item, en_item in pairs:
        kind, en_kind = item.get("type"), en_item.get("type")
        if kind in INPUT_TYPES and en_kind in INPUT_TYPES and kind != en_kind:
            errors.append(
                SpecIssue(
                    f"{base}[{k}].type",
                    f"must be '{en_kind}' like the matching 'en' input '{en_item.get('input_name')}'",
                )
            )
            continue
        values, en_values = _dropdown_values(item), _dropdown_values(en_item)
        if values and en_values and values != en_values:  # an empty list is reported on its own
            errors.append(
                SpecIssue(
                    f"{base}[{k}].possible_values",
                    f"must offer the same values as the matching 'en' input '{en_item.get('input_name')}' "
                    f"({', '.join(sorted(en_values))}); only displayed_text is translated",
                )
            )


def _displayed_data(data: dict, errors: _Issues, warnings: _Issues) -> None:
    base = "task_displayed_data"
    codes = _languages(data.get(base), base, errors)
    entries = dict(_dicts(data.get(base)))
    inputs: dict[int, tuple[str, list[tuple[int, dict]], int]] = {}
    for i, entry in entries.items():
        key = _inputs_key(entry, f"{base}[{i}]", errors)
        raw = entry.get(key)
        if not isinstance(raw, list):
            continue
        items = _dicts(raw)
        path = f"{base}[{i}].{key}"
        _duplicates(items, "input_name", path, errors)
        for k, item in items:
            _duplicates(_dicts(item.get("possible_values")), "value", f"{path}[{k}].possible_values", errors)
        inputs[i] = (path, items, len(raw))
    en_index = codes.get("en")
    if en_index is None or en_index not in inputs:
        return
    _, en_items, en_len = inputs[en_index]
    for i, (path, items, length) in inputs.items():
        if i != en_index and entries[i].get("language_code") != "en":
            _compare_inputs(en_items, items, en_len, length, path, errors, warnings)


def _steps(data: dict, errors: _Issues, warnings: _Issues) -> None:
    steps = _dicts(data.get("steps"))
    _duplicates(steps, "name_for_system", "steps", errors)
    task_languages = {
        code
        for _, d in _dicts(data.get("task_displayed_data"))
        if isinstance(code := d.get("language_code"), str)
    }
    for i, step in steps:
        rank = step.get("rank")
        if isinstance(rank, int) and not isinstance(rank, bool) and rank != i + 1:
            errors.append(SpecIssue(f"steps[{i}].rank", f"must be {i + 1}: steps run in list order"))
        codes = _languages(step.get("step_displayed_data"), f"steps[{i}].step_displayed_data", errors)
        if codes:
            for code in sorted(task_languages - set(codes)):
                warnings.append(
                    SpecIssue(
                        f"steps[{i}].step_displayed_data",
                        f"has no '{code}' entry; the 'en' text is shown instead",
                    )
                )


def consistency_issues(data: dict, task_type: str) -> tuple[_Issues, _Issues]:
    """Cross-entry rules on raw spec data; returns (errors, warnings)."""
    errors: _Issues = []
    warnings: _Issues = []
    own = set(MODELS[task_type].model_fields)
    for key in data:
        if key in own:
            continue
        owners = [kind for kind, model in MODELS.items() if key in model.model_fields]
        if owners:
            errors.append(
                SpecIssue(
                    key,
                    f"is only allowed when task_type is {' or '.join(owners)} (this spec is '{task_type}')",
                )
            )
        else:
            warnings.append(SpecIssue(key, "unknown field, ignored" + did_you_mean(key, sorted(own))))
    platforms = data.get("platforms")
    if isinstance(platforms, list):
        seen: set[str] = set()
        for i, platform in enumerate(platforms):
            if isinstance(platform, str):
                if platform in seen:
                    errors.append(SpecIssue(f"platforms[{i}]", f"duplicate platform '{platform}'"))
                seen.add(platform)
    _displayed_data(data, errors, warnings)
    _duplicates(_dicts(data.get("infos_to_extract")), "info_name", "infos_to_extract", errors)
    actions = _dicts(data.get("predefined_actions"))
    _duplicates(actions, "task_name", "predefined_actions", errors)
    for i, action in actions:
        _languages(action.get("displayed_data"), f"predefined_actions[{i}].displayed_data", errors)
    if task_type == "workflow":
        _steps(data, errors, warnings)
    return errors, warnings
