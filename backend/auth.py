"""Who is calling: a user (Bearer token) or the admin (shared secret)."""

from __future__ import annotations

import hmac
from functools import wraps
from typing import Callable

from flask import g, request

from backend.context import platform
from backend.errors import ApiError
from mojodex_core.users import TokenHolder, token_holder


def token_from_header(value: str | None) -> str:
    if not value:
        return ""
    value = value.strip()
    # Mojodex clients send the bare token; others send "Bearer <token>".
    if value.lower().startswith("bearer "):
        return value[7:].strip()
    return value


def authenticate_token(token: str) -> TokenHolder | None:
    """Every user route's first step: one Core query on a pooled connection, no ORM session."""
    if not token:
        return None
    with platform().engine.connect() as conn:
        return token_holder(conn, token)


def user_required(fn: Callable) -> Callable:
    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        user = authenticate_token(token_from_header(request.headers.get("Authorization")))
        if user is None:
            raise ApiError(401, "missing or invalid token")
        g.user = user
        return fn(*args, **kwargs)

    return wrapper


def admin_required(fn: Callable) -> Callable:
    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        given = token_from_header(request.headers.get("Authorization"))
        expected = platform().settings.admin_secret
        if not given or not hmac.compare_digest(given.encode(), expected.encode()):
            raise ApiError(403, "admin secret required")
        return fn(*args, **kwargs)

    return wrapper
