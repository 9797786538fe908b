"""Request validation: pydantic models checked by spectree, which publishes them as OpenAPI 3.1.

Every route method carries ``@api.validate(query=..., json=..., resp=...)``. A request that does
not fit its model answers 400 ``{"error", "field", "errors"}`` before the route runs. Before any
route, a guard refuses what no model may see: JSON nested deeper than the configured bound (a
10,000-deep body would otherwise end in a RecursionError, a 500), and NUL bytes or unpaired
surrogates anywhere in a body or query string (Postgres refuses NUL; a lone surrogate is not
UTF-8). The spec is served at /openapi.json, with documentation pages under /docs/.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from flask import Flask, current_app, request
from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints
from spectree import SecurityScheme, SpecTree
from spectree.models import SecuritySchemeData
from spectree.plugins.flask_plugin import FlaskPlugin
from werkzeug.exceptions import BadRequest

from backend.auth import authenticate_deferred, deferred_token
from backend.errors import ApiError

# Every pk, seq and index is a 32-bit INTEGER column: a larger value can name no row, and the
# database driver rejects it (a 500) instead of finding nothing.
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
DEFAULT_MAX_JSON_DEPTH = 64


def text_problem(value: str) -> str | None:
    """Why a text cannot be stored, or None."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain unpaired surrogates"
    return None


def _storable(value: str) -> str:
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    return value


def Text(max_length: int | None = None, min_length: int = 0) -> Any:  # noqa: N802 - reads as a type
    """A string that Postgres and SQLite can store, at most ``max_length`` characters (the column's)."""
    return Annotated[
        str, StringConstraints(min_length=min_length, max_length=max_length), AfterValidator(_storable)
    ]


# An INTEGER column's value (a pk, a seq, an index): range-checked, booleans refused.
# (The bounds come before the validator so the schema shows them as minimum/maximum.)
Int32 = Annotated[int, Field(ge=INT_MIN, le=INT_MAX), BeforeValidator(no_bool)]
# A row's primary key (the examples name the first rows: clients and the fuzzer start from them).
Pk = Annotated[Int32, Field(examples=[1, 2])]


# The parts of a pydantic error location that name a union's member or a dict's key position
# ("dict[constrained-str,any]", "function-after[...]", "[key]", "str"), not a field of the request.
_NOT_A_FIELD = re.compile(r"[\[\]]|^(function|constrained)-|^(str|int|float|bool|none|list|dict)$")


def _loc(loc: tuple) -> str | None:
    parts = [str(p) for p in loc if not (isinstance(p, str) and _NOT_A_FIELD.search(p))]
    return ".".join(parts) if parts else None


def issue(field: str | None, rule: str, kind: str | None = None) -> dict[str, Any]:
    """One entry of ``errors``: the shape the task and menu loaders use ({path, rule})."""
    entry: dict[str, Any] = {"path": field or "<root>", "rule": rule}
    if kind:
        entry["type"] = kind
    return entry


# pydantic's words for a field no model has: "unknown field", as the profile and task loaders say.
UNKNOWN_FIELD = "unknown field"


def validation_error(exc: Any, where: str = "") -> ApiError:
    """One 400 for a pydantic ValidationError: the first problem in ``error``, all in ``errors``."""
    raw = exc.errors(include_url=False, include_input=False, include_context=False)
    for err in raw:
        if err.get("type") == "extra_forbidden":
            err["msg"] = UNKNOWN_FIELD
    errors = [issue(_loc(err.get("loc", ())), err.get("msg", "invalid"), err.get("type")) for err in raw]
    first = raw[0] if raw else {"loc": (), "msg": "invalid request"}
    field = _loc(first.get("loc", ()))
    if field is None:
        text = f"request {where or 'body'}: {first['msg']}"
        if first.get("type") in ("model_type", "dict_type"):
            text = f"request {where or 'body'} must be a JSON object"
    else:
        text = f"{field}: {first['msg']}"
    return ApiError(400, text, field=field, errors=errors)


def _before(req, resp, req_validation_error, instance, model_adapter) -> None:  # noqa: ANN001, ARG001
    if req_validation_error is not None:
        if deferred_token() is not None:
            authenticate_deferred()  # a route that reads its token itself: 401 comes before 400
        raise validation_error(req_validation_error)


