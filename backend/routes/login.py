"""Sign-in for people: POST /login (email + password -> a fresh API token, which expires after
MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS), POST /logout
(revokes the calling token), GET /user (who the token belongs to)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from flask import g, request
from flask_restful import Resource
from sqlalchemy import select

from backend import api_models as m
from backend.auth import token_from_header, user_required
from backend.context import platform
from backend.errors import ApiError
from backend.rate_limits import client_address, rate_limits
from backend.routes._input import field, json_body
from backend.validation import USER, api
from mojodex_core.db.models import ApiToken
from mojodex_core.passwords import check_password
from mojodex_core.timestamps import iso_utc
from mojodex_core.users import hash_token, issue_token

log = logging.getLogger("mojodex.login")


def _profile(user) -> dict:  # noqa: ANN001
    return {"user_id": user.user_id, "name": user.name, "email": user.email, "language_code": user.language_code}


class LoginResource(Resource):
    @api.validate(json=m.LoginBody, resp=m.answers(m.LoginOut), tags=["users"])
    def post(self):  # noqa: ANN201
        body = json_body()
        email = field(body, "email", str).strip().lower()
        password = field(body, "password", str)
        address = client_address()
        # Failed sign-ins are counted per email and per address with the other rate limits
        # (backend/rate_limits.py: Redis when configured); past a limit, 429 before any check.
        limits = rate_limits()
        limits.before_login(email, address)
        with platform().db() as db:
            user = check_password(db, email, password)
            if user is None:
                limits.login_failed(email, address)
                log.info("login failed for %s from %s", email, address)
                raise ApiError(401, "wrong email or password")
            expires_at = datetime.now(UTC) + timedelta(days=platform().settings.login_token_lifetime_days)
            token = issue_token(db, user, label="login", expires_at=expires_at)
            profile = _profile(user)
        log.info("login %s from %s", email, address)
        return {"token": token, "expires_at": iso_utc(expires_at), "user": profile}, 200


class LogoutResource(Resource):
    method_decorators = [user_required]

    @api.validate(resp=m.answers(m.LogoutOut), security=USER, tags=["users"])
    def post(self):  # noqa: ANN201
        token = token_from_header(request.headers.get("Authorization"))
        with platform().db() as db:
            row = db.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
            # Only a sign-in's own token is revoked: an API client's long-lived token is kept.
            revoked = row is not None and row.label == "login"
            if revoked:
                row.revoked_at = datetime.now(UTC)
        return {"revoked": revoked}, 200


class UserResource(Resource):
    method_decorators = [user_required]

    @api.validate(resp=m.answers(m.UserOut), security=USER, tags=["users"])
    def get(self):  # noqa: ANN201
        return _profile(g.user), 200
