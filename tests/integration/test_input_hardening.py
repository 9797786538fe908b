"""Input that used to answer 500 (issue 10, "What broke" 1, 3 and 5) now answers 400 or 413.

Each case ran against the live server on the suite's database (SQLite, or Postgres when
TEST_DATABASE_URL is set): NUL bytes and lone surrogates in text fields and query strings,
JSON nested 10,000 deep on every body route, a 300-character name_for_system, a menu path that
is too long or holds a NUL, bad start_session payloads, and a 1 MB produced-text title.
"""

from __future__ import annotations

import copy
import json

import pytest
from sqlalchemy import func, select

from mojodex_core.db.models import ProducedTextVersion, Task
from tests.integration._helpers import INPUTS, event_count, messages, new_execution
from tests.support.live import TEST_TASK

NUL, SURROGATE = "a\x00b", "a\ud800b"
BAD_TEXTS = [pytest.param(NUL, id="nul"), pytest.param(SURROGATE, id="surrogate")]
DEEP = 10_000


def _expect(response, status: int = 400) -> dict:
    assert response.status_code == status, (response.status_code, response.text[:300])
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    return body


def _expect_400_with_errors(response) -> dict:
    body = _expect(response, 400)
    assert isinstance(body["errors"], list) and body["errors"], body
    return body


@pytest.fixture
def execution(live):
    client = live.new_user()
    pk, session_id = new_execution(client)
    return client, pk, session_id


@pytest.mark.parametrize("bad", BAD_TEXTS)
def test_text_fields_refuse_nul_and_lone_surrogates(live, llm, execution, bad):
    client, pk, session_id = execution
    cases = [
        ("PUT", "/user_message", {"session_id": session_id, "user_task_execution_pk": pk, "text": bad}),
        ("PUT", "/user_message", {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi",
                                  "message_id": bad}),
        ("PUT", "/user_message", {"session_id": bad, "user_task_execution_pk": pk, "text": "hi"}),
        ("POST", "/user_task_execution_run", {"user_task_execution_pk": pk,
                                              "inputs": {**INPUTS, "email_content": bad}}),
        ("POST", "/user_task_execution_run", {"user_task_execution_pk": pk, "inputs": {**INPUTS, bad: "x"}}),
        ("POST", "/user_task_execution_title", {"user_task_execution_pk": pk, "title": bad}),
        ("POST", "/produced_text", {"user_task_execution_pk": pk, "production": bad}),
        ("POST", "/produced_text", {"user_task_execution_pk": pk, "production": "p", "title": bad}),
        ("PUT", "/user_task_execution", {"user_task_pk": client.user_task_pk(), "platform": bad}),
        ("POST", "/order_event", {"user_task_execution_pk": pk, "event": bad}),
        ("POST", "/text_edit_action", {"produced_text_version_pk": 1, "text_edit_action_pk": 1, "message_id": bad}),
    ]
    for method, path, body in cases:
        _expect_400_with_errors(client.call(method, path, json=body))
    admin = live.admin()
    spec = {**copy.deepcopy(TEST_TASK), "name_for_system": "test_bad_text", "definition_for_system": bad}
    _expect(admin.put(f"{live.base_url}/task", json=spec, timeout=10))
    _expect_400_with_errors(admin.put(f"{live.base_url}/menu_availability", timeout=10, json={
        "menu_id": bad, "item_type": "pizza", "in_stock": False}))
    live.wait_idle()
    assert messages(live, session_id) == [] and event_count(live, session_id) == 0
    assert llm.requests == []
    with live.db() as db:
        assert db.scalar(select(Task).where(Task.name_for_system == "test_bad_text")) is None


