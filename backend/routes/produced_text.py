"""Reading produced texts and their versions; a manual edit appends a version."""

from __future__ import annotations

from flask import g
from flask_restful import Resource
from sqlalchemy import func, select

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import ApiError, bad_request, not_found
from backend.routes._input import field, json_body, owned_execution, query_int, require_editable
from backend.validation import USER, api
from mojodex_core.db.models import ProducedText, ProducedTextVersion, UserTaskExecution
from mojodex_core.execution.produced_text import (
    UnknownBaseVersion,
    VersionConflict,
    append_manual_edit,
    oversized,
    version_payload,
)


def _owned_produced_text(db, produced_text_pk: int) -> ProducedText:  # noqa: ANN001
    produced = db.get(ProducedText, produced_text_pk)
    if produced is None or produced.user_id != g.user.user_id:
        raise not_found("produced_text")
    execution = db.get(UserTaskExecution, produced.user_task_execution_fk)
    if execution is None or execution.status == "deleted":
        raise not_found("produced_text")
    return produced


def _version_view(db, produced: ProducedText, version: ProducedTextVersion) -> dict:  # noqa: ANN001
    count = db.scalar(
        select(func.count()).where(ProducedTextVersion.produced_text_fk == produced.produced_text_pk)
    )
    return {
        **version_payload(version, produced, version.text_type.name if version.text_type else None),
        "produced_text_version_count": count,
    }


def _version_at(db, produced: ProducedText, index: int | None) -> ProducedTextVersion:  # noqa: ANN001
    query = select(ProducedTextVersion).where(ProducedTextVersion.produced_text_fk == produced.produced_text_pk)
    if index is None:
        query = query.order_by(ProducedTextVersion.version_index.desc()).limit(1)
    else:
        query = query.where(ProducedTextVersion.version_index == index)
    version = db.scalar(query)
    if version is None:
        raise not_found("produced_text_version" if index else "produced_text")
    return version


class UserTaskExecutionProducedTextResource(Resource):
    """GET ?user_task_execution_pk=&produced_text_version_index= (1-based; latest when absent)."""

    method_decorators = [user_required]

    @api.validate(query=m.ExecutionProducedTextQuery, resp=m.answers(m.VersionOut), security=USER,
                  tags=["produced texts"])
    def get(self):  # noqa: ANN201
        pk = query_int("user_task_execution_pk")
        index = query_int("produced_text_version_index", None, minimum=1)
        with platform().db() as db:
            execution = owned_execution(db, pk)
            produced = db.scalar(
                select(ProducedText).where(ProducedText.user_task_execution_fk == execution.user_task_execution_pk)
            )
            if produced is None:
                raise not_found("produced_text")
            return _version_view(db, produced, _version_at(db, produced, index)), 200


class ProducedTextResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.ProducedTextQuery, resp=m.answers(m.VersionOut), security=USER, tags=["produced texts"])
    def get(self):  # noqa: ANN201
        pk = query_int("produced_text_pk")
        index = query_int("produced_text_version_index", None, minimum=1)
        with platform().db() as db:
            produced = _owned_produced_text(db, pk)
            return _version_view(db, produced, _version_at(db, produced, index)), 200

    @api.validate(json=m.ProducedTextBody, resp=m.answers(m.VersionOut), security=USER, tags=["produced texts"])
    def post(self):  # noqa: ANN201
        """A manual edit by the user: appended as the next version, never overwriting one; 409 when
        ``base_produced_text_version_index`` names an older version than the latest (the answer names
        ``latest_produced_text_version_index``), 400 when it names one beyond it."""
        body = json_body()
        production = field(body, "production", str)
        title = field(body, "title", str, None)
        base = field(body, "base_produced_text_version_index", int, None)
        if not production.strip():
            raise bad_request("production must not be empty", field="production")
        settings = platform().settings
        too_large = oversized(title=title, production=production, max_title_chars=settings.max_title_chars,
                              max_production_chars=settings.max_produced_text_chars)
        if too_large:
            name, limit = too_large
            raise ApiError(413, f"{name} must be at most {limit} characters", field=name)
        with platform().db() as db:
            if body.get("produced_text_pk") is not None:
                produced = _owned_produced_text(db, field(body, "produced_text_pk", int))
                execution = db.get(UserTaskExecution, produced.user_task_execution_fk)
                named = body.get("user_task_execution_pk")
                if named is not None and field(body, "user_task_execution_pk", int) != produced.user_task_execution_fk:
                    # Both given and naming different executions: which one was meant is unknown.
                    raise bad_request("produced_text_pk is not the produced text of this user_task_execution",
                                      field="user_task_execution_pk")
            else:
                execution = owned_execution(db, field(body, "user_task_execution_pk", int))
            require_editable(db, execution)
            try:
                version = append_manual_edit(db, execution, g.user.user_id, production=production, title=title,
                                             base_produced_text_version_index=base)
            except VersionConflict as exc:
                raise ApiError(409, str(exc), field="base_produced_text_version_index",
                               latest_produced_text_version_index=exc.latest_produced_text_version_index) from exc
            except UnknownBaseVersion as exc:  # a version that never existed: not a late edit
                raise bad_request(f"base_produced_text_version_index: {exc}",
                                  field="base_produced_text_version_index") from exc
            db.flush()
            return _version_view(db, version.produced_text, version), 200
