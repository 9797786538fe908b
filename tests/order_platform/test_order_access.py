"""Ownership on every order route, admin-only menu writes, task types without a handler, Idle is final."""

from __future__ import annotations

import uuid

import pytest

from mojodex_core.db import transaction
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from tests.order_platform._helpers import customer, message_count, open_order
from tests.support.live import TEST_TASK


def test_another_users_order_is_not_found_on_every_route(orders):
    owner, intruder = customer(orders), customer(orders)
    chat = open_order(owner)
    try:
        attempts = [
            ("GET", "/order", {"params": {"user_task_execution_pk": chat.pk}}),
            ("GET", "/order/audit", {"params": {"user_task_execution_pk": chat.pk}}),
            ("POST", "/order_event", {"json": {"user_task_execution_pk": chat.pk, "event": "silence"}}),
            ("POST", "/user_task_execution_run", {"json": {"user_task_execution_pk": chat.pk}}),
            ("PUT", "/user_message", {"json": {"session_id": chat.session_id, "user_task_execution_pk": chat.pk,
                                               "text": "a plain bagel", "message_id": uuid.uuid4().hex}}),
        ]
        for method, path, kwargs in attempts:
            response = intruder.call(method, path, **kwargs)
            assert response.status_code == 404, (method, path, response.status_code, response.text)
            assert "error" in response.json()
        before = message_count(orders, chat.session_id)
        assert before == 1  # the greeting only: nothing the intruder sent was stored
        # Missing pks look the same.
        assert intruder.call("GET", "/order", params={"user_task_execution_pk": 999999}).status_code == 404
    finally:
        chat.close()


def test_order_routes_need_a_token_and_menu_writes_need_the_admin_secret(orders):
    import requests

    base = orders.base_url
    assert requests.get(base + "/order", params={"user_task_execution_pk": 1}, timeout=10).status_code == 401
    assert requests.get(base + "/menu", params={"menu_id": "bagel_shop"}, timeout=10).status_code == 401
    user = customer(orders)
    assert user.call("PUT", "/menu", json={"id": "x"}).status_code == 403
    assert user.call("PUT", "/menu_availability", json={"menu_id": "bagel_shop", "item_type": "bagel",
                                                        "in_stock": False}).status_code == 403
    # Users may read a menu (what a shop shows its customers); the admin too.
    menu = user.ok("GET", "/menu", params={"menu_id": "bagel_shop"})
    assert menu["menu_id"] == "bagel_shop" and "bagel" in menu["menu"]["item_types"]
    assert orders.admin().get(base + "/menu", params={"menu_id": "bagel_shop"}, timeout=10).status_code == 200
    assert user.call("GET", "/menu", params={"menu_id": "no_such_menu"}).status_code == 404


def test_an_order_route_on_an_instruct_execution_is_a_clear_400(orders):
    user = orders.new_user(tasks=["test_email"])
    pk = user.new_execution()["user_task_execution_pk"]
    response = user.call("GET", "/order", params={"user_task_execution_pk": pk})
    assert response.status_code == 400 and "not an order" in response.json()["error"]


WORKFLOW_TASK = {
    "task_type": "workflow",
    "platforms": ["webapp"],
    "name_for_system": "test_workflow_no_handler",
    "definition_for_system": "A workflow the platform cannot run yet",
    "output_type": "document",
    "icon": "🧭",
    "steps": [{"name_for_system": "step_one", "definition_for_system": "Do one thing",
               "step_displayed_data": [{"language_code": "en", "name_for_user": "One",
                                        "definition_for_user": "One step"}]}],
    "task_displayed_data": [{"language_code": "en", "name_for_user": "Workflow", "definition_for_user": "A workflow",
                             "json_input": TEST_TASK["task_displayed_data"][0]["json_input"]}],
}


@pytest.fixture
def no_workflow_handler(orders):  # noqa: ANN001, ANN201
    """The platform as if workflows could not run (the registry without its "workflow" handler)."""
    handlers = orders.platform.dispatcher._handlers
    saved = handlers.pop("workflow")
    try:
        yield
    finally:
        handlers["workflow"] = saved


def test_a_task_type_without_a_turn_handler_is_refused_and_nothing_is_stored(orders, llm, no_workflow_handler):
    with transaction(orders.platform.session_factory) as db:
        store_spec(db, validate_spec(WORKFLOW_TASK), "upsert")
    user = orders.new_user(tasks=["test_workflow_no_handler"])
    created = user.new_execution("test_workflow_no_handler")
    pk, session_id = created["user_task_execution_pk"], created["session_id"]
    response = user.call("PUT", "/user_message", json={"session_id": session_id, "user_task_execution_pk": pk,
                                                       "text": "hello", "message_id": "m1"})
    assert response.status_code == 422
    assert "workflow" in response.json()["error"] and "handler" in response.json()["error"]
    response = user.call("POST", "/user_task_execution_run", json={
        "user_task_execution_pk": pk, "inputs": {"email_content": "x", "tone": "formal"}})
    assert response.status_code == 422
    assert message_count(orders, session_id) == 0
    assert llm.requests == []  # never an instruct turn


def test_a_workflow_message_reaching_the_runner_fails_visibly_not_as_an_instruct_turn(orders, llm,
                                                                                      no_workflow_handler):
    """A message accepted before the handler check (e.g. stored before an upgrade) gets an error event."""
    from mojodex_core.execution.intake import accept_user_message
    from mojodex_core.execution.jobs import TurnJob

    with transaction(orders.platform.session_factory) as db:
        store_spec(db, validate_spec(WORKFLOW_TASK), "upsert")
    user = orders.new_user(tasks=["test_workflow_no_handler"])
    created = user.new_execution("test_workflow_no_handler")
    pk, session_id = created["user_task_execution_pk"], created["session_id"]
    socket = user.socket(session_id)
    try:
        platform = orders.platform
        accepted = accept_user_message(platform.session_factory, platform.events, session_id=session_id,
                                       user_task_execution_pk=pk, text="hello", message_id="m1")
        platform.runner.submit(TurnJob(session_id=session_id, message_pk=accepted.message_pk))
        error = socket.wait_event("error")[0]
        assert "workflow" in error["error"] and error["retryable"] is False
        assert llm.requests == []
    finally:
        socket.close()
