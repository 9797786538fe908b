"""Step executions in the database: loading the engine's view, claiming, finishing, views for clients."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import (
    STEP_EXECUTION_GONE,
    Task,
    UserTask,
    UserTaskExecution,
    UserTaskExecutionFile,
    UserWorkflowStepExecution,
    UserWorkflowStepExecutionResult,
)
from mojodex_core.timestamps import iso_utc
from mojodex_core.workflow.context import UploadedFile
from mojodex_core.workflow.engine import RunStep, StepDef, StepRun, steps_from_spec

StepRow = UserWorkflowStepExecution


def now() -> datetime:
    return datetime.now(UTC)


def task_of(db: DbSession, execution: UserTaskExecution) -> Task:
    return db.scalar(
        select(Task).join(UserTask, UserTask.task_fk == Task.task_pk).where(
            UserTask.user_task_pk == execution.user_task_fk
        )
    )


def workflow_steps(task: Task) -> list[StepDef]:
    return steps_from_spec(task.spec or {})


def step_def(task: Task, rank: int) -> StepDef | None:
    return next((s for s in workflow_steps(task) if s.rank == rank), None)


def chat_kind(db: DbSession, execution: UserTaskExecution) -> str | None:
    """Where a user's chat message would go: "review" (a rejected step with a review chat),
    "result" (the finished workflow's result chat), or None (no chat is open)."""
    if execution.status == "deleted":
        return None
    task = task_of(db, execution)
    steps = {s.rank: s for s in workflow_steps(task)}
    for row in live_rows(db, execution.user_task_execution_pk):
        step = steps.get(row.rank)
        if row.validated is False and step is not None and step.review_chat_enabled:
            return "review"
    if execution.status == "completed" and task.result_chat_enabled:
        return "result"
    return None


def latest_results(db: DbSession, step_pks: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The current result of each step execution: its latest result row (a user's edit wins)."""
    return {pk: result for pk, (result, _author) in latest_results_and_authors(db, step_pks).items()}


def latest_results_and_authors(db: DbSession, step_pks: list[int]) -> dict[int, tuple[list[dict[str, Any]], str]]:
    """Each step execution's current result and who wrote it ("assistant", or "user" for an edit)."""
    if not step_pks:
        return {}
    rows = db.execute(
        select(UserWorkflowStepExecutionResult.user_workflow_step_execution_fk, UserWorkflowStepExecutionResult.result,
               UserWorkflowStepExecutionResult.author)
        .where(UserWorkflowStepExecutionResult.user_workflow_step_execution_fk.in_(step_pks))
        .order_by(UserWorkflowStepExecutionResult.user_workflow_step_execution_result_pk)
    ).all()
    return {fk: (result, author) for fk, result, author in rows}


def live_rows(db: DbSession, user_task_execution_pk: int) -> list[StepRow]:
    return list(db.scalars(
        select(StepRow)
        .where(StepRow.user_task_execution_fk == user_task_execution_pk, StepRow.status.not_in(STEP_EXECUTION_GONE))
        .order_by(StepRow.rank, StepRow.user_workflow_step_execution_pk)
    ))


def live_runs(db: DbSession, user_task_execution_pk: int) -> list[StepRun]:
    rows = live_rows(db, user_task_execution_pk)
    results = latest_results(db, [r.user_workflow_step_execution_pk for r in rows])
    return [
        StepRun(
            pk=r.user_workflow_step_execution_pk, rank=r.rank, slot=r.slot, parent_pk=r.parent_step_execution_fk,
            item_index=r.item_index, status=r.status, validated=r.validated, parameter=r.parameter or {},
            result=results.get(r.user_workflow_step_execution_pk),
        )
        for r in rows
    ]


def attempt_for(db: DbSession, user_task_execution_pk: int, rank: int, slot: str) -> int:
    """2 for the re-run of a slot whose last run lapsed (its process died), else 1."""
    last = db.scalar(
        select(StepRow)
        .where(StepRow.user_task_execution_fk == user_task_execution_pk, StepRow.rank == rank, StepRow.slot == slot)
        .order_by(StepRow.user_workflow_step_execution_pk.desc())
        .limit(1)
    )
    return last.attempt + 1 if last is not None and last.status == "lapsed" else 1


class ParentChanged(Exception):
    """The parent a run was planned on changed before its claim (an edit of its result, a restart)."""


def claim_run(db: DbSession, user_task_execution_pk: int, action: RunStep,
              planned_on: list[Any] | None = None) -> StepRow:
    """Inserts the running row; the live-slot unique index makes a second claim fail (IntegrityError).

    The action was planned on its parent's result as read before (``planned_on``, the whole result: the run's
    past carries it). The parent's row is locked FOR SHARE (an edit locks it FOR UPDATE, a restart by the UPDATE
    that invalidates it, until they commit) and read again, with its result: when it is no longer the validated
    result the plan read, ``ParentChanged``: the change's own run message plans again. The lock order, execution
    then parent, is the one of the foreign-key check the INSERT makes anyway. On SQLite the read is not locked:
    one process writes at a time there, and the publication lock never lapses."""
    if action.parent_pk is not None:
        _check_parent(db, action.parent_pk, planned_on)
    moment = now()
    row = StepRow(
        user_task_execution_fk=user_task_execution_pk, step_name=action.step.name, rank=action.step.rank,
        slot=action.slot, parent_step_execution_fk=action.parent_pk, item_index=action.item_index,
        parameter=action.parameter, status="running",
        attempt=attempt_for(db, user_task_execution_pk, action.step.rank, action.slot),
        start_date=moment, heartbeat_at=moment,
    )
    db.add(row)
    db.flush()
    return row


def _check_parent(db: DbSession, parent_pk: int, planned_on: list[Any] | None) -> None:
    parent = db.execute(
        select(StepRow.status, StepRow.validated)
        .where(StepRow.user_workflow_step_execution_pk == parent_pk)
        .with_for_update(read=True)
    ).first()
    if parent is None or parent.status != "done" or parent.validated is not True:
        raise ParentChanged(f"step execution {parent_pk} is no longer a validated result")
    if (latest_results(db, [parent_pk]).get(parent_pk) or []) != (planned_on or []):
        raise ParentChanged(f"the result of step execution {parent_pk} changed")


def learned_instructions(db: DbSession, user_task_pk: int, step_name: str) -> list[str]:
    """What this user taught this step, on this execution and their earlier ones of the same task."""
    return list(db.scalars(
        select(StepRow.learned_instruction)
        .join(UserTaskExecution, UserTaskExecution.user_task_execution_pk == StepRow.user_task_execution_fk)
        .where(
            UserTaskExecution.user_task_fk == user_task_pk,
            StepRow.step_name == step_name,
            StepRow.learned_instruction.is_not(None),
        )
        .order_by(StepRow.user_workflow_step_execution_pk)
    ))


def uploaded_file(db: DbSession, user_task_execution_pk: int, input_name: str) -> UploadedFile | None:
    row = db.scalar(select(UserTaskExecutionFile).where(
        UserTaskExecutionFile.user_task_execution_fk == user_task_execution_pk,
        UserTaskExecutionFile.input_name == input_name,
    ))
    return UploadedFile(row.filename, row.content_type, row.data) if row is not None else None


# An uploaded file's name and content type are stored as they came, up to their columns' sizes.
FILENAME_CHARS: int = UserTaskExecutionFile.__table__.c.filename.type.length
CONTENT_TYPE_CHARS: int = UserTaskExecutionFile.__table__.c.content_type.type.length


def save_file(db: DbSession, user_task_execution_pk: int, input_name: str, file: UploadedFile) -> None:
    row = db.scalar(select(UserTaskExecutionFile).where(
        UserTaskExecutionFile.user_task_execution_fk == user_task_execution_pk,
        UserTaskExecutionFile.input_name == input_name,
    ))
    if row is None:
        row = UserTaskExecutionFile(user_task_execution_fk=user_task_execution_pk, input_name=input_name)
        db.add(row)
    row.filename, row.content_type, row.data = file.filename, file.content_type, file.data
    db.flush()


def owned_step_row(db: DbSession, pk: int, user_id: str) -> tuple[StepRow, UserTaskExecution] | None:
    found = db.execute(
        select(StepRow, UserTaskExecution)
        .join(UserTaskExecution, UserTaskExecution.user_task_execution_pk == StepRow.user_task_execution_fk)
        .join(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
        .where(
            StepRow.user_workflow_step_execution_pk == pk,
            UserTask.user_id == user_id,
            UserTaskExecution.status != "deleted",
        )
        .with_for_update(of=StepRow)
    ).first()
    return (found[0], found[1]) if found is not None else None


def step_view(row: StepRow, result: list[dict[str, Any]] | None, author: str | None,
              step: StepDef | None) -> dict[str, Any]:
    return {
        "user_workflow_step_execution_pk": row.user_workflow_step_execution_pk,
        "user_task_execution_pk": row.user_task_execution_fk,
        "step_name_for_system": row.step_name,
        "rank": row.rank,
        "parent_user_workflow_step_execution_pk": row.parent_step_execution_fk,
        "item_index": row.item_index,
        "parameter": row.parameter,
        "status": row.status,
        "validated": row.validated,
        "result": result,
        "result_author": author,
        "error": row.error,
        "learned_instruction": row.learned_instruction,
        "attempt": row.attempt,
        "user_validation_required": step.user_validation_required if step else None,
        "review_chat_enabled": step.review_chat_enabled if step else None,
        "start_date": iso_utc(row.start_date),
        "end_date": iso_utc(row.end_date),
    }


def execution_steps_view(db: DbSession, task: Task, user_task_execution_pk: int,
                         include_history: bool = False) -> list[dict[str, Any]]:
    query = select(StepRow).where(StepRow.user_task_execution_fk == user_task_execution_pk)
    if not include_history:
        query = query.where(StepRow.status.not_in(STEP_EXECUTION_GONE))
    rows = list(db.scalars(query.order_by(StepRow.user_workflow_step_execution_pk)))
    results = latest_results_and_authors(db, [r.user_workflow_step_execution_pk for r in rows])
    steps = {s.rank: s for s in workflow_steps(task)}
    return [step_view(r, *results.get(r.user_workflow_step_execution_pk, (None, None)), steps.get(r.rank))
            for r in rows]
