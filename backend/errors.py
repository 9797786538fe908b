"""One error shape for every route: {"error": "..."} with the right status."""

from __future__ import annotations

import logging

from flask import jsonify
from flask_restful import Api
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy.exc import DBAPIError, OperationalError
from werkzeug.exceptions import HTTPException

log = logging.getLogger("mojodex.api")


class ApiError(Exception):
    def __init__(self, status: int, message: str, **extra: object) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra

    def body(self) -> dict:
        return {"error": self.message, **self.extra}


def bad_request(message: str, **extra: object) -> ApiError:
    return ApiError(400, message, **extra)


def not_found(what: str) -> ApiError:
    return ApiError(404, f"{what} not found")


def error_response(exc: BaseException):
    if isinstance(exc, ApiError):
        return exc.body(), exc.status
    if isinstance(exc, HTTPException):
        return {"error": exc.description or exc.name}, exc.code or 500
    if isinstance(exc, OperationalError) or (isinstance(exc, DBAPIError) and exc.connection_invalidated):
        # The database is unreachable or refuses connections: the request wrote nothing (its
        # transaction rolled back); the client may retry.
        log.error("database unavailable: %s", str(exc).splitlines()[0][:300])
        return {"error": "the database is unavailable; please retry shortly"}, 503
    if isinstance(exc, RedisConnectionError):
        log.error("redis unavailable: %s", exc)
        return {"error": "the message broker is unavailable; please retry shortly"}, 503
    log.exception("unhandled error: %s", exc)
    return {"error": "internal server error"}, 500


class JsonErrorApi(Api):
    """flask-restful Api whose errors all come out as {"error": ...}."""

    def handle_error(self, e):  # noqa: ANN001
        body, status = error_response(e)
        return self.make_response(body, status)


def register_app_errors(app) -> None:  # noqa: ANN001
    @app.errorhandler(ApiError)
    @app.errorhandler(HTTPException)
    def _json_error(exc):  # noqa: ANN001
        body, status = error_response(exc)
        return jsonify(body), status