def test_query_strings_and_form_fields_refuse_nul(live, execution):
    client, _pk, session_id = execution
    admin = live.admin()
    for response in (
        client.call("GET", "/message", params={"session_id": NUL}),
        client.call("GET", "/message", params={"session_id": session_id, "limit": "1\x00"}),
        client.call("GET", "/menu", params={"menu_id": NUL}),
        client.call("GET", "/user_task", params={"platform": NUL}),
        admin.get(f"{live.base_url}/task", params={"name_for_system": NUL}, timeout=10),
        admin.get(f"{live.base_url}/usage", params={"from": NUL}, timeout=10),
        client.call("POST", "/user_task_execution_title", data={"user_task_execution_pk": "1", "title": NUL}),
    ):
        _expect_400_with_errors(response)


def _body_routes(live) -> list[tuple[str, str]]:
    spec = live.admin().get(f"{live.base_url}/openapi.json", timeout=10).json()
    return [(method.upper(), path) for path, ops in spec["paths"].items()
            for method, op in ops.items() if "requestBody" in op]


@pytest.mark.parametrize("shape", ["array", "object"])
def test_json_nested_10000_deep_is_refused_on_every_body_route(live, execution, shape):
    client, _pk, _session_id = execution
    admin = live.admin()
    body = "[" * DEEP + "]" * DEEP if shape == "array" else '{"a":' * DEEP + "1" + "}" * DEEP
    routes = _body_routes(live)
    assert len(routes) >= 12
    for method, path in routes:
        for http in (client.http, admin):
            response = http.request(method, live.base_url + path, data=body, timeout=10,
                                    headers={"Content-Type": "application/json"})
            assert "nested deeper" in _expect_400_with_errors(response)["error"], (method, path)


def test_json_deeper_than_the_bound_is_refused_in_inputs(live, execution):
    client, pk, session_id = execution
    nested: object = "formal"
    for _ in range(100):
        nested = {"x": nested}
    body = _expect_400_with_errors(client.call("POST", "/user_task_execution_run",
                                               json={"user_task_execution_pk": pk, "inputs": nested}))
    assert "nested deeper than 64" in body["error"]
    assert messages(live, session_id) == []


def test_name_for_system_longer_than_its_column_is_refused(live):
    admin = live.admin()
    spec = {**copy.deepcopy(TEST_TASK), "name_for_system": "t" * 300}
    for method in ("PUT", "POST"):
        body = _expect(admin.request(method, f"{live.base_url}/task", json=spec, timeout=10))
        assert {"path": "name_for_system", "rule": "must be at most 255 characters (got 300)"} in body["errors"]
    spec["task_displayed_data"][0]["name_for_user"] = "N" * 300
    spec["name_for_system"] = "test_long_display_name"
    body = _expect(admin.put(f"{live.base_url}/task", json=spec, timeout=10))
    assert any(e["path"] == "task_displayed_data[0].name_for_user" for e in body["errors"]), body
    with live.db() as db:
        assert db.scalar(select(func.count()).select_from(Task).where(func.length(Task.name_for_system) > 255)) == 0
        assert db.scalar(select(Task).where(Task.name_for_system == "test_long_display_name")) is None


@pytest.mark.parametrize("menu", [
    pytest.param("menus/" + "m" * 300 + ".json", id="300-chars"),
    pytest.param("é" * 200 + ".json", id="name-too-long-for-the-file-system"),
    pytest.param("menus/pizza\x00ria.json", id="nul"),
    pytest.param("menus/pizza\ud800ria.json", id="surrogate"),
])
def test_order_spec_with_a_bad_menu_path_is_refused(live, menu):
    with open(live.platform.settings.tasks_config_dir / "order_pizzeria.json", encoding="utf-8") as spec_file:
        spec = json.load(spec_file)
    spec.update(name_for_system="test_bad_menu_path", menu=menu)
    body = _expect(live.admin().put(f"{live.base_url}/task", json=spec, timeout=10))
    assert "menu" in body["error"]
    with live.db() as db:
        assert db.scalar(select(Task).where(Task.name_for_system == "test_bad_menu_path")) is None


