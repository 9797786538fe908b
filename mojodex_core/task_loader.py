"""Stores validated task specs: create, update or upsert by name_for_system.

Validation happens before any write, so a rejected spec stores nothing; the caller owns
the transaction (one per file for the CLI, one per request for REST).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Callable, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import (
    Platform,
    Task,
    TaskDisplayedData,
    TaskPlatform,
    TaskPredefinedAction,
    TextType,
    UserTask,
    UserTaskExecution,
)
from mojodex_core.task_spec import (
    OrderTaskSpec,
    SpecError,
    SpecIssue,
    TaskSpec,
    WorkflowTaskSpec,
    duplicate_name_issues,
    reference_issues,
    validate_spec,
)

Mode = Literal["create", "update", "upsert"]


class TaskConflict(Exception):
    """create of an existing task, or update of a missing one."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def check_menu(
    spec: OrderTaskSpec, tasks_config_dir: Path, menu_exists: Callable[[str], bool] | None = None
) -> None:
    """An order task must name a readable, valid menu: checked before anything is stored.

    A menu id names a menu uploaded with PUT /menu: ``menu_exists`` says whether it is stored
    (without it, e.g. loading files from the CLI, the id is accepted: menus may come later).
    """
    from mojodex_core.order.menu import MenuError, load_menu

    if spec.menu_is_id:
        if menu_exists is not None and not menu_exists(spec.menu):
            raise SpecError([SpecIssue("menu", f"no menu with id {spec.menu!r} (upload it with PUT /menu first)")])
        return
    try:
        path = spec.menu_path(tasks_config_dir)
        found = path.is_file()
    except (OSError, ValueError):  # a name the file system refuses (too long, NUL): no such file
        found = False
    if not found:
        raise SpecError([SpecIssue("menu", f"menu file not found: {spec.menu} (looked in {tasks_config_dir})")])
    try:
        load_menu(path)
    except (MenuError, ValueError) as exc:
        raise SpecError([SpecIssue("menu", f"invalid menu {spec.menu}: {exc}")]) from exc


def validate_for_storage(
    data: Any,
    tasks_config_dir: Path,
    menu_exists: Callable[[str], bool] | None = None,
    stored_task_names: Callable[[set[str]], Iterable[str]] | None = None,
) -> TaskSpec:
    """The spec, checked as it will be stored; raises SpecError listing what is wrong.

    ``stored_task_names(names)`` says which of ``names`` are tasks already stored: every predefined
    action must name one of them or the spec itself. Without it (loading a set of files, which
    checks the set as a whole with ``check_set``) the names are not checked here.
    """
    spec = validate_spec(data)
    if isinstance(spec, OrderTaskSpec):
        check_menu(spec, tasks_config_dir, menu_exists)
    if isinstance(spec, WorkflowTaskSpec):
        check_steps(spec)
    if stored_task_names is not None:
        issues = reference_issues({"": spec}, stored_task_names(referenced_task_names([spec])))
        if issues:
            raise SpecError(issues[""])
    return spec


def referenced_task_names(specs: Iterable[TaskSpec]) -> set[str]:
    """The tasks the specs' predefined actions name."""
    return {action.task_name for spec in specs for action in spec.predefined_actions}


def existing_task_names(db: DbSession, names: Iterable[str]) -> set[str]:
    """Which of ``names`` are stored tasks."""
    wanted = sorted(set(names))
    if not wanted:
        return set()
    return set(db.scalars(select(Task.name_for_system).where(Task.name_for_system.in_(wanted))))


def check_set(db: DbSession, specs: Mapping[str, TaskSpec]) -> dict[str, list[SpecIssue]]:
    """Rules across a set of specs loaded together (keyed by file): no two specs share a
    name_for_system (all of them are rejected: which one is meant depends on the order the files
    came in), and each predefined action names a task of the set or one already stored. The issues
    by file.

    A rejected spec will not be stored, so a spec naming its task is rejected in turn (unless that
    task is stored already): the check is repeated on what is left until it rejects nothing new.
    """
    stored = existing_task_names(db, referenced_task_names(specs.values()))
    issues = duplicate_name_issues(specs)
    left = {label: spec for label, spec in specs.items() if label not in issues}
    while found := reference_issues(left, stored):
        issues.update(found)
        for label in found:
            del left[label]
    return issues


def check_steps(spec: WorkflowTaskSpec) -> None:
    """Every step of a workflow must be in the steps library: checked before anything is stored."""
    from mojodex_core.workflow.steps import step_names

    known = step_names()
    issues = [
        SpecIssue(f"steps[{i}].name_for_system", f"no step {step.name_for_system!r} in the steps library "
                                                 f"(known: {', '.join(known)})")
        for i, step in enumerate(spec.steps) if step.name_for_system not in known
    ]
    if issues:
        raise SpecError(issues)


