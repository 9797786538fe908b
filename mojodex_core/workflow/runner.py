"""The workflow's turn handler: registered as "workflow" in the task-type handler registry.

It answers the messages of a workflow execution on the same per-session runner as turns:

* ``form_input`` (the form started the execution) and ``workflow_run`` (a system message the
  routes and the heartbeat watch store to ask for progress: a validation, an edit, a relaunch, a
  restart, a re-run after a crash) advance the engine: run the next step, store its result,
  publish its events, and go on until a step waits for the user, fails, or the workflow ends;
* a user's chat message goes to the review chat of a rejected step, or to the result chat once
  the workflow produced its text (where ``result_chat_enabled``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Callable

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import EXECUTION_LOCK, transaction
from mojodex_core.db.models import Message, Task, User, UserTaskExecution, UserWorkflowStepExecutionResult
from mojodex_core.execution.events import EventPublisher, Publication
from mojodex_core.execution.failures import EXECUTION_DELETED, fail_or_mark, failure_reason
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.produced_text import append_version, version_payload
from mojodex_core.execution.reasoning import append_trace
from mojodex_core.llm import LLMProvider
from mojodex_core.task_view import displayed_data_for
from mojodex_core.workflow import store
from mojodex_core.workflow.context import StepContext, Transcriber
from mojodex_core.workflow.engine import Complete, RunStep, ancestors, final_text, next_action
from mojodex_core.workflow.heartbeat import Heartbeat
from mojodex_core.workflow.llm import ProviderStepLLM
from mojodex_core.workflow.steps import StepError, get_step

log = logging.getLogger("mojodex.workflow")

RUN_EVENT = "workflow_run"
STARTED = "workflow_step_execution_started"
ENDED = "workflow_step_execution_ended"
INVALIDATED = "workflow_step_execution_invalidated"
PRODUCED_TEXT = "workflow_execution_produced_text"
ADVANCING_EVENTS = ("form_input", RUN_EVENT)
# A failure outside a step (the engine's transaction: claiming the next step, producing the text) is
# retried after these pauses; then the run fails with an error event (a step's own failure is the step's).
ADVANCE_RETRY_PAUSES_S = (0.2, 1.0)
STALLED = ("The workflow stopped between two steps because of an internal error. Restart it from the step "
           "that should run next to go on.")
# Why a workflow_run message fails when the runner refused it (jobs.JobRefused): what asked for the run (a
# decision, an edit, a relaunch, a restart) is kept; sent again, it runs (service.run_again_if_refused).
NOT_ADVANCED = ("The workflow could not go on: the server is restarting or too busy. Your change is saved: in a "
                "moment, send it again (or restart the workflow from the step that should run next).")
NO_ITEM = ("The step returned no item, so nothing can run after it and there is no result to write. "
           "Relaunch it to retry.")
STOPPED = "The step was stopped before it ended. Relaunch it to run it again."
NOT_CHATTING = ("This workflow is running its steps: you can chat in the review of a step you rejected, "
                "or about the final result once it is written.")

Handler = Callable[[TurnJob, threading.Event], None]


@dataclass(frozen=True)
class _Prepared:
    """A claimed run and everything its step receives, read in the claiming transaction."""

    row_pk: int
    action: RunStep
    execution_pk: int
    inputs: dict[str, Any]
    learned: list[str]
    past: list[dict[str, Any]]
    username: str
    language: str
    task_definition: str


def request_run(
    db: DbSession, session_id: str, user_task_execution_pk: int, reason: str, step_pk: int | None = None
) -> Message:
    """Stores the system message that asks the runner to advance this execution (submit its pk);
    ``step_pk``: the step execution whose change (a decision, an edit, a relaunch) asks for it."""
    data: dict[str, Any] = {"reason": reason}
    if step_pk is not None:
        data["user_workflow_step_execution_pk"] = step_pk
    message = Message(
        session_id=session_id, user_task_execution_fk=user_task_execution_pk, sender="system",
        message_id=f"{RUN_EVENT}-{uuid.uuid4().hex}", event_name=RUN_EVENT, text=reason, status="pending",
        data=data,
    )
    db.add(message)
    db.flush()
    return message


class WorkflowTurn:
    def __init__(
        self,
        session_factory: sessionmaker[DbSession],
        events: EventPublisher,
        llm: LLMProvider | None,
        heartbeat: Heartbeat,
        *,
        transcriber: Transcriber | None = None,
        review: Handler | None = None,
        result_chat: Handler | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self._max_tokens = max_tokens  # every step's LLM call is bounded like turns are (the local model: 400)
        self._factory = session_factory
        self._events = events
        self._llm = llm
        self._heartbeat = heartbeat
        self._transcriber = transcriber
        self._review = review
        self._result_chat = result_chat

    def set_review(self, review: Handler) -> None:
        self._review = review

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        with self._factory() as db:
            message = db.get(Message, job.message_pk)
            if message is None or message.status != "pending":
                return
            event_name, execution_pk = message.event_name, message.user_task_execution_fk
            message_id = message.message_id
        if event_name in ADVANCING_EVENTS:
            self._advance_for(job, execution_pk, event_name, message_id, cancel)
            return
        kind = self._chat_kind(execution_pk)
        if kind == "review" and self._review is not None:
            self._review(job, cancel)
        elif kind == "result" and self._result_chat is not None:
            self._result_chat(job, cancel)
        else:  # its chat closed before it ran: sent again, it would run in another one (final, as REVIEW_CLOSED)
            fail_or_mark(self._factory, self._events, session_id=job.session_id, message_pk=job.message_pk,
                         message_id=message_id, user_task_execution_pk=execution_pk, reason=NOT_CHATTING,
                         retryable=False, final=True)

    def _chat_kind(self, execution_pk: int) -> str | None:
        with self._factory() as db:
            execution = db.get(UserTaskExecution, execution_pk)
            return None if execution is None else store.chat_kind(db, execution)

    # --- advancing the engine -------------------------------------------------------------
    def _advance_for(
        self, job: TurnJob, execution_pk: int, event_name: str, message_id: str, cancel: threading.Event
    ) -> None:
        with self._events.publishing(job.session_id) as publication, transaction(self._factory) as db:
            claimed = db.execute(
                update(Message).where(Message.message_pk == job.message_pk, Message.status == "pending")
                .values(status="processing")
            ).rowcount
            if not claimed:
                return
            # Locked: a deletion committing meanwhile must not be overwritten by "started".
            execution = db.get(UserTaskExecution, execution_pk, with_for_update=EXECUTION_LOCK)
            gone = execution is None or execution.status == "deleted"
            if event_name == "form_input" and not gone and execution.start_date is None:
                execution.start_date = datetime.now(UTC)
                execution.status = "started"
                publication.add(db, "user_task_execution_start", {
                    "session_id": job.session_id, "user_task_execution_pk": execution_pk})
        if gone:  # deleted before its run was claimed: it stays deleted, as an instruct turn's does
            fail_or_mark(self._factory, self._events, session_id=job.session_id, message_pk=job.message_pk,
                         message_id=message_id, user_task_execution_pk=execution_pk,
                         reason=EXECUTION_DELETED, retryable=False)
            return
        pauses = iter(ADVANCE_RETRY_PAUSES_S)
        while True:
            try:
                self.advance(job.session_id, execution_pk, cancel)
                break
            except Exception:
                # Each engine transaction is all or nothing: advancing again starts from what is stored.
                log.exception("workflow run failed between steps execution=%s", execution_pk)
                pause = next(pauses, None)
                if pause is None:  # visible, and not stuck: a restart from the next rank goes on
                    fail_or_mark(self._factory, self._events, session_id=job.session_id, message_pk=job.message_pk,
                                 message_id=message_id, user_task_execution_pk=execution_pk, reason=STALLED,
                                 retryable=False)
                    return
                if cancel.wait(pause):  # stopped (a restart, a deletion): what stopped it runs on
                    break
        with transaction(self._factory) as db:
            db.execute(update(Message).where(Message.message_pk == job.message_pk, Message.status == "processing")
                       .values(status="answered"))

    def advance(self, session_id: str, execution_pk: int, cancel: threading.Event) -> None:
        """Runs steps one at a time until one waits for the user, fails, or the workflow ends."""
        while not cancel.is_set():
            prepared = self._next(session_id, execution_pk)
            if prepared is None:
                return
            self._run(session_id, prepared, cancel)

    def _next(self, session_id: str, execution_pk: int) -> _Prepared | None:
        with self._events.publishing(session_id) as publication, transaction(self._factory) as db:
            # The execution row lock serialises engines of several processes on one execution. EXECUTION_LOCK,
            # as every writer of the row: FOR UPDATE also waited for the rows that only name it (an llm_call
            # row, a message: their foreign key's FOR KEY SHARE) and made them wait.
            execution = db.get(UserTaskExecution, execution_pk, with_for_update=EXECUTION_LOCK)
            if execution is None or execution.status == "deleted":
                return None
            task = store.task_of(db, execution)
            steps = store.workflow_steps(task)
            runs = store.live_runs(db, execution_pk)
            inputs = dict(execution.json_input_values or {})
            action = next_action(steps, runs, inputs)
            if isinstance(action, Complete):
                if execution.status != "completed" and action.last_runs:
                    self._produce_text(db, publication, session_id, execution, task, action)
                return None
            if not isinstance(action, RunStep):
                log.info("workflow execution=%s waits (%s, step execution %s)", execution_pk, action.why, action.pk)
                return None
            try:
                with db.begin_nested():
                    planned_on = next((r.result for r in runs if r.pk == action.parent_pk), None)
                    row = store.claim_run(db, execution_pk, action, planned_on)
            except IntegrityError:
                log.info("workflow execution=%s: slot %s of rank %s is claimed elsewhere",
                         execution_pk, action.slot, action.step.rank)
                return None
            except store.ParentChanged as exc:  # committed while this claim waited: its run message goes on
                log.info("workflow execution=%s: not claiming rank %s: %s", execution_pk, action.step.rank, exc)
                return None
            user = db.get(User, execution.user_task.user_id)
            publication.add(db, STARTED, {
                **store.step_view(row, None, None, action.step), "session_id": session_id})
            chain = ancestors(action.parent_pk, runs)
            names = {s.rank: s.name for s in steps}
            return _Prepared(
                row_pk=row.user_workflow_step_execution_pk, action=action, execution_pk=execution_pk, inputs=inputs,
                learned=store.learned_instructions(db, execution.user_task_fk, action.step.name),
                past=[{"step_name": names.get(r.rank), "rank": r.rank, "parameter": r.parameter, "result": r.result}
                      for r in chain],
                username=user.name, language=execution.session.language or user.language_code,
                task_definition=task.definition_for_system,
            )

    def _run(self, session_id: str, prepared: _Prepared, cancel: threading.Event) -> None:
        action, row_pk, execution_pk = prepared.action, prepared.row_pk, prepared.execution_pk

        def files(input_name: str):  # noqa: ANN202
            with self._factory() as db:
                return store.uploaded_file(db, execution_pk, input_name)

        decisions: list[tuple[str, str]] = []  # (label, entry): one per LLM call of the step
        context = StepContext(
            user_task_execution_pk=execution_pk, step_name=action.step.name, step_definition=action.step.definition,
            task_definition=prepared.task_definition, username=prepared.username, language=prepared.language,
            llm=(ProviderStepLLM(self._llm, execution_pk, cancel, step_name=action.step.name, trace=decisions,
                                 max_tokens=self._max_tokens)
                 if self._llm is not None else None),
            files=files, transcriber=self._transcriber, cancel=cancel,
        )
        started = time.monotonic()
        result: list[dict[str, Any]] | None = None
        error: str | None = None
        with self._heartbeat.beating(row_pk):
            try:
                result = get_step(action.step.name).execute(
                    dict(action.parameter), list(prepared.learned), dict(prepared.inputs), list(prepared.past), context,
                )
                result = _checked(result)
            except Exception as exc:
                error = failure_reason(exc, shown=(StepError,), what="workflow step", cancelled=STOPPED,
                                       crashed="The step failed because of an internal error. Relaunch it to retry.",
                                       where=f"execution={execution_pk} step={action.step.name}")
        if error is None and cancel.is_set():
            # Stopped while it ran (its last call answered anyway): nothing runs after it, so it must be
            # relaunchable, not "done" with the steps after it never started.
            result, error = None, STOPPED
        elapsed_ms = (time.monotonic() - started) * 1000
        decisions += [(f"WORKFLOW_STEP_{action.step.name}", note) for note in context.trace]
        self._finish(session_id, row_pk, action, result, error, elapsed_ms, decisions)

    def _finish(self, session_id: str, row_pk: int, action: RunStep, result: list[dict[str, Any]] | None,
                error: str | None, elapsed_ms: float, decisions: list[tuple[str, str]] = ()) -> None:
        with self._events.publishing(session_id) as publication, transaction(self._factory) as db:
            row = db.get(store.StepRow, row_pk, with_for_update=True)
            for label, entry in decisions if row is not None else ():  # they were taken, whatever the result becomes
                append_trace(db, row.user_task_execution_fk, [entry], label)
            if row is None or row.status != "running":
                # Invalidated (a restart) or lapsed (taken for dead) while it ran: its result is not used.
                log.info("step execution %s ended as %s: result dropped", row_pk, row.status if row else "gone")
                return
            execution = db.get(UserTaskExecution, row.user_task_execution_fk, with_for_update=EXECUTION_LOCK)
            if execution is None or execution.status == "deleted":  # deleted while it ran: ended, nothing told
                row.status, row.error, row.end_date = "failed", EXECUTION_DELETED, datetime.now(UTC)
                log.info("step execution %s ended after its execution was deleted: result dropped", row_pk)
                return
            row.end_date = datetime.now(UTC)
            if error is not None:
                row.status, row.error = "failed", error
            else:
                row.status = "done"
                row.validated = None if action.step.user_validation_required else True
                db.add(UserWorkflowStepExecutionResult(
                    user_workflow_step_execution_fk=row_pk, result=result, author="assistant"))
            db.flush()
            publication.add(db, ENDED, {
                **store.step_view(row, result, "assistant" if result is not None else None, action.step),
                "session_id": session_id})
        log.info("step %s (step execution %s, rank %s, slot %s) %s in %.0f ms", action.step.name, row_pk,
                 action.step.rank, action.slot, "failed: " + error if error else "done", elapsed_ms)

    def _produce_text(self, db: DbSession, publication: Publication, session_id: str, execution: UserTaskExecution,
                      task: Task, action: Complete) -> None:
        displayed = displayed_data_for(task, execution.session.language or "en")
        title, body = final_text(action.last_runs, displayed.name_for_user if displayed else task.name_for_system)
        user_id = execution.user_task.user_id
        answer = Message(
            session_id=session_id, user_task_execution_fk=execution.user_task_execution_pk, sender="assistant",
            event_name="draft_message", text=f"{title}\n\n{body}".strip(), text_with_tags=None, status="final",
            data={},
        )
        db.add(answer)
        db.flush()
        version = append_version(db, execution, user_id, title=title, production=body, origin="assistant",
                                 text_type_fk=task.output_text_type_fk, message_pk=answer.message_pk)
        answer.data = {"produced_text_version_pk": version.produced_text_version_pk}
        execution.status = "completed"
        execution.end_date = datetime.now(UTC)
        if not execution.title:
            execution.title = title[:255]
        db.flush()
        payload = version_payload(version, version.produced_text,
                                  task.output_text_type.name if task.output_text_type else None)
        answer.seq = publication.add(db, PRODUCED_TEXT, {**payload, "message_pk": answer.message_pk,
                                                         "session_id": session_id})
        log.info("workflow execution=%s produced version %s", execution.user_task_execution_pk, version.version_index)


def _checked(result: Any) -> list[dict[str, Any]]:
    if not isinstance(result, list) or not all(isinstance(item, dict) for item in result):
        raise StepError("The step returned something other than a list of objects.")
    if not result:  # the next rank would run zero times and the workflow could never end: a failure to relaunch
        raise StepError(NO_ITEM)
    return result
