"""Tools and the reasoning trace: POST /task_tool_execution (approve or decline a tool use),
GET /user_task_execution/reasoning (the execution's decision trace)."""

from __future__ import annotations

import logging

from flask_restful import Resource

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import ApiError
from backend.routes._input import current_user_id, field, json_body, owned_execution, query_int
from backend.routes._submit import submit_follow_up
from backend.validation import USER, api
from mojodex_core.execution.reasoning import trace_page
from mojodex_core.execution.tool_runs import ToolDecisionError, decide

log = logging.getLogger("mojodex.tools")


class TaskToolExecutionResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.ToolDecisionBody, resp=m.answers(m.ToolDecisionOut), security=USER, tags=["tools"])
    def post(self):  # noqa: ANN201
        body = json_body()
        pk = field(body, "task_tool_execution_pk", int)
        approved = field(body, "approved", bool)
        current = platform()
        try:
            with current.db() as db:
                decision = decide(db, current_user_id(), pk, approved)
        except ToolDecisionError as exc:
            raise ApiError(exc.status, str(exc)) from None
        submit_follow_up(current, decision)
        log.info("task_tool_execution %s %s by %s", pk, "approved" if approved else "declined", current_user_id())
        return {"task_tool_execution_pk": pk, "approved": approved,
                "status": "approved" if approved else "declined"}, 200


class UserTaskExecutionReasoningResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.ReasoningQuery, resp=m.answers(m.ReasoningOut), security=USER, tags=["tools"])
    def get(self):  # noqa: ANN201
        pk = query_int("user_task_execution_pk")
        # Paged like GET /user_task_execution, except that without a limit the whole trace comes (the web app's read).
        offset = query_int("offset", 0, minimum=0)
        limit = query_int("limit", None, minimum=1, maximum=100)
        with platform().db() as db:
            owned_execution(db, pk)
            entries, total = trace_page(db, pk, offset=offset, limit=limit)
        return {"user_task_execution_pk": pk, "reasoning": entries, "total": total, "offset": offset,
                "limit": limit}, 200
