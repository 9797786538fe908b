"""What the workflow routes do: validate, reject, edit a result, relaunch, restart. Pure database work
in the caller's transaction; each returns the ``workflow_run`` message to submit, if any.

Every change of state is a conditional UPDATE (or a row lock), so two concurrent requests on the same
step act once: the second sees the state the first left.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Message, Task, UserTaskExecution, UserWorkflowStepExecutionResult
from mojodex_core.execution.events import Publication
from mojodex_core.workflow import store
from mojodex_core.workflow.runner import ADVANCING_EVENTS, INVALIDATED, NOT_ADVANCED, RUN_EVENT, request_run
from mojodex_core.workflow.steps import get_step

StepRow = store.StepRow
MAX_RESULT_ITEMS = 100


class WorkflowStateError(Exception):
    """The request does not fit the step's state (a 409)."""


@dataclass(frozen=True)
class Outcome:
    run_message_pk: int | None
    view: dict[str, Any]
    # A running step was invalidated: the caller stops it (its result would be dropped anyway).
    stop_running: bool = False


def _view(db: DbSession, task: Task, row: StepRow) -> dict[str, Any]:
    db.flush()
    db.refresh(row)
    pk = row.user_workflow_step_execution_pk
    result, author = store.latest_results_and_authors(db, [pk]).get(pk, (None, None))
    return store.step_view(row, result, author, store.step_def(task, row.rank))


def invalidate(db: DbSession, publication: Publication, rows: list[StepRow], reason: str) -> None:
    for row in rows:
        row.status = "invalidated"
        row.end_date = row.end_date or datetime.now(UTC)
    db.flush()
    for row in rows:
        publication.add(db, INVALIDATED, {
            "user_workflow_step_execution_pk": row.user_workflow_step_execution_pk,
            "user_task_execution_pk": row.user_task_execution_fk, "step_name_for_system": row.step_name,
            "rank": row.rank, "reason": reason, "session_id": publication.session_id,
        })


def _reopen(execution: UserTaskExecution) -> None:
    if execution.status == "completed":
        execution.status, execution.end_date = "started", None


def _run(db: DbSession, execution: UserTaskExecution, reason: str, row: StepRow | None = None) -> int:
    step_pk = row.user_workflow_step_execution_pk if row is not None else None
    return request_run(db, execution.session_id, execution.user_task_execution_pk, reason, step_pk).message_pk


def run_again_if_refused(db: DbSession, execution: UserTaskExecution, row: StepRow, reason: str) -> int | None:
    """A change of ``row`` sent again once recorded (a decision, a relaunch), whose run the runner refused:
    its run message failed with NOT_ADVANCED and is still the execution's latest advancing message (nothing
    advanced it since). That message is pending again, its pk returned for the caller to submit: the same
    request sent again works, as the 503's Retry-After says. A conditional UPDATE: of two such requests at
    once, one runs it. None otherwise (nothing to run again: the run ran, or runs, or was another change's)."""
    latest = db.execute(
        select(Message.message_pk, Message.event_name, Message.status, Message.error, Message.data)
        .where(Message.user_task_execution_fk == execution.user_task_execution_pk,
               Message.event_name.in_(ADVANCING_EVENTS))
        .order_by(Message.message_pk.desc()).limit(1)
    ).first()
    if latest is None or (latest.event_name, latest.status, latest.error) != (RUN_EVENT, "failed", NOT_ADVANCED):
        return None
    data = latest.data or {}
    if (data.get("user_workflow_step_execution_pk"), data.get("reason")) != (row.user_workflow_step_execution_pk,
                                                                                reason):
        return None
    pending = db.execute(
        update(Message).where(Message.message_pk == latest.message_pk, Message.status == "failed")
        .values(status="pending", error=None).execution_options(synchronize_session=False)
    ).rowcount
    return latest.message_pk if pending else None


def decide(db: DbSession, publication: Publication, row: StepRow, execution: UserTaskExecution, task: Task,
           validated: bool) -> Outcome:
    """The user's validation (True) or rejection (False) of a step awaiting it."""
    changed = db.execute(
        update(StepRow)
        .where(StepRow.user_workflow_step_execution_pk == row.user_workflow_step_execution_pk,
               StepRow.status == "done", StepRow.validated.is_(None))
        .values(validated=validated)
    ).rowcount
    db.refresh(row)
    reason = "validated" if validated else "rejected"
    if not changed:
        # The same decision twice: its run again when the runner refused it, else nothing more to do.
        again = run_again_if_refused(db, execution, row, reason) if row.validated is validated else None
        if again is not None or (row.status == "done" and row.validated is validated):
            return Outcome(again, _view(db, task, row))
        raise WorkflowStateError(f"this step execution is not waiting for validation (status {row.status}, "
                                 f"validated {row.validated})")
    step = store.step_def(task, row.rank)
    if validated:
        return Outcome(_run(db, execution, reason, row), _view(db, task, row))
    if step is not None and step.review_chat_enabled:
        return Outcome(None, _view(db, task, row))  # the review chat is open: the user says what is wrong
    # No review chat: a rejection asks for another try of the step.
    invalidate(db, publication, [row], "rejected")
    return Outcome(_run(db, execution, reason, row), _view(db, task, row))


