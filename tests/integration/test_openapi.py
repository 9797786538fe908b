"""The published OpenAPI spec covers every REST route, and its docs page is served."""

from __future__ import annotations

from flask import Flask

from backend.errors import JsonErrorApi
from backend.routes import register_routes


def _route_methods() -> set[tuple[str, str]]:
    app = Flask("routes")
    register_routes(JsonErrorApi(app))
    return {(rule.rule, method.lower()) for rule in app.url_map.iter_rules() if rule.endpoint != "static"
            for method in rule.methods - {"HEAD", "OPTIONS"}}


def test_every_route_and_method_is_in_the_spec(live):
    response = live.admin().get(f"{live.base_url}/openapi.json", timeout=10)
    assert response.status_code == 200
    spec = response.json()
    assert spec["openapi"].startswith("3.1")
    documented = {(path, method) for path, ops in spec["paths"].items() for method in ops}
    # spectree only lists methods that carry @api.validate: a route without a model is missing here
    assert documented == _route_methods()
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            assert "200" in op["responses"], (method, path)
            if path not in ("/health", "/login"):  # the only routes anyone may call
                assert op.get("security"), (method, path)
                assert {"400", "401", "404"} <= set(op["responses"]), (method, path)


def test_pk_parameters_are_bounded_like_their_columns(live):
    spec = live.admin().get(f"{live.base_url}/openapi.json", timeout=10).json()
    parameter = next(p for p in spec["paths"]["/order"]["get"]["parameters"] if p["name"] == "user_task_execution_pk")
    assert (parameter["schema"]["minimum"], parameter["schema"]["maximum"]) == (-(2**31), 2**31 - 1)


def test_docs_page_is_served(live):
    http = live.admin()
    redirect = http.get(f"{live.base_url}/docs", allow_redirects=False, timeout=10)
    assert redirect.status_code == 302 and redirect.headers["Location"].endswith("/docs/swagger/")
    page = http.get(f"{live.base_url}/docs/swagger/", timeout=10)
    assert page.status_code == 200 and "/docs/openapi.json" in page.text
    assert http.get(f"{live.base_url}/docs/openapi.json", timeout=10).json()["paths"]
