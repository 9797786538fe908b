"""Structured output helpers: request options per backend mode, and lenient parsing."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_UNSUPPORTED_HINTS = ("response_format", "json_schema")


class InvalidStructuredOutput(ValueError):
    """The model output is not JSON, or does not validate; ``str()`` is fed back to the model."""


def schema_name(model: type[BaseModel]) -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", model.__name__)[:64]
    return name or "response"


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def request_options(mode: str, model: type[BaseModel]) -> tuple[dict[str, Any], str | None]:
    """Keyword arguments for ``chat.completions.create`` and an optional extra system message.

    - ``json_schema``: OpenAI structured outputs (``response_format`` json_schema, not strict).
    - ``json_object``: JSON mode plus the schema (in ``response_format`` and in a system message).
    - ``grammar``: llama-cpp-python server style, ``response_format`` with a schema sent
      through ``extra_body`` (the server turns the schema into a grammar).
    """
    schema = json_schema(model)
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": schema_name(model), "schema": schema, "strict": False},
            }
        }, None
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}, schema_instruction(schema)
    if mode == "grammar":
        # Length bounds become one grammar rule per repetition in llama.cpp's schema converter: a
        # 255-character title gave "failed to parse grammar" and then a crashed server. The server
        # gets the schema without them; pydantic still checks them (a violation gets the retry).
        relaxed = without_length_bounds(schema)
        return {"extra_body": {"response_format": {"type": "json_object", "schema": relaxed}}}, (
            schema_instruction(schema)
        )
    raise ValueError(f"unknown structured mode {mode!r}")


_LENGTH_BOUNDS = frozenset({"maxLength", "minLength", "maxItems", "minItems"})


def without_length_bounds(schema: Any) -> Any:
    """A copy of a JSON schema with its string and array length bounds removed."""
    if isinstance(schema, dict):
        return {k: without_length_bounds(v) for k, v in schema.items() if k not in _LENGTH_BOUNDS}
    if isinstance(schema, list):
        return [without_length_bounds(v) for v in schema]
    return schema


def schema_instruction(schema: dict[str, Any]) -> str:
    return (
        "Answer with a single JSON object only (no prose, no code fences) "
        "that conforms to this JSON Schema:\n" + json.dumps(schema, separators=(",", ":"))
    )


def with_system_message(messages: list[dict[str, Any]], content: str | None) -> list[dict[str, Any]]:
    """Insert ``content`` as a system message after the leading system messages."""
    if not content:
        return list(messages)
    index = 0
    while index < len(messages) and messages[index].get("role") == "system":
        index += 1
    return [*messages[:index], {"role": "system", "content": content}, *messages[index:]]


def mentions_unsupported_format(detail: str | None) -> bool:
    lowered = (detail or "").lower()
    return any(hint in lowered for hint in _UNSUPPORTED_HINTS)


def _candidates(text: str) -> list[str]:
    stripped = text.strip()
    out = [stripped]
    fenced = _FENCE.match(stripped)
    if fenced:
        out.append(fenced.group(1).strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        out.append(stripped[start : end + 1])
    return out


def parse(text: str, model: type[T]) -> T:
    """Parse model output into ``model``; tolerates code fences and prose around one object."""
    if not text or not text.strip():
        raise InvalidStructuredOutput("the answer was empty; a JSON object was expected")
    decoded: Any = None
    decode_error: str | None = None
    for candidate in _candidates(text):
        try:
            decoded = json.loads(candidate)
            break
        except ValueError as exc:
            decode_error = decode_error or str(exc)
    else:
        raise InvalidStructuredOutput(f"the answer is not valid JSON ({decode_error})")
    try:
        return model.model_validate(decoded)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:10]
        )
        raise InvalidStructuredOutput(f"the JSON does not match the schema ({problems})") from None


def retry_message(error: InvalidStructuredOutput) -> dict[str, str]:
    return {
        "role": "user",
        "content": (
            f"Your previous answer could not be used: {error}. "
            "Reply again with only a JSON object that matches the schema."
        ),
    }
