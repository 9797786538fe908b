"""Admin task configuration (PUT/POST/GET /task) and the user's task list (GET /user_task)."""

from __future__ import annotations

import logging
import random
import time

from flask import g, request
from flask_restful import Resource
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError

from backend import api_models as m
from backend.auth import admin_required, user_required
from backend.context import platform
from backend.errors import ApiError, bad_request
from backend.validation import ADMIN, USER, api
from mojodex_core.db.models import Platform, StoredMenu, Task, TaskPlatform, UserTask
from mojodex_core.task_loader import TaskConflict, existing_task_names, store_spec, validate_for_storage
from mojodex_core.task_spec import SpecError, SpecIssue
from mojodex_core.task_view import user_task_view
from mojodex_core.timestamps import iso_utc

log = logging.getLogger("mojodex.tasks")
STORE_ATTEMPTS = 5


def _task_summary(task: Task) -> dict:
    return {
        "task_pk": task.task_pk,
        "name_for_system": task.name_for_system,
        "type": task.type,
        "icon": task.icon,
        "languages": [d.language_code for d in task.displayed_data],
        "updated_at": iso_utc(task.updated_at),
    }


def _menu_exists(menu_id: str) -> bool:
    with platform().db() as db:
        return db.get(StoredMenu, menu_id) is not None


def _stored_task_names(names: set[str]) -> set[str]:
    with platform().db() as db:
        return existing_task_names(db, names)


class TaskAdminResource(Resource):
    method_decorators = [admin_required]

    def _store(self, mode: str) -> tuple[dict, int]:
        # Any parsed JSON goes to the validator, which names what is wrong with it (path "<root>").
        data = request.get_json(silent=True)
        try:
            if data is None:
                raise SpecError([SpecIssue("<root>", "must be a JSON object (a task spec); the body is not JSON")])
            spec = validate_for_storage(data, platform().settings.tasks_config_dir, _menu_exists, _stored_task_names)
        except SpecError as exc:
            raise ApiError(400, str(exc), errors=[{"path": e.path, "rule": e.rule} for e in exc.errors]) from exc
        for attempt in range(STORE_ATTEMPTS):
            try:
                with platform().db() as db:
                    task, created = store_spec(db, spec, mode)  # type: ignore[arg-type]
                    summary = _task_summary(task)
                break
            except TaskConflict as exc:
                raise ApiError(exc.status, str(exc)) from exc
            except (IntegrityError, OperationalError) as exc:
                # A concurrent request stored the same task (or text type, platform) first, or SQLite
                # refused a stale write: redo it in a fresh transaction, which sees their rows.
                retryable = isinstance(exc, IntegrityError) or "database is locked" in str(exc)
                if not retryable or attempt == STORE_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
        log.info("task %s %s by admin", spec.name_for_system, "created" if created else "updated")
        return summary, 200

    @api.validate(json=m.TaskSpecBody, resp=m.answers(m.TaskSummaryOut), security=ADMIN, tags=["tasks"],
                  skip_validation=True)
    def put(self):  # noqa: ANN201
        return self._store("create")

    @api.validate(json=m.TaskSpecBody, resp=m.answers(m.TaskSummaryOut), security=ADMIN, tags=["tasks"],
                  skip_validation=True)
    def post(self):  # noqa: ANN201
        return self._store("update")

    @api.validate(query=m.TaskQuery, resp=m.answers(m.TaskOut), security=ADMIN, tags=["tasks"])
    def get(self):  # noqa: ANN201
        name = request.args.get("name_for_system")
        with platform().db() as db:
            if name:
                task = db.scalar(select(Task).where(Task.name_for_system == name))
                if task is None:
                    raise ApiError(404, f"task {name!r} not found")
                return {**_task_summary(task), "spec": task.spec}, 200
            tasks = db.scalars(select(Task).order_by(Task.name_for_system))
            return {"tasks": [_task_summary(t) for t in tasks]}, 200


class UserTaskResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.UserTaskQuery, resp=m.answers(m.UserTasksOut), security=USER, tags=["tasks"])
    def get(self):  # noqa: ANN201
        platform_name = request.args.get("platform")
        if platform_name is not None and platform_name not in ("webapp", "mobile"):
            raise bad_request("platform must be 'webapp' or 'mobile'", field="platform")
        user = g.user
        with platform().db() as db:
            query = (
                select(UserTask, Task)
                .join(Task, Task.task_pk == UserTask.task_fk)
                .where(UserTask.user_id == user.user_id, UserTask.enabled.is_(True))
                .order_by(Task.name_for_system)
            )
            if platform_name:
                query = query.where(
                    Task.task_pk.in_(
                        select(TaskPlatform.task_fk)
                        .join(Platform, Platform.platform_pk == TaskPlatform.platform_fk)
                        .where(Platform.name == platform_name)
                    )
                )
            rows = db.execute(query).all()
            return {"user_tasks": [user_task_view(ut, t, user.language_code) for ut, t in rows]}, 200