def _get_or_create(db: DbSession, model: type, **key: Any) -> Any:
    found = db.scalar(select(model).filter_by(**key))
    if found is None:
        found = model(**key)
        db.add(found)
        db.flush()
    return found


def store_spec(db: DbSession, spec: TaskSpec, mode: Mode = "upsert") -> tuple[Task, bool]:
    """Writes the spec; returns (task, created)."""
    task = db.scalar(select(Task).where(Task.name_for_system == spec.name_for_system))
    if mode == "create" and task is not None:
        raise TaskConflict(f"task {spec.name_for_system!r} already exists (use POST /task to update it)", 409)
    if mode == "update" and task is None:
        raise TaskConflict(f"task {spec.name_for_system!r} not found (use PUT /task to create it)", 404)
    created = task is None
    if created:
        task = Task(name_for_system=spec.name_for_system)
        db.add(task)
    elif task.type != spec.task_type and _has_executions(db, task):
        # Its executions were started as one type (an order's conversation, a workflow's steps): running them
        # as another would mix both. A new type is a new task.
        raise TaskConflict(f"task {spec.name_for_system!r} is a {task.type} task with executions: it cannot become "
                           f"a {spec.task_type} task (give the new spec another name_for_system)", 409)

    task.type = spec.task_type
    task.definition_for_system = spec.definition_for_system
    task.final_instruction = getattr(spec, "final_instruction", None)
    task.output_format_instruction_title = getattr(spec, "output_format_instruction_title", None)
    task.output_format_instruction_draft = getattr(spec, "output_format_instruction_draft", None)
    task.icon = spec.icon
    task.infos_to_extract = [info.model_dump(mode="json") for info in getattr(spec, "infos_to_extract", [])]
    task.result_chat_enabled = spec.result_chat_enabled
    task.menu = getattr(spec, "menu", None)
    task.spec = spec.model_dump(mode="json", exclude_none=True)
    task.output_text_type = _get_or_create(db, TextType, name=spec.output_type)
    db.flush()

    _sync_displayed_data(db, task, spec)
    _sync_platforms(db, task, spec.platforms)
    _sync_predefined_actions(db, task, spec)
    db.flush()
    return task, created


def _has_executions(db: DbSession, task: Task) -> bool:
    """Whether the task has executions that are not deleted (a deleted one is never listed, opened or run)."""
    found = (select(UserTaskExecution.user_task_execution_pk)
             .join(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
             .where(UserTask.task_fk == task.task_pk, UserTaskExecution.status != "deleted").limit(1))
    return db.scalar(found) is not None


def _sync_displayed_data(db: DbSession, task: Task, spec: TaskSpec) -> None:
    # Updated in place by language: a delete-then-insert would trip the unique (task, language).
    existing = {d.language_code: d for d in task.displayed_data}
    wanted = {d.language_code: d for d in spec.task_displayed_data}
    for language, data in wanted.items():
        row = existing.get(language)
        if row is None:
            row = TaskDisplayedData(language_code=language)
            task.displayed_data.append(row)
        row.name_for_user = data.name_for_user
        row.definition_for_user = data.definition_for_user
        row.json_input = [i.model_dump(mode="json", exclude_none=True) for i in data.json_input]
    for language, row in existing.items():
        if language not in wanted:
            task.displayed_data.remove(row)


def _sync_platforms(db: DbSession, task: Task, names: list[str]) -> None:
    wanted = {_get_or_create(db, Platform, name=name).platform_pk for name in names}
    rows = db.scalars(select(TaskPlatform).where(TaskPlatform.task_fk == task.task_pk))
    current = {row.platform_fk: row for row in rows}
    for platform_pk in wanted - current.keys():
        db.add(TaskPlatform(task_fk=task.task_pk, platform_fk=platform_pk))
    for platform_pk in current.keys() - wanted:
        db.delete(current[platform_pk])


def _sync_predefined_actions(db: DbSession, task: Task, spec: TaskSpec) -> None:
    current = {
        row.action_name: row
        for row in db.scalars(select(TaskPredefinedAction).where(TaskPredefinedAction.task_fk == task.task_pk))
    }
    wanted = {action.task_name: action for action in spec.predefined_actions}
    for name, action in wanted.items():
        row = current.get(name)
        if row is None:
            row = TaskPredefinedAction(task_fk=task.task_pk, action_name=name)
            db.add(row)
        row.displayed_data = [d.model_dump(mode="json", exclude_none=True) for d in action.displayed_data]
    for name, row in current.items():
        if name not in wanted:
            db.delete(row)


def spec_files(paths: list[Path]) -> list[Path]:
    """Files named directly, and the *.json directly inside folders (menus/ holds menus, not tasks)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.glob("*.json") if p.is_file()))
        else:
            files.append(path)
    return files