def _version_count(live, pk: int) -> int:
    from mojodex_core.db.models import ProducedText

    with live.db() as db:
        return db.scalar(select(func.count()).select_from(ProducedTextVersion).join(ProducedText)
                         .where(ProducedText.user_task_execution_fk == pk))


def test_produced_text_size_limits(live, execution):
    client, pk, _session_id = execution
    settings = live.platform.settings
    client.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "title": "T", "production": "Body"})
    big_title = {"user_task_execution_pk": pk, "title": "t" * 1_000_000, "production": "Body"}
    assert _expect(client.call("POST", "/produced_text", json=big_title), 413)["field"] == "title"
    big_body = {"user_task_execution_pk": pk, "title": "T", "production": "b" * 1_900_000}
    assert _expect(client.call("POST", "/produced_text", json=big_body), 413)["field"] == "production"
    just_over = {"user_task_execution_pk": pk, "production": "b" * (settings.max_produced_text_chars + 1)}
    assert _expect(client.call("POST", "/produced_text", json=just_over), 413)["field"] == "production"
    at_limit = {"user_task_execution_pk": pk, "title": "t" * settings.max_title_chars,
                "production": "b" * settings.max_produced_text_chars}
    client.ok("POST", "/produced_text", json=at_limit)
    assert _version_count(live, pk) == 2  # the refused edits added no version
    too_big_for_the_server = {"user_task_execution_pk": pk, "production": "b" * 3_000_000}
    _expect(client.call("POST", "/produced_text", json=too_big_for_the_server), 413)


def test_an_execution_title_over_the_limit_is_a_413_whatever_its_length(live, execution):
    """POST /produced_text answered a too-long title with a 413, POST /user_task_execution_title with a 400 past
    255 characters (its body's schema) and a 413 between the setting and 255."""
    client, pk, _session_id = execution
    limit = live.platform.settings.max_title_chars
    for title in ("t" * (limit + 1), "t" * 256, "t" * 10_000):
        answer = client.call("POST", "/user_task_execution_title", json={"user_task_execution_pk": pk, "title": title})
        assert _expect(answer, 413)["field"] == "title"
    assert _expect(client.call("POST", "/user_task_execution_title", json={"user_task_execution_pk": pk,
                                                                            "title": "  "}), 400)["field"] == "title"
    client.ok("POST", "/user_task_execution_title", json={"user_task_execution_pk": pk, "title": "t" * limit})


@pytest.mark.parametrize("payload", [
    pytest.param({"session_id": NUL}, id="nul-session-id"),
    pytest.param({"session_id": SURROGATE}, id="surrogate-session-id"),
    pytest.param({"session_id": "s" * 65}, id="session-id-too-long"),
    pytest.param({"last_seq": 2**31}, id="last-seq-2**31"),
    pytest.param({"last_seq": -(2**63) - 1}, id="last-seq-below-int64"),
    pytest.param({"last_seq": 2**64}, id="last-seq-2**64"),
    pytest.param({"last_seq": -1}, id="last-seq-negative"),
    pytest.param({"last_seq": True}, id="last-seq-boolean"),
    pytest.param({"last_seq": 1.5}, id="last-seq-fraction"),
    pytest.param({"session_id": None}, id="no-session-id"),
    pytest.param(["not", "an", "object"], id="not-an-object"),
])
def test_bad_start_session_payloads_get_an_error_acknowledgement(live, execution, payload):
    client, _pk, session_id = execution
    socket = client.socket()
    try:
        if isinstance(payload, dict):
            payload = {"session_id": session_id, "last_seq": 0, **payload}
        answer = socket.client.call("start_session", payload, timeout=10)
        assert isinstance(answer, dict) and answer["error"], answer
        assert isinstance(answer["errors"], list) and answer["errors"], answer
        # the handler did not crash: the same socket still joins its session
        assert socket.start_session(session_id, 0) == {"session_id": session_id, "replayed": 0}
    finally:
        socket.close()
