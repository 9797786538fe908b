"""GET/PUT /user_profile: what the user tells the assistant about themselves (owner only)."""

from __future__ import annotations

import logging

from flask import request
from flask_restful import Resource

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import bad_request
from backend.routes._input import current_user_id
from backend.validation import USER, api
from mojodex_core.knowledge import ProfileError, get_profile, profile_view, update_profile

log = logging.getLogger("mojodex.profile")


class UserProfileResource(Resource):
    method_decorators = [user_required]

    @api.validate(resp=m.answers(m.UserProfileOut), security=USER, tags=["profile"])
    def get(self):  # noqa: ANN201
        with platform().db() as db:
            return {"user_profile": profile_view(get_profile(db, current_user_id()))}, 200

    @api.validate(json=m.UserProfileBody, resp=m.answers(m.UserProfileOut), security=USER, tags=["profile"])
    def put(self):  # noqa: ANN201
        body = request.get_json(silent=True)
        try:
            with platform().db() as db:
                profile = update_profile(db, current_user_id(), body)
                view = profile_view(profile)
        except ProfileError as exc:  # raised before any write: the transaction rolls back
            raise bad_request(f"{exc.field}: {exc.message}", field=exc.field) from exc
        log.info("user profile updated for %s (%s)", current_user_id(),
                 ", ".join(k for k in view if k != "updated_at" and view[k] is not None) or "empty")
        return {"user_profile": view}, 200
