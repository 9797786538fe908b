"""What a tool is, and what it receives when it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker


class ToolError(Exception):
    """A tool could not do its job; the message is told to the model as the result."""


@dataclass(frozen=True)
class ToolContext:
    """Who runs the tool, for which execution, with the admin's configuration from the task spec."""

    user_id: str
    user_task_execution_pk: int
    session_factory: sessionmaker[DbSession]
    config: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 10.0


class Tool:
    """Subclass, set ``name``, ``description`` and ``query_schema``, implement ``run``."""

    name: ClassVar[str] = ""
    # Default description for the model; a task spec's usage_description is added to it.
    description: ClassVar[str] = ""
    # JSON schema of the query (validated with jsonschema before run).
    query_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        raise NotImplementedError
