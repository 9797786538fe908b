"""Who is calling: a user (Bearer token) or the admin (shared secret).

Failed authentications are counted per client address and per token prefix; past the limit
the caller gets 429 before its credentials are even looked at (backend/rate_limits.py).
"""

from __future__ import annotations

import hmac
from functools import wraps
from typing import Callable

from flask import g, request

from backend.context import platform
from backend.errors import ApiError
from backend.rate_limits import client_address, rate_limits
from mojodex_core.db import read_connection
from mojodex_core.users import TokenHolder, TokenRead, read_token

INVALID_TOKEN = "missing or invalid token"
TOKEN_EXPIRED = "token expired"


def token_from_header(value: str | None) -> str:
    if not value:
        return ""
    value = value.strip()
    # Mojodex clients send the bare token; others send "Bearer <token>".
    if value.lower().startswith("bearer "):
        return value[7:].strip()
    return value


def authenticate_token(token: str) -> TokenRead:
    """Every user route's first step: one Core query on a pooled connection, no ORM session,
    which also says why a refused token is refused."""
    if not token:
        return TokenRead()
    with read_connection(platform().engine) as conn:
        return read_token(conn, token)


def is_admin_secret(given: str) -> bool:
    expected = platform().settings.admin_secret
    return bool(given) and hmac.compare_digest(given.encode(), expected.encode())


def require_user(token: str):  # noqa: ANN201
    """The token's user, or 401 (counted as a failed authentication), or 429 past the limit."""
    rate_limits().before_authentication(client_address(), token)
    return _holder_or_401(authenticate_token(token), token)


def _holder_or_401(read: TokenRead, token: str) -> TokenHolder:
    """The token's holder as read, or 401, counted as a failed authentication: ``token expired``
    for a sign-in's token past its expiry (the client signs in again), else ``missing or invalid
    token``."""
    if read.holder is None:
        rate_limits().authentication_failed(client_address(), token)
        raise ApiError(401, refusal(read))
    return read.holder


def refusal(read: TokenRead) -> str:
    """What a token that did not authenticate is told."""
    return TOKEN_EXPIRED if read.expired else INVALID_TOKEN


def token_checked_by_route(fn: Callable) -> Callable:
    """``user_required`` for a route that reads its caller's token in its own first statement
    (PUT /user_message: the token and the route's check in one round trip). The lockout is
    checked here as for every user route; the token waits in ``g`` for ``settle_user``. A body
    that fails validation authenticates first (backend/validation.py): a bad token still answers
    401 before a bad body's 400."""

    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        token = token_from_header(request.headers.get("Authorization"))
        rate_limits().before_authentication(client_address(), token)
        g.deferred_token = token
        try:
            return fn(*args, **kwargs)
        finally:
            g.pop("deferred_token", None)  # settled or not, it is this request's only

    return wrapper


def deferred_token() -> str | None:
    """The token a ``token_checked_by_route`` route has not settled yet (None: none waits)."""
    return g.get("deferred_token")


def settle_user(read: TokenRead) -> TokenHolder:
    """The deferred token's holder as read by the route, or 401, counted as a failed
    authentication as in ``require_user``."""
    g.user = _holder_or_401(read, g.pop("deferred_token", ""))
    return g.user


def authenticate_deferred() -> TokenHolder:
    """The deferred token's holder, read on its own (a route's path that has no statement to share)."""
    return settle_user(authenticate_token(deferred_token() or ""))


def require_admin(given: str) -> None:
    """Every admin request counts against the admin limit; a wrong secret is a failed authentication."""
    limits, address = rate_limits(), client_address()
    limits.before_authentication(address, given)
    limits.admin_request(address)
    if not is_admin_secret(given):
        limits.authentication_failed(address, given)
        raise ApiError(403, "admin secret required")


def user_required(fn: Callable) -> Callable:
    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        g.user = require_user(token_from_header(request.headers.get("Authorization")))
        return fn(*args, **kwargs)

    return wrapper


def admin_required(fn: Callable) -> Callable:
    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        require_admin(token_from_header(request.headers.get("Authorization")))
        return fn(*args, **kwargs)

    return wrapper
