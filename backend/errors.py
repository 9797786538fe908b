"""One error shape for every route: {"error": "..."} with the right status."""

from __future__ import annotations

import logging

from flask import has_request_context, jsonify, request
from flask_restful import Api
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from werkzeug.exceptions import HTTPException

log = logging.getLogger("mojodex.api")

DATABASE_UNAVAILABLE = "database unavailable"


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None, **extra: object) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.extra = extra

    def body(self) -> dict:
        return {"error": self.message, **self.extra}


def bad_request(message: str, **extra: object) -> ApiError:
    return ApiError(400, message, **extra)


def not_found(what: str) -> ApiError:
    return ApiError(404, f"{what} not found")


def unavailable(message: str) -> ApiError:
    """503: the server cannot do it now; the client tries again after Retry-After seconds."""
    return ApiError(503, message, headers={"Retry-After": "5"})


def database_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached (refused, gone, file unopenable, pool exhausted), as opposed
    to a query the database refused."""
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeoutError):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def describe_database_error(exc: BaseException) -> str:
    """One short line: the driver's first line of the error, never the SQL nor its parameters."""
    orig = getattr(exc, "orig", None) or exc
    first = (str(orig).strip().splitlines() or [""])[0]
    return f"{type(orig).__name__}: {first[:200]}"


def error_response(exc: BaseException):
    if isinstance(exc, ApiError):
        return exc.body(), exc.status, exc.headers
    if isinstance(exc, HTTPException):
        return {"error": exc.description or exc.name}, exc.code or 500, {}
    if database_unavailable(exc):
        # One line per request: a traceback per request would bury the log during an outage. The
        # request wrote nothing (its transaction rolled back); the client may retry.
        where = f"{request.method} {request.path}" if has_request_context() else "outside a request"
        log.error("%s: %s (%s)", DATABASE_UNAVAILABLE, where, describe_database_error(exc))
        return {"error": DATABASE_UNAVAILABLE}, 503, {"Retry-After": "5"}
    if isinstance(exc, RedisConnectionError):
        log.error("redis unavailable: %s", exc)
        return {"error": "the message broker is unavailable; please retry shortly"}, 503, {"Retry-After": "5"}
    log.exception("unhandled error: %s", exc)
    return {"error": "internal server error"}, 500, {}


class JsonErrorApi(Api):
    """flask-restful Api whose errors all come out as {"error": ...}."""

    def handle_error(self, e):  # noqa: ANN001
        body, status, headers = error_response(e)
        return self.make_response(body, status, headers)


def register_app_errors(app) -> None:  # noqa: ANN001
    @app.errorhandler(ApiError)
    @app.errorhandler(HTTPException)
    @app.errorhandler(DBAPIError)
    @app.errorhandler(PoolTimeoutError)
    @app.errorhandler(RedisConnectionError)
    def _json_error(exc):  # noqa: ANN001
        body, status, headers = error_response(exc)
        return jsonify(body), status, headers
