"""What an instruct prompt takes from the task row alone, read once per version of the task.

A turn's prompt needs the task's texts, its displayed data (the form's inputs in the session's
language, the name a follow-up task shows) and its tools as the prompt describes them. None of
that depends on the user or the execution, so it is read once per task and kept, keyed by the
task's ``updated_at``: every turn reads that column anyway (in its one joined query), and any
change to the task through the admin API (``store_spec``) updates the row, so an upload applies
at the next turn. Tools are looked up in the registry at each use (a tool registered after the
task was cached is described as soon as it exists).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Task, TaskDisplayedData, TextType
from mojodex_core.execution.tool_loop import prompt_tools
from mojodex_core.task_view import displayed_data_for
from mojodex_core.tools import get_tool

_task = Task.__table__
_displayed = TaskDisplayedData.__table__
_text_type = TextType.__table__

_TASK = (
    select(
        _task.c.task_pk, _task.c.updated_at, _task.c.name_for_system, _task.c.type, _task.c.definition_for_system,
        _task.c.final_instruction, _task.c.output_format_instruction_title, _task.c.output_format_instruction_draft,
        _task.c.infos_to_extract, _task.c.output_text_type_fk, _task.c.spec,
        _text_type.c.name.label("output_text_type"),
    )
    .select_from(_task)
    .outerjoin(_text_type, _text_type.c.text_type_pk == _task.c.output_text_type_fk)
    .where(_task.c.task_pk == bindparam("b_pk"))
)
# Ordered as the ORM relationship Task.displayed_data is: the fallback is the first language.
_DISPLAYED = (
    select(_displayed.c.language_code, _displayed.c.name_for_user, _displayed.c.json_input)
    .where(_displayed.c.task_fk == bindparam("b_pk"))
    .order_by(_displayed.c.language_code)
)
MAX_CACHED_TASKS = 10_000


@dataclass(frozen=True)
class DisplayedData:
    language_code: str
    name_for_user: str
    json_input: list[Any]


@dataclass(frozen=True)
class TaskPrompt:
    """The task's part of an instruct prompt. The template reads the text fields as ``task.*``."""

    task_pk: int
    updated_at: datetime | None
    name_for_system: str
    type: str
    definition_for_system: str
    final_instruction: str | None
    output_format_instruction_title: str | None
    output_format_instruction_draft: str | None
    infos_to_extract: list[Any]
    output_text_type_fk: int | None
    output_text_type: str | None
    # The spec's tools ({name, usage_description, requires_approval, config}); instruct tasks only.
    tools: tuple[dict[str, Any], ...]
    displayed_data: tuple[DisplayedData, ...]
    # (the registry's tool objects, prompt_tools' description of them), refreshed when a tool changes.
    _described: list = field(default_factory=list, compare=False, repr=False)

    def displayed_for(self, language: str | None) -> DisplayedData | None:
        """The language, its base language, English, else the first (task_view.displayed_data_for)."""
        return displayed_data_for(self, language)  # type: ignore[arg-type]

    def prompt_tools(self) -> list[dict[str, Any]]:
        """tool_loop.prompt_tools of the task's spec, described again only when the registry changed."""
        if not self.tools:
            return []
        current = tuple(get_tool(spec["name"]) for spec in self.tools)
        cached = self._described[0] if self._described else None
        if cached is None or any(a is not b for a, b in zip(cached[0], current, strict=True)):
            cached = (current, prompt_tools({"tools": list(self.tools)}))
            self._described[:] = [cached]
        return cached[1]


def _load(db: DbSession | Connection, task_pk: int) -> TaskPrompt | None:
    row = db.execute(_TASK, {"b_pk": task_pk}).first()
    if row is None:
        return None
    displayed = tuple(
        DisplayedData(d.language_code, d.name_for_user, d.json_input)
        for d in db.execute(_DISPLAYED, {"b_pk": task_pk})
    )
    return TaskPrompt(
        task_pk=row.task_pk,
        updated_at=row.updated_at,
        name_for_system=row.name_for_system,
        type=row.type,
        definition_for_system=row.definition_for_system,
        final_instruction=row.final_instruction,
        output_format_instruction_title=row.output_format_instruction_title,
        output_format_instruction_draft=row.output_format_instruction_draft,
        infos_to_extract=row.infos_to_extract,
        output_text_type_fk=row.output_text_type_fk,
        output_text_type=row.output_text_type,
        tools=tuple((row.spec or {}).get("tools") or []) if row.type == "instruct" else (),
        displayed_data=displayed,
    )


class TaskPrompts:
    """TaskPrompt per task, kept while the task's ``updated_at`` is the one it was read with."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_pk: dict[int, TaskPrompt] = {}

    def get(self, db: DbSession | Connection, task_pk: int, updated_at: datetime | None) -> TaskPrompt:
        cached = self._by_pk.get(task_pk)
        if cached is not None and updated_at is not None and cached.updated_at == updated_at:
            return cached
        loaded = _load(db, task_pk)
        if loaded is None:
            raise LookupError(f"task {task_pk} does not exist")
        with self._lock:
            if len(self._by_pk) >= MAX_CACHED_TASKS:
                self._by_pk.clear()  # a cache, not a registry: it refills one read per task
            self._by_pk[task_pk] = loaded
        return loaded
