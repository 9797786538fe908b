"""Bad input on every route: 400 naming the field, and nothing stored (no message, no event, no job)."""

from __future__ import annotations

import copy

from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from tests.integration._helpers import INPUTS, event_count, execution_row, messages, new_execution
from tests.support.live import TEST_TASK


def _expect_400(client, method: str, path: str, field: str | None, **kwargs) -> None:
    response = client.call(method, path, **kwargs)
    assert response.status_code == 400, (method, path, kwargs, response.status_code, response.text)
    body = response.json()
    if field is not None:
        assert body.get("field") == field, (method, path, kwargs, body)
        assert field.split(".")[-1] in body["error"], body


def _assert_nothing_stored(live, llm, pk: int, session_id: str) -> None:
    live.wait_idle()
    assert messages(live, session_id) == []
    assert event_count(live, session_id) == 0
    assert llm.requests == []
    row = execution_row(live, pk)
    assert (row.status, row.start_date, row.json_input_values, row.title) == ("created", None, {}, None)


def test_bad_run_inputs(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    run = "/user_task_execution_run"
    cases = [
        ({}, "user_task_execution_pk"),
        ({"user_task_execution_pk": "abc", "inputs": INPUTS}, "user_task_execution_pk"),
        ({"user_task_execution_pk": True, "inputs": INPUTS}, "user_task_execution_pk"),
        ({"user_task_execution_pk": pk}, "inputs"),
        ({"user_task_execution_pk": pk, "inputs": "write an email"}, "inputs"),
        ({"user_task_execution_pk": pk, "inputs": []}, "inputs"),  # was: "inputs.dict[function-after[...]...]"
        ({"user_task_execution_pk": pk, "inputs": {"k" * 256: "v"}}, "inputs." + "k" * 256),
        ({"user_task_execution_pk": pk, "inputs": {"tone": "formal"}}, "inputs.email_content"),
        ({"user_task_execution_pk": pk, "inputs": {"email_content": "  ", "tone": "formal"}}, "inputs.email_content"),
        ({"user_task_execution_pk": pk, "inputs": {"email_content": "x"}}, "inputs.tone"),
        ({"user_task_execution_pk": pk, "inputs": {**INPUTS, "colour": "red"}}, "inputs.colour"),
        ({"user_task_execution_pk": pk, "inputs": {**INPUTS, "tone": "angry"}}, "inputs.tone"),
        ({"user_task_execution_pk": pk, "inputs": {**INPUTS, "email_content": 5}}, "inputs.email_content"),
    ]
    for body, field in cases:
        _expect_400(client, "POST", run, field, json=body)
    _expect_400(client, "POST", run, None, json=[pk])
    _expect_400(client, "POST", run, None, data="not json", headers={"Content-Type": "application/json"})
    unknown = client.call("POST", run, json={"user_task_execution_pk": pk, "inputs": {**INPUTS, "colour": "red"}})
    assert "email_content" in unknown.json()["error"]  # the error lists the known inputs
    dropdown = client.call("POST", run, json={"user_task_execution_pk": pk, "inputs": {**INPUTS, "tone": "angry"}})
    assert "formal" in dropdown.json()["error"] and "friendly" in dropdown.json()["error"]
    _assert_nothing_stored(live, llm, pk, session_id)


def test_bad_user_messages(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    other_pk, _other_session = new_execution(client)
    ok = {"session_id": session_id, "user_task_execution_pk": pk, "text": "hello"}
    cases = [
        ({k: v for k, v in ok.items() if k != "session_id"}, "session_id"),
        ({k: v for k, v in ok.items() if k != "user_task_execution_pk"}, "user_task_execution_pk"),
        ({k: v for k, v in ok.items() if k != "text"}, "text"),
        ({**ok, "session_id": 12}, "session_id"),
        ({**ok, "user_task_execution_pk": "x"}, "user_task_execution_pk"),
        ({**ok, "text": 5}, "text"),
        ({**ok, "text": ["hello"]}, "text"),
        ({**ok, "text": "   "}, "text"),
        ({**ok, "text": "x" * 50_001}, "text"),
        ({**ok, "message_id": 7}, "message_id"),
        ({**ok, "message_id": "m" * 129}, "message_id"),
        ({**ok, "user_task_execution_pk": other_pk}, "session_id"),  # not this execution's session
    ]
    for body, field in cases:
        _expect_400(client, "PUT", "/user_message", field, json=body)
    _assert_nothing_stored(live, llm, pk, session_id)
    _assert_nothing_stored(live, llm, other_pk, _other_session)


def test_bad_reads_and_edits(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    cases = [
        ("PUT", "/user_task_execution", "user_task_pk", {"json": {}}),
        ("PUT", "/user_task_execution", "user_task_pk", {"json": {"user_task_pk": "email"}}),
        ("PUT", "/user_task_execution", "platform", {"json": {"user_task_pk": client.user_task_pk(),
                                                              "platform": "tv"}}),
        ("GET", "/user_task_execution", "user_task_execution_pk", {"params": {"user_task_execution_pk": "x"}}),
        ("GET", "/user_task_execution", "offset", {"params": {"offset": -1}}),
        ("GET", "/user_task_execution", "limit", {"params": {"limit": 0}}),
        ("GET", "/user_task_execution", "limit", {"params": {"limit": 101}}),
        ("DELETE", "/user_task_execution", "user_task_execution_pk", {"json": {}}),
        ("DELETE", "/user_task_execution", "user_task_execution_pk", {"params": {"user_task_execution_pk": "x"}}),
        ("POST", "/user_task_execution_title", "user_task_execution_pk", {"json": {"title": "t"}}),
        ("POST", "/user_task_execution_title", "title", {"json": {"user_task_execution_pk": pk}}),
        ("POST", "/user_task_execution_title", "title", {"json": {"user_task_execution_pk": pk, "title": 5}}),
        ("POST", "/user_task_execution_title", "title", {"json": {"user_task_execution_pk": pk, "title": " "}}),
        ("GET", "/message", "session_id", {"params": {}}),
        ("GET", "/message", "after_seq", {"params": {"session_id": session_id, "after_seq": -1}}),
        ("GET", "/message", "after_seq", {"params": {"session_id": session_id, "after_seq": "last"}}),
        ("GET", "/message", "limit", {"params": {"session_id": session_id, "limit": 0}}),
        ("GET", "/message", "limit", {"params": {"session_id": session_id, "limit": 501}}),
        ("GET", "/user_task_execution_produced_text", "user_task_execution_pk", {"params": {}}),
        ("GET", "/user_task_execution_produced_text", "produced_text_version_index",
         {"params": {"user_task_execution_pk": pk, "produced_text_version_index": 0}}),
        ("GET", "/produced_text", "produced_text_pk", {"params": {}}),
        ("GET", "/produced_text", "produced_text_pk", {"params": {"produced_text_pk": "x"}}),
        ("POST", "/produced_text", "production", {"json": {"user_task_execution_pk": pk}}),
        ("POST", "/produced_text", "production", {"json": {"user_task_execution_pk": pk, "production": 5}}),
        ("POST", "/produced_text", "production", {"json": {"user_task_execution_pk": pk, "production": "  "}}),
        ("POST", "/produced_text", "user_task_execution_pk", {"json": {"production": "text"}}),
        ("POST", "/produced_text", "title", {"json": {"user_task_execution_pk": pk, "production": "p",
                                                      "title": 5}}),
    ]
    for method, path, field, kwargs in cases:
        _expect_400(client, method, path, field, **kwargs)
    _assert_nothing_stored(live, llm, pk, session_id)
    view = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
    assert view["produced_text_version_count"] == 0
    assert client.ok("GET", "/user_task_execution")["total"] == 1


def test_a_run_with_nothing_to_start_from_is_refused(live, llm):
    """A task whose only input is an image (which the form may leave out) and no value given."""
    spec = copy.deepcopy(TEST_TASK)
    spec["name_for_system"] = "test_photo_caption"
    for displayed in spec["task_displayed_data"]:
        displayed["json_input"] = [{"input_name": "photo", "description_for_user": "A photo",
                                    "description_for_system": "A photo", "type": "image"}]
    with live.db() as db:
        store_spec(db, validate_spec(spec), "upsert")
    client = live.new_user(tasks=["test_photo_caption"])
    pk, session_id = new_execution_of(client, "test_photo_caption")
    _expect_400(client, "POST", "/user_task_execution_run", "inputs",
                json={"user_task_execution_pk": pk, "inputs": {}})
    _assert_nothing_stored(live, llm, pk, session_id)


def new_execution_of(client, name: str) -> tuple[int, str]:
    created = client.new_execution(name)
    return created["user_task_execution_pk"], created["session_id"]