class _Plugin(FlaskPlugin):
    """Response models document the API (schemathesis checks them); they are not re-validated at
    run time, where a mismatch would turn a good answer into a 500."""

    def validate_response(self, resp, resp_model, skip_validation, force_resp_serialize):  # noqa: ANN001, ANN201
        return super().validate_response(resp, None, True, force_resp_serialize)


api = SpecTree(
    backend=_Plugin,
    mode="strict",
    title="Mojodex platform API",
    version="1",
    description=(
        "REST API of the task-execution platform. Users send `Authorization: Bearer <token>`; admin "
        "routes take the admin secret in the same header. Every error is `{\"error\": ...}`; a request "
        "that does not fit its model also names the `field` and lists all `errors`."
    ),
    path="docs",
    validation_error_status=400,
    before=_before,
    annotations=False,
    security_schemes=[
        SecurityScheme(name="userToken", data=SecuritySchemeData(type="http", scheme="bearer")),
        SecurityScheme(
            name="adminSecret",
            data=SecuritySchemeData(
                type="apiKey", name="Authorization", field_in="header",
                description="The admin secret (MOJODEX_ADMIN_SECRET), bare or after 'Bearer '.",
            ),
        ),
    ],
)
USER = {"userToken": []}
ADMIN = {"adminSecret": []}


def _depth_problem(data: Any, max_depth: int) -> str | None:
    """Walks a parsed body without recursion: too deep, or a string that cannot be stored."""
    stack = [(data, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, (dict, list)) and depth > max_depth:
            return f"{path or 'body'}: JSON nested deeper than {max_depth} levels"
        if isinstance(value, dict):
            for key, item in value.items():
                sub = f"{path}.{key}" if path else str(key)
                problem = text_problem(key)
                if problem:
                    return f"{sub!r}: a key {problem}"
                stack.append((item, depth + 1, sub))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, f"{path}[{i}]") for i, item in enumerate(value))
        elif isinstance(value, str):
            problem = text_problem(value)
            if problem:
                return f"{path or 'body'}: {problem}"
    return None


def _field_of(message: str) -> str | None:
    head = message.split(":", 1)[0]
    return None if head == "body" else head.strip("'")


def guard_request() -> None:
    """Refuses, before any route, bodies and query strings that no model may see."""
    fields = request.args.items(multi=True)
    if request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        fields = [*fields, *request.form.items(multi=True)]  # form posts reach the routes too
    for key, value in fields:
        problem = text_problem(key) or text_problem(value)
        if problem:
            raise ApiError(400, f"{key}: {problem}", field=key, errors=[issue(key, problem)])
    has_body = request.content_length or request.headers.get("Transfer-Encoding")
    if not request.is_json or not has_body:
        return
    try:
        # Parsed once here: Flask caches the result, so the route's model and the route reuse it.
        data = request.get_json()
    except BadRequest:
        return  # not JSON: the route's model answers with what it expected
    except RecursionError:
        max_depth = current_app.config.get("MOJODEX_MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH)
        message = f"body: JSON nested deeper than {max_depth} levels"
        raise ApiError(400, message, field=None, errors=[issue(None, message)]) from None
    problem = _depth_problem(data, current_app.config.get("MOJODEX_MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH))
    if problem:
        field = _field_of(problem)
        raise ApiError(400, problem, field=field, errors=[issue(field, problem.split(": ", 1)[-1])])


def init_validation(app: Flask, max_json_depth: int = DEFAULT_MAX_JSON_DEPTH) -> None:
    """Wires the guard, the spec (/openapi.json) and the docs pages (/docs/swagger/, /docs/redoc/)."""
    app.config["MOJODEX_MAX_JSON_DEPTH"] = max_json_depth
    # spectree answers through Flask's JSON provider: keep the keys in the order the routes wrote them.
    app.json.sort_keys = False
    app.before_request(guard_request)
    api.register(app)
    app.add_url_rule("/openapi.json", "openapi_spec", lambda: current_app.json.response(api.spec))
    app.add_url_rule("/docs", "openapi_docs_index", lambda: current_app.redirect("/docs/swagger/"))
