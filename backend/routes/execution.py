"""Lifecycle of a task execution: create, start from a form, read, rename, delete."""

from __future__ import annotations

import logging
import secrets

from flask import g, request
from flask_restful import Resource
from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import ApiError, bad_request, not_found
from backend.routes._input import current_user_id, execution_task, field, json_body, owned_execution, query_int
from backend.routes._submit import submit_turn
from backend.validation import USER, api
from mojodex_core.db.models import (
    OrderSession,
    ProducedText,
    ProducedTextVersion,
    Session,
    Task,
    UserTask,
    UserTaskExecution,
)
from mojodex_core.execution.chaining import ChainError, check_chain
from mojodex_core.execution.dispatch import UnsupportedTaskType
from mojodex_core.execution.intake import (
    FORM_MESSAGE_ID,
    InputError,
    accept_user_message,
    inputs_settled,
    validate_inputs,
)
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.produced_text import oversized
from mojodex_core.execution.prompt import render
from mojodex_core.execution.turn import execution_inputs
from mojodex_core.home_chat.service import another_turn_in_line
from mojodex_core.order_runtime import service as order_service
from mojodex_core.order_runtime.menus import MenuNotFound
from mojodex_core.task_view import displayed_data_for, predefined_actions
from mojodex_core.text_edit.store import actions_for_text_type
from mojodex_core.timestamps import iso_utc

log = logging.getLogger("mojodex.execution")


def execution_views(db, executions: list[UserTaskExecution]) -> list[dict]:  # noqa: ANN001
    """Views of a page of executions in three queries, whatever the page size."""
    pks = [e.user_task_execution_pk for e in executions]
    tasks = {
        user_task_pk: task
        for user_task_pk, task in db.execute(
            select(UserTask.user_task_pk, Task)
            .join(Task, Task.task_pk == UserTask.task_fk)
            .options(selectinload(Task.displayed_data))
            .where(UserTask.user_task_pk.in_({e.user_task_fk for e in executions}))
        )
    }
    versions = dict(
        db.execute(
            select(ProducedText.user_task_execution_fk, func.count(ProducedTextVersion.produced_text_version_pk))
            .join(ProducedTextVersion)
            .where(ProducedText.user_task_execution_fk.in_(pks))
            .group_by(ProducedText.user_task_execution_fk)
        ).all()
    )
    views = []
    for execution in executions:
        task = tasks[execution.user_task_fk]
        displayed = displayed_data_for(task, g.user.language_code)
        views.append({
            "user_task_execution_pk": execution.user_task_execution_pk,
            "user_task_pk": execution.user_task_fk,
            "session_id": execution.session_id,
            "task_name": displayed.name_for_user if displayed else task.name_for_system,
            "name_for_system": task.name_for_system,
            "icon": task.icon,
            "status": execution.status,
            "title": execution.title,
            "summary": execution.summary,
            "title_status": execution.title_status,
            "parent_user_task_execution_pk": execution.parent_user_task_execution_fk,
            "json_inputs_values": execution.json_input_values,
            "start_date": iso_utc(execution.start_date),
            "end_date": iso_utc(execution.end_date),
            "created_at": iso_utc(execution.created_at),
            "produced_text_version_count": versions.get(execution.user_task_execution_pk, 0),
        })
    return views


class UserTaskExecutionResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.NewExecutionBody, resp=m.answers(m.NewExecutionOut), security=USER, tags=["executions"])
    def put(self):  # noqa: ANN201
        body = json_body()
        user_task_pk = field(body, "user_task_pk", int)
        client_platform = field(body, "platform", str, "webapp")
        # Mojodex's name for the parent when a predefined action starts this task (chaining).
        parent_pk = field(body, "user_task_execution_fk", int, None)
        if client_platform not in ("webapp", "mobile"):
            raise bad_request("platform must be 'webapp' or 'mobile'", field="platform")
        with platform().db() as db:
            user_task = db.get(UserTask, user_task_pk)
            if user_task is None or user_task.user_id != current_user_id():
                raise not_found("user_task")
            if not user_task.enabled:
                raise ApiError(403, "this task is not enabled for you")
            task = db.get(Task, user_task.task_fk)
            if parent_pk is not None:
                try:
                    check_chain(db, owned_execution(db, parent_pk), task)
                except ChainError as exc:
                    raise bad_request(str(exc), field="user_task_execution_fk") from exc
            session = Session(
                session_id=secrets.token_urlsafe(32),  # unguessable: it names the Socket.IO room
                user_id=current_user_id(),
                platform=client_platform,
                language=g.user.language_code,
            )
            db.add(session)
            db.flush()
            execution = UserTaskExecution(
                user_task_fk=user_task.user_task_pk,
                session_id=session.session_id,
                json_input_values={},
                status="created",
                parent_user_task_execution_fk=parent_pk,
            )
            db.add(execution)
            db.flush()
            displayed = displayed_data_for(task, g.user.language_code)
            view = {
                "user_task_execution_pk": execution.user_task_execution_pk,
                "session_id": session.session_id,
                "json_input": displayed.json_input if displayed else [],
                "actions": predefined_actions(db, task, current_user_id(), g.user.language_code),
                "text_edit_actions": actions_for_text_type(db, task.output_text_type_fk, g.user.language_code),
                "parent_user_task_execution_pk": parent_pk,
            }
            if task.type == "order":
                current = platform()
                try:
                    view |= order_service.open_order(
                        db, execution, task, current.menus, current.order_store, g.user.language_code
                    )
                except MenuNotFound as exc:
                    raise ApiError(409, f"the menu of this order task is not available: {exc}") from exc
            log.info("execution %s created for task %s", execution.user_task_execution_pk, task.name_for_system)
            return view, 200

    @api.validate(query=m.ExecutionListQuery, resp=m.answers(m.ExecutionPageOut), security=USER, tags=["executions"])
    def get(self):  # noqa: ANN201
        with platform().db() as db:
            if request.args.get("user_task_execution_pk"):
                execution = owned_execution(db, query_int("user_task_execution_pk"))
                view = execution_views(db, [execution])[0]
                # One execution: also what a client needs to reopen it (as PUT answers on creation).
                task = execution_task(db, execution)
                view["actions"] = predefined_actions(db, task, current_user_id(), g.user.language_code)
                view["text_edit_actions"] = actions_for_text_type(db, task.output_text_type_fk, g.user.language_code)
                view["type"] = task.type
                return view, 200
            offset = query_int("offset", 0, minimum=0)
            limit = query_int("limit", 20, minimum=1, maximum=100)
            base = (
                select(UserTaskExecution)
                .join(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
                .where(UserTask.user_id == current_user_id(), UserTaskExecution.status != "deleted")
            )
            total = db.scalar(select(func.count()).select_from(base.subquery()))
            rows = list(db.scalars(
                base.order_by(UserTaskExecution.created_at.desc(), UserTaskExecution.user_task_execution_pk.desc())
                .offset(offset)
                .limit(limit)
            ))
            return {
                "user_task_executions": execution_views(db, rows),
                "total": total,
                "offset": offset,
                "limit": limit,
            }, 200

    @api.validate(query=m.ExecutionDeleteQuery, resp=m.answers(m.DeletedOut), security=USER, tags=["executions"])
    def delete(self):  # noqa: ANN201
        if request.args.get("user_task_execution_pk"):
            pk = query_int("user_task_execution_pk")
        else:  # Mojodex clients send it in the body
            body = request.get_json(silent=True)
            pk = field(body if isinstance(body, dict) else {}, "user_task_execution_pk", int)
        with platform().db() as db:
            execution = owned_execution(db, pk)
            execution.status = "deleted"
            session_id = execution.session_id
            # In a home chat's session the turn in line may be another's (the free chat's, another
            # task's): it is left running. This execution's own turn, queued, fails when it comes.
            stop = not another_turn_in_line(db, session_id, pk, deleting=True)
        if stop:
            platform().runner.cancel(session_id)
        log.info("execution %s deleted", pk)
        return {"user_task_execution_pk": pk, "status": "deleted"}, 200


class UserTaskExecutionRunResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.RunBody, resp=m.answers(m.RunOut), security=USER, tags=["executions"])
    def post(self):  # noqa: ANN201
        body = json_body()
        pk = field(body, "user_task_execution_pk", int)
        current = platform()
        with current.db() as db:
            execution = owned_execution(db, pk)
            session_id = execution.session_id
            task_type = execution_task(db, execution).type
        if not current.dispatcher.handles(task_type):
            raise ApiError(422, str(UnsupportedTaskType(task_type)))
        if task_type == "order":
            return self._start_order(current, pk, session_id, body.get("inputs"))
        if task_type == "workflow":
            from backend.routes.workflow import start_workflow

            return start_workflow(current, pk, session_id, body)
        inputs = field(body, "inputs", dict)
        # One form start at a time per session: the check, the inputs and the form message
        # must come from the same request, or two racing starts mix their inputs.
        with current.events.session_lock(session_id):
            text = self._store_inputs(current, pk, inputs)
            accepted = accept_user_message(
                current.session_factory,
                current.events,
                session_id=session_id,
                user_task_execution_pk=pk,
                text=text,
                message_id=FORM_MESSAGE_ID,
                event_name="form_input",
            )
        if accepted.run:
            submit_turn(current, TurnJob(session_id=session_id, message_pk=accepted.message_pk))
            current.request_title_summary(pk, session_id)  # first input only; submitted, never awaited
        elif accepted.status != "pending":
            raise ApiError(409, "this execution has already started")
        return {"user_task_execution_pk": pk, "session_id": session_id, "message_pk": accepted.message_pk}, 200

    @staticmethod
    def _start_order(current, pk: int, session_id: str, inputs: object) -> tuple[dict, int]:  # noqa: ANN001
        """An order needs no form: the greeting is its first message (inputs, if any, must be empty)."""
        if inputs not in (None, {}) and not (isinstance(inputs, dict) and not any(inputs.values())):
            raise bad_request("inputs: an order task takes no form inputs", field="inputs")
        with current.db() as db:
            row = db.get(OrderSession, pk)
            if row is None:
                raise ApiError(409, "this execution has no order conversation")
        try:
            started = order_service.start_order(current.session_factory, current.events, current.menus, pk)
        except MenuNotFound as exc:  # nothing stored: the greeting's transaction rolled back
            raise ApiError(409, f"the menu of this order task is not available: {exc}") from exc
        return {"user_task_execution_pk": pk, "session_id": session_id, "message_pk": started.message_pk,
                "started": started.started_now}, 200

    @staticmethod
    def _store_inputs(current, pk: int, inputs: dict) -> str:  # noqa: ANN001
        """Validates and stores the form's inputs; returns the text of the form message."""
        with current.db() as db:
            execution = owned_execution(db, pk)
            task = db.get(Task, db.get(UserTask, execution.user_task_fk).task_fk)
            displayed = displayed_data_for(task, g.user.language_code)
            json_input = displayed.json_input if displayed else []
            try:
                values = validate_inputs(json_input, inputs)
            except InputError as exc:
                raise bad_request(str(exc), field=exc.field) from exc
            if inputs_settled(db, execution) and execution.json_input_values != values:
                raise ApiError(409, "this execution has already started")
            execution.json_input_values = values
            # The form message is part of the conversation the user reads: their own labels.
            described = execution_inputs(execution, json_input, audience="user")
            if not described:
                # Only left-out media inputs: the start message would be empty (a PromptError, a 500).
                raise bad_request("inputs: give at least one input to start the task from", field="inputs")
            return render("form_start_message.jinja2", inputs=described)


class UserTaskExecutionTitleResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.TitleBody, resp=m.answers(m.TitleOut), security=USER, tags=["executions"])
    def post(self):  # noqa: ANN201
        body = json_body()
        pk = field(body, "user_task_execution_pk", int)
        title = field(body, "title", str).strip()
        if not title:
            raise bad_request("title must not be empty", field="title")
        max_title_chars = platform().settings.max_title_chars
        if oversized(title=title, max_title_chars=max_title_chars, max_production_chars=0):
            raise ApiError(413, f"title must be at most {max_title_chars} characters", field="title")
        with platform().db() as db:
            execution = owned_execution(db, pk)
            execution.title = title
            return {"user_task_execution_pk": pk, "title": title}, 200


class UserTaskExecutionStopResource(Resource):
    """The web app's stop button: the running turn is cancelled; its message fails with a
    retryable `error` event (sending the same message_id again retries it). The stop cancels the
    LLM call, not a tool that already ran: the retry goes on from the uses the stopped turn made
    (docs/tools_and_reasoning.md, Retries)."""

    method_decorators = [user_required]

    @api.validate(json=m.StopBody, resp=m.answers(m.StopOut), security=USER, tags=["executions"])
    def post(self):  # noqa: ANN201
        pk = field(json_body(), "user_task_execution_pk", int)
        with platform().db() as db:
            session_id = owned_execution(db, pk).session_id
            stop = not another_turn_in_line(db, session_id, pk)
        if not stop:  # a home chat's session: its free chat or another execution answers now
            log.info("execution %s: not stopped, the turn in line of session %s is another's", pk, session_id)
            return {"user_task_execution_pk": pk, "stopped": False}, 200
        platform().runner.cancel(session_id)
        log.info("execution %s: running turn stopped by the user", pk)
        return {"user_task_execution_pk": pk, "stopped": True}, 200
