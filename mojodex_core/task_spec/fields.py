"""Constrained string types shared by the spec models.

Every text field goes through one check that reports a single, clear rule: empty first, then
"is a template placeholder", then the field's own format. The same rules are written into the
exported JSON Schema, so an editor using docs/task_spec.schema.json flags them too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

# A value that is a whole template marker: "<USER TASK NAME>", "{{task_name}}", "{TASK NAME}",
# "[TASK NAME]", "TASK_NAME" (upper-case words joined by underscores), TODO/TBD/FIXME/XXX/CHANGEME.
# Upper-case sentences with spaces ("EMAIL SUBJECT") are legitimate Mojodex output formats.
PLACEHOLDER_PATTERN = (
    r"^\s*(<[^<>]*>|\{\{[^{}]*\}\}|\{[A-Z0-9_ ]+\}|\[[A-Z0-9_ ]+\]"
    r"|[A-Z][A-Z0-9]*(_[A-Z0-9]+)+|TODO|TBD|FIXME|XXX+|CHANGEME|PLACEHOLDER)\s*$"
)
_PLACEHOLDER_RE = re.compile(PLACEHOLDER_PATTERN)

NAME_PATTERN = r"^[a-z0-9][a-z0-9_\-]*$"
KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_\-]*$"
LANGUAGE_PATTERN = r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$"

PLATFORMS = ("webapp", "mobile")
INPUT_TYPES = ("text_area", "drop_down_list", "image", "multiple_images", "audio_file", "video")
# Mojodex creates text types on the fly (md_text_type); we keep a closed, documented list so a
# typo ("emial") is caught. Add a value here (and regenerate the schema) to allow a new one.
OUTPUT_TYPES = (
    "document",
    "email",
    "meeting_minutes",
    "linkedin_post",
    "social_media_post",
    "message",
    "summary",
    "poem",
    "order",
)
ICON_MAX_CHARS = 16
# Column sizes (mojodex_core/db/models.py): task names, displayed names and menu references are
# VARCHAR(255), language codes VARCHAR(8), order locations VARCHAR(128), lanes VARCHAR(32).
NAME_MAX_CHARS = 255
SHORT_TEXT_MAX_CHARS = 255
KEY_MAX_CHARS = 128
LANE_MAX_CHARS = 32
LANGUAGE_MAX_CHARS = 8
MENU_MAX_CHARS = 255


def is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER_RE.match(value))


def _rule(message: str, **ctx: Any) -> PydanticCustomError:
    return PydanticCustomError("spec_rule", message, ctx or None)


def _filled(value: str) -> str:
    if "\x00" in value:
        raise _rule("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _rule("must not contain unpaired surrogates") from None
    if not value.strip():
        raise _rule("must not be empty")
    if is_placeholder(value):
        raise _rule("must be filled in: '{value}' is a template placeholder", value=value.strip())
    return value


def at_most(max_chars: int) -> AfterValidator:
    """A length bound reported like the other rules (it runs after the field's own checks)."""

    def check(value: str) -> str:
        if len(value) > max_chars:
            raise _rule(f"must be at most {max_chars} characters (got {len(value)})")
        return value

    return AfterValidator(check)


def _matching(pattern: str, message: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        _filled(value)
        if not compiled.match(value):
            raise _rule(message, value=value)
        return value

    return check


def _one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    def check(value: str) -> str:
        _filled(value)
        if value not in choices:
            raise _rule("must be one of: " + ", ".join(choices) + " (got '{value}')", value=value)
        return value

    return check


def _icon(value: str) -> str:
    _filled(value)
    if len(value) > ICON_MAX_CHARS or re.search(r"[A-Za-z\s]", value):
        raise _rule(f"must be an emoji (no letters or spaces, at most {ICON_MAX_CHARS} characters)")
    return value


MENU_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_\-]*$"
_MENU_ID_RE = re.compile(MENU_ID_PATTERN)


def is_menu_id(value: str) -> bool:
    """A menu reference without '/' or '.': the id of a menu uploaded through PUT /menu."""
    return bool(_MENU_ID_RE.match(value))


def _menu_path(value: str) -> str:
    _filled(value)
    if is_menu_id(value):
        return value
    parts = value.split("/")
    if value.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", value) or "\\" in value:
        raise _rule("must be a relative path (relative to the tasks_config directory)")
    if ".." in parts:
        raise _rule("must not contain '..'")
    if not value.endswith(".json") or "" in parts:
        raise _rule("must be a relative path to a .json file, like 'menus/pizzeria.json', or a menu id")
    return value


def _webhook_url(value: str) -> str:
    _filled(value)
    if not re.match(r"^https?://[^/\s]+(/\S*)?$", value):
        raise _rule("must be an http(s) URL, like 'https://pos.example.com/tickets'")
    return value


_NOT_PLACEHOLDER = {"not": {"pattern": PLACEHOLDER_PATTERN}}

# Shared string formats, referenced from the exported schema's $defs (see export_json_schema).
SCHEMA_DEFS: dict[str, dict[str, Any]] = {
    "text": {
        "description": "Non-blank text that is not a template placeholder such as '<NAME>' or 'TASK_NAME'.",
        "type": "string",
        "pattern": r"\S",
        **_NOT_PLACEHOLDER,
    },
    "short_text": {
        "description": "Non-blank text that is not a template placeholder, at most 255 characters.",
        "type": "string",
        "pattern": r"\S",
        "maxLength": SHORT_TEXT_MAX_CHARS,
        **_NOT_PLACEHOLDER,
    },
    "name": {
        "description": "Lower-case identifier: letters, digits, '_' and '-'.",
        "type": "string",
        "pattern": NAME_PATTERN,
        "maxLength": NAME_MAX_CHARS,
        **_NOT_PLACEHOLDER,
    },
    "key": {
        "description": "A single word of letters, digits, '_' or '-'.",
        "type": "string",
        "pattern": KEY_PATTERN,
        "maxLength": KEY_MAX_CHARS,
        **_NOT_PLACEHOLDER,
    },
    "language_code": {
        "description": "Language code like 'en' or 'fr'.",
        "type": "string",
        "pattern": LANGUAGE_PATTERN,
        "maxLength": LANGUAGE_MAX_CHARS,
    },
}


FORMAT_MARKER = "x-task-spec-format"


def _ref(name: str) -> WithJsonSchema:
    """The format's schema, marked so export_json_schema can swap it for a $ref to $defs/<name>."""
    inline = {k: v for k, v in SCHEMA_DEFS[name].items() if k != "description"}
    return WithJsonSchema({**inline, FORMAT_MARKER: name})


Text = Annotated[str, AfterValidator(_filled), _ref("text")]
ShortText = Annotated[str, AfterValidator(_filled), at_most(SHORT_TEXT_MAX_CHARS), _ref("short_text")]
Name = Annotated[
    str,
    AfterValidator(
        _matching(
            NAME_PATTERN,
            "must match ^[a-z0-9][a-z0-9_\\-]*$ (lower-case letters, digits, '_' and '-'), got '{value}'",
        )
    ),
    at_most(NAME_MAX_CHARS),
    _ref("name"),
]
Key = Annotated[
    str,
    AfterValidator(
        _matching(
            KEY_PATTERN, "must be a single word of letters, digits, '_' or '-' (no spaces), got '{value}'"
        )
    ),
    at_most(KEY_MAX_CHARS),
    _ref("key"),
]
LanguageCode = Annotated[
    str,
    AfterValidator(_matching(LANGUAGE_PATTERN, "must be a language code like 'en' or 'fr', got '{value}'")),
    at_most(LANGUAGE_MAX_CHARS),
    _ref("language_code"),
]
Platform = Annotated[str, AfterValidator(_one_of(PLATFORMS)), WithJsonSchema({"enum": list(PLATFORMS)})]
InputType = Annotated[str, AfterValidator(_one_of(INPUT_TYPES)), WithJsonSchema({"enum": list(INPUT_TYPES)})]
OutputType = Annotated[
    str, AfterValidator(_one_of(OUTPUT_TYPES)), WithJsonSchema({"enum": list(OUTPUT_TYPES)})
]
Icon = Annotated[
    str,
    AfterValidator(_icon),
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": ICON_MAX_CHARS, "pattern": r"^[^A-Za-z\s]+$"}
    ),
]
MenuPath = Annotated[
    str,
    AfterValidator(_menu_path),
    at_most(MENU_MAX_CHARS),
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": MENU_MAX_CHARS,
            "pattern": r"^(?![/~])(?![A-Za-z]:)(?!.*\\)(?!(.*/)?\.\.(/|$))(?!.*//)[^\\]+\.json$"
            r"|^[A-Za-z0-9][A-Za-z0-9_\-]*$",
        }
    ),
]
WebhookUrl = Annotated[
    str,
    AfterValidator(_webhook_url),
    WithJsonSchema({"type": "string", "pattern": r"^https?://[^/\s]+(/\S*)?$"}),
]