# What an edit does to a step that ended, by its ``validated``: (``validated`` after it, later steps run again).
# A rejected step's edited result is the user's answer to what was wrong: it awaits their validation (the
# review closes).
EDIT_TRANSITIONS: dict[bool | None, tuple[bool | None, bool]] = {
    None: (None, False),  # awaiting validation: it still does, with the edited result
    False: (None, False),  # rejected: the edited result awaits validation
    True: (True, True),  # validated: the later steps ran on the old result
}


def later_live_rows(db: DbSession, execution_pk: int, rank: int) -> list[StepRow]:
    return [r for r in store.live_rows(db, execution_pk) if r.rank > rank]


def edit_result(db: DbSession, publication: Publication, row: StepRow, execution: UserTaskExecution, task: Task,
                result: Any) -> Outcome:
    if row.status != "done":  # the step's state first: no edit of a running step, whatever its shape
        raise WorkflowStateError(f"only the result of a step that ended can be edited (status {row.status})")
    if not isinstance(result, list) or not result or not all(isinstance(i, dict) for i in result):
        raise ValueError("result must be a non-empty list of objects")
    if len(result) > MAX_RESULT_ITEMS:
        raise ValueError(f"result must have at most {MAX_RESULT_ITEMS} items")
    step = store.step_def(task, row.rank)
    if step is not None:
        get_step(step.name).check_result(result)  # ResultShapeError (a ValueError): the next step could not use it
    db.add(UserWorkflowStepExecutionResult(
        user_workflow_step_execution_fk=row.user_workflow_step_execution_pk, result=result, author="user"))
    row.validated, reruns = EDIT_TRANSITIONS[row.validated]
    run = None
    if reruns:
        # Later steps ran on the old result: they run again on the edited one.
        invalidate(db, publication, later_live_rows(db, execution.user_task_execution_pk, row.rank), "edited")
        _reopen(execution)
        run = _run(db, execution, "edited", row)
    return Outcome(run, _view(db, task, row))


def relaunch(db: DbSession, publication: Publication, row: StepRow, execution: UserTaskExecution,
             task: Task) -> Outcome:
    if row.status != "failed":
        again = run_again_if_refused(db, execution, row, "relaunched")  # the same relaunch, sent again
        if again is not None:
            return Outcome(again, _view(db, task, row))
        raise WorkflowStateError(f"only a failed step can be relaunched (status {row.status})")
    invalidate(db, publication, [row], "relaunched")
    return Outcome(_run(db, execution, "relaunched", row), _view(db, task, row))


def restart(db: DbSession, publication: Publication, execution: UserTaskExecution, task: Task, from_rank: int,
            inputs: dict[str, Any] | None) -> Outcome:
    ranks = [s.rank for s in store.workflow_steps(task)]
    if from_rank not in ranks:
        raise ValueError(f"from_rank must be one of {', '.join(map(str, ranks))}")
    if execution.start_date is None:
        raise WorkflowStateError("this execution has not started: start it with POST /user_task_execution_run")
    earlier = [r for r in ranks if r < from_rank]
    if earlier:
        # A later rank starts from the validated results of the one before: without them nothing would run.
        before = [r for r in store.live_rows(db, execution.user_task_execution_pk) if r.rank == earlier[-1]]
        if not before or not all(r.status == "done" and r.validated for r in before):
            raise WorkflowStateError(f"rank {earlier[-1]} has no validated result yet: validate it, or restart "
                                     f"from rank {ranks[0]}")
    if inputs is not None:
        execution.json_input_values = inputs
    rows = later_live_rows(db, execution.user_task_execution_pk, from_rank - 1)
    running = any(r.status == "running" for r in rows)
    invalidate(db, publication, rows, "restarted")
    _reopen(execution)
    return Outcome(_run(db, execution, f"restarted from rank {from_rank}"),
                   {"user_task_execution_pk": execution.user_task_execution_pk, "from_rank": from_rank,
                    "json_inputs_values": execution.json_input_values}, stop_running=running)
