"""Workflow routes (names follow Mojodex): start with files, validate or reject a step, edit its result,
relaunch a failed step, restart from any rank, list the step executions. Owner only, like every route."""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import g, request
from flask_restful import Resource

from backend import api_models as m
from backend.auth import user_required
from backend.context import Platform, platform
from backend.errors import ApiError, bad_request, not_found
from backend.routes._input import current_user_id, execution_task, field, json_body, owned_execution, query_int
from backend.routes._submit import submit_turn
from backend.validation import USER, api
from mojodex_core.execution.intake import (
    FORM_MESSAGE_ID,
    MEDIA_TYPES,
    InputError,
    accept_user_message,
    inputs_settled,
    validate_inputs,
)
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.prompt import render
from mojodex_core.execution.turn import execution_inputs
from mojodex_core.task_view import displayed_data_for
from mojodex_core.workflow import service, store
from mojodex_core.workflow.context import UploadedFile
from mojodex_core.workflow.runner import NOT_ADVANCED
from mojodex_core.workflow.service import WorkflowStateError

log = logging.getLogger("mojodex.workflow")


def _inputs(body: dict[str, Any], name: str = "inputs", default: Any = None) -> Any:
    """An object, or its JSON text (a multipart form carries it as text)."""
    value = body.get(name, default)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise bad_request(f"{name} must be a JSON object", field=name) from None
    if value is not None and not isinstance(value, dict):
        raise bad_request(f"{name} must be an object mapping input_name to value", field=name)
    return value


def _checked_inputs(db, execution, task, inputs: dict[str, Any], files: dict[str, UploadedFile]) -> dict[str, Any]:  # noqa: ANN001
    displayed = displayed_data_for(task, g.user.language_code)
    json_input = displayed.json_input if displayed else []
    declared = {i["input_name"]: i for i in json_input}
    for name, file in files.items():
        if name not in declared or declared[name].get("type") not in MEDIA_TYPES:
            raise bad_request(f"files.{name}: not a file input of this task", field=f"files.{name}")
        if not file.data:
            raise bad_request(f"files.{name}: the file is empty", field=f"files.{name}")
        for what, value, limit in (("file name", file.filename, store.FILENAME_CHARS),
                                   ("content type", file.content_type, store.CONTENT_TYPE_CHARS)):
            if value is not None and len(value) > limit:  # the columns' sizes: refused, not a 500 on storing
                raise bad_request(f"files.{name}: the {what} must be at most {limit} characters",
                                  field=f"files.{name}")
        inputs = {**inputs, name: file.filename}
    try:
        values = validate_inputs(json_input, inputs)
    except InputError as exc:
        raise bad_request(str(exc), field=exc.field) from exc
    for name, spec in declared.items():
        if spec.get("type") not in MEDIA_TYPES or spec.get("optional"):
            continue
        stored = store.uploaded_file(db, execution.user_task_execution_pk, name)
        if name not in files and (stored is None or values.get(name) not in (None, stored.filename)):
            raise bad_request(f"inputs.{name}: upload the file (multipart field {name!r})", field=f"inputs.{name}")
        values.setdefault(name, (files.get(name) or stored).filename)
    return values


def _files() -> dict[str, UploadedFile]:
    return {name: UploadedFile(f.filename or name, f.mimetype, f.read()) for name, f in request.files.items()}


def start_workflow(current: Platform, pk: int, session_id: str, body: dict[str, Any]) -> tuple[dict, int]:
    """POST /user_task_execution_run for a workflow: inputs as JSON, files as multipart fields."""
    inputs = _inputs(body, default={}) or {}
    files = _files()
    with current.events.session_lock(session_id):
        with current.db() as db:
            execution = owned_execution(db, pk)
            task = execution_task(db, execution)
            values = _checked_inputs(db, execution, task, inputs, files)
            settled = inputs_settled(db, execution)
            if settled and execution.json_input_values != values:
                raise ApiError(409, "this execution has already started (restart it with new inputs instead)")
            if not settled:
                for name, file in files.items():
                    store.save_file(db, pk, name, file)
                execution.json_input_values = values
            displayed = displayed_data_for(task, g.user.language_code)
            text = render("form_start_message.jinja2",
                          inputs=execution_inputs(execution, displayed.json_input if displayed else [], "user"))
        accepted = accept_user_message(current.session_factory, current.events, session_id=session_id,
                                       user_task_execution_pk=pk, text=text, message_id=FORM_MESSAGE_ID,
                                       event_name="form_input")
    if accepted.run:
        submit_turn(current, TurnJob(session_id=session_id, message_pk=accepted.message_pk))
        current.request_title_summary(pk, session_id)
    elif accepted.status != "pending":
        raise ApiError(409, "this execution has already started")
    return {"user_task_execution_pk": pk, "session_id": session_id, "message_pk": accepted.message_pk}, 200


def _owned_step(db, pk: int):  # noqa: ANN001, ANN202
    found = store.owned_step_row(db, pk, current_user_id())
    if found is None:
        raise not_found("user_workflow_step_execution")
    row, execution = found
    return row, execution, execution_task(db, execution)


