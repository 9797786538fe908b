"""GET /usage?from=&to=&group_by=user|task|day|model (admin): tokens, calls, errors, latency, cost."""

from __future__ import annotations

from flask import request
from flask_restful import Resource

from backend import api_models as m
from backend.auth import admin_required
from backend.context import platform
from backend.errors import bad_request
from backend.validation import ADMIN, api
from mojodex_core.usage import UsageParamError, parse_usage_query, usage_report


class UsageResource(Resource):
    method_decorators = [admin_required]

    @api.validate(query=m.UsageQueryModel, resp=m.answers(m.UsageOut), security=ADMIN, tags=["usage"])
    def get(self):  # noqa: ANN201
        try:
            query = parse_usage_query(request.args.to_dict())
        except UsageParamError as exc:
            raise bad_request(str(exc), field=exc.field) from exc
        # This process's calls are stored a moment after their turn answered: store them now, so a
        # report asked right after a turn counts it, as it did when each call wrote its row at once.
        platform().flush_llm_calls()
        with platform().db() as db:
            return usage_report(db, query), 200
