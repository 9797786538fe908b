"""Issues, the error that carries them, and the translation of pydantic errors into our wording."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

ROOT_PATH = "<root>"
FILE_PATH = "<file>"


@dataclass(frozen=True)
class SpecIssue:
    """One problem (or warning) in a spec: where it is and which rule it breaks."""

    path: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}"


class SpecError(Exception):
    """A spec breaks one or more rules; ``errors`` lists every problem found, not only the first."""

    def __init__(self, errors: Sequence[SpecIssue], source: str | None = None) -> None:
        self.errors: list[SpecIssue] = list(errors)
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(issue) for issue in self.errors)

    @property
    def paths(self) -> list[str]:
        return [issue.path for issue in self.errors]


def format_path(loc: Iterable[Any]) -> str:
    """Dotted/bracket form of a pydantic loc.

    ``('task_displayed_data', 0, 'json_input', 1, 'input_name')`` becomes
    ``task_displayed_data[0].json_input[1].input_name``.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or ROOT_PATH


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


_TYPE_NAMES = {
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "missing": "is required",
    "string_too_short": "must not be empty",
}


def pydantic_issue(
    err: dict[str, Any], tags: frozenset[str], field_names: dict[str, Sequence[str]]
) -> SpecIssue | None:
    """Turn one entry of ``ValidationError.errors()`` into a SpecIssue with our path and wording.

    ``tags`` are the union tags pydantic puts first in ``loc``; ``field_names`` maps a container
    name (the list or object an unknown key sits in) to the keys allowed there, for suggestions.
    Returns None for an error that the consistency checks already report in better words.
    """
    loc = list(err.get("loc", ()))
    if loc and loc[0] in tags:
        loc = loc[1:]
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    if kind == "spec_rule":
        rule = err["msg"]
    elif kind in _TYPE_NAMES:
        rule = _TYPE_NAMES[kind]
    elif kind == "too_short":
        rule = (
            "must be a non-empty list"
            if ctx.get("min_length") == 1
            else f"must have at least {ctx.get('min_length')} items"
        )
    elif kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        rule = "must be one of: " + expected.replace("'", "").replace(" or ", ", ")
    elif kind == "extra_forbidden":
        key = str(loc[-1]) if loc else ""
        container = next((p for p in reversed(loc[:-1]) if isinstance(p, str)), "")
        allowed = field_names.get(container, ())
        if key == "json_inputs" and container == "task_displayed_data":
            return None  # json_input and json_inputs both given: reported by the consistency checks
        if key == "task_pk":
            rule = "is not supported: reference the task by its name_for_system in 'task_name'"
        else:
            rule = "unknown field" + did_you_mean(key, allowed)
            if allowed:
                rule += "; allowed fields: " + ", ".join(allowed)
    else:
        rule = err.get("msg", kind)
        rule = rule[:1].lower() + rule[1:]
    return SpecIssue(format_path(loc), rule)