def _apply(pk: int, change, field: str | None = None) -> tuple[dict, int]:  # noqa: ANN001
    """Runs ``change(db, publication, row, execution, task)`` in one transaction, then submits the run.
    A ValueError of ``change`` is a 400 naming ``field``; a WorkflowStateError a 409."""
    current = platform()
    with current.db() as db:
        _row, execution, _task = _owned_step(db, pk)
        session_id = execution.session_id
    try:
        with current.events.publishing(session_id) as publication, current.db() as db:
            row, execution, task = _owned_step(db, pk)
            outcome = change(db, publication, row, execution, task)
    except WorkflowStateError as exc:
        raise ApiError(409, str(exc)) from exc
    except ValueError as exc:
        raise bad_request(str(exc), **({"field": field} if field else {})) from exc
    if outcome.run_message_pk is not None:
        submit_turn(current, TurnJob(session_id=session_id, message_pk=outcome.run_message_pk), reason=NOT_ADVANCED,
                    retryable=False)
    return {**outcome.view, "run_submitted": outcome.run_message_pk is not None}, 200


class UserWorkflowStepExecutionResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.WorkflowStepsQuery, resp=m.answers(m.WorkflowStepsOut), security=USER, tags=["workflows"])
    def get(self):  # noqa: ANN201
        """The step executions of a workflow execution (history too with include_history=1)."""
        pk = query_int("user_task_execution_pk")
        with platform().db() as db:
            execution = owned_execution(db, pk)
            task = execution_task(db, execution)
            if task.type != "workflow":
                raise bad_request("this execution is not a workflow", field="user_task_execution_pk")
            history = request.args.get("include_history") in ("1", "true")
            steps = [{"name_for_system": s.name, "rank": s.rank, "user_validation_required": s.user_validation_required,
                      "review_chat_enabled": s.review_chat_enabled} for s in store.workflow_steps(task)]
            return {"user_task_execution_pk": pk, "status": execution.status, "steps": steps,
                    "step_executions": store.execution_steps_view(db, task, pk, history)}, 200

    @api.validate(json=m.StepDecisionBody, resp=m.answers(m.StepOut), security=USER, tags=["workflows"])
    def post(self):  # noqa: ANN201
        """Validate (validated: true) or reject (false: opens the review chat where review_chat_enabled)."""
        body = json_body()
        pk = field(body, "user_workflow_step_execution_pk", int)
        validated = field(body, "validated", bool)
        return _apply(pk, lambda db, pub, row, execution, task: service.decide(db, pub, row, execution, task,
                                                                               validated))

    @api.validate(json=m.StepPkBody, resp=m.answers(m.StepOut), security=USER, tags=["workflows"])
    def put(self):  # noqa: ANN201
        """Relaunch a failed step."""
        pk = field(json_body(), "user_workflow_step_execution_pk", int)
        return _apply(pk, service.relaunch)


class UserWorkflowStepExecutionResultResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.StepResultBody, resp=m.answers(m.StepOut), security=USER, tags=["workflows"])
    def put(self):  # noqa: ANN201
        body = json_body()
        pk = field(body, "user_workflow_step_execution_pk", int)
        result = field(body, "result", list)
        return _apply(pk, lambda db, pub, row, execution, task: service.edit_result(db, pub, row, execution, task,
                                                                                    result), field="result")


class RestartUserWorkflowExecutionResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.RestartBody, resp=m.answers(m.RestartOut), security=USER, tags=["workflows"])
    def post(self):  # noqa: ANN201
        body = json_body()
        pk = field(body, "user_task_execution_pk", int)
        from_rank = field(body, "from_rank", int, 1)
        inputs = _inputs(body)
        files = _files()  # a multipart restart may send a new recording
        current = platform()
        with current.db() as db:
            execution = owned_execution(db, pk)
            task = execution_task(db, execution)
            if task.type != "workflow":
                raise bad_request("this execution is not a workflow", field="user_task_execution_pk")
            session_id = execution.session_id
            values = None
            if inputs is not None or files:
                kept = {k: v for k, v in (execution.json_input_values or {}).items() if k not in files}
                values = _checked_inputs(db, execution, task, inputs if inputs is not None else kept, files)
        try:
            with current.events.publishing(session_id) as publication, current.db() as db:
                execution = owned_execution(db, pk)
                outcome = service.restart(db, publication, execution, execution_task(db, execution), from_rank, values)
                for name, file in files.items():
                    store.save_file(db, pk, name, file)
        except WorkflowStateError as exc:
            raise ApiError(409, str(exc)) from exc
        except ValueError as exc:
            raise bad_request(str(exc), field="from_rank") from exc
        if outcome.stop_running:
            current.runner.cancel(session_id)  # the step still running was for the old inputs
        submit_turn(current, TurnJob(session_id=session_id, message_pk=outcome.run_message_pk), reason=NOT_ADVANCED,
                    retryable=False)
        log.info("workflow execution %s restarted from rank %s", pk, from_rank)
        return {**outcome.view, "run_submitted": True}, 200
