"""Admin REST on a live server: PUT (create), POST (update), GET /task; a broken rule is a 400 naming it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
import requests

from mojodex_core.task_spec import OUTPUT_TYPES
from tests.foundation.conftest import REPO_ROOT, SHARED_SPECS, follow_up, needs_shared_specs, unique, valid_spec
from tests.support.live import ADMIN_SECRET


def admin(live, method: str, path: str = "/task", **kwargs: Any) -> requests.Response:
    return live.admin().request(method, live.base_url + path, timeout=30, **kwargs)


def get_task(live, name: str) -> requests.Response:
    return admin(live, "GET", params={"name_for_system": name})


def task_names(live) -> set[str]:
    response = admin(live, "GET")
    assert response.status_code == 200
    return {t["name_for_system"] for t in response.json()["tasks"]}


# --- authorization


@pytest.mark.parametrize("method", ["GET", "PUT", "POST"])
@pytest.mark.parametrize("header", [None, "", "wrong-secret-0123456789", f"{ADMIN_SECRET}x", "Bearer nope"])
def test_admin_routes_without_the_secret_are_403(live, method, header):
    headers = {} if header is None else {"Authorization": header}
    name = unique()
    response = requests.request(
        method, live.base_url + "/task", json=valid_spec(name), headers=headers, timeout=30
    )
    assert response.status_code == 403
    assert response.json() == {"error": "admin secret required"}
    assert get_task(live, name).status_code == 404


def test_a_user_token_is_not_an_admin_secret(live):
    client = live.new_user()
    response = client.call("PUT", "/task", json=valid_spec())
    assert response.status_code == 403


def test_the_admin_secret_is_accepted_bare_or_as_bearer(live):
    for header in (ADMIN_SECRET, f"Bearer {ADMIN_SECRET}"):
        response = requests.get(live.base_url + "/task", headers={"Authorization": header}, timeout=30)
        assert response.status_code == 200


# --- create, update, read


def test_put_creates_then_409_and_get_reads_it_back(live):
    spec = valid_spec()
    name = spec["name_for_system"]
    created = admin(live, "PUT", json=spec)
    assert created.status_code == 200, created.text
    summary = created.json()
    assert summary["name_for_system"] == name
    assert summary["type"] == "instruct"
    assert sorted(summary["languages"]) == ["en", "fr"]

    again = admin(live, "PUT", json=valid_spec(name, icon="📧"))
    assert again.status_code == 409
    assert name in again.json()["error"]

    one = get_task(live, name)
    assert one.status_code == 200
    body = one.json()
    assert body["task_pk"] == summary["task_pk"]
    assert body["icon"] == "✉️"  # the rejected PUT changed nothing
    assert body["spec"]["name_for_system"] == name
    assert body["spec"]["final_instruction"] == spec["final_instruction"]
    assert name in task_names(live)


def test_post_updates_an_existing_task_and_404s_a_missing_one(live):
    missing = admin(live, "POST", json=valid_spec())
    assert missing.status_code == 404
    assert "error" in missing.json()

    spec = valid_spec()
    assert admin(live, "PUT", json=spec).status_code == 200
    spec["icon"] = "📧"
    spec["final_instruction"] = "Write it shorter."
    updated = admin(live, "POST", json=spec)
    assert updated.status_code == 200, updated.text
    body = get_task(live, spec["name_for_system"]).json()
    assert body["icon"] == "📧"
    assert body["spec"]["final_instruction"] == "Write it shorter."


def test_post_cannot_change_the_type_of_a_task_with_executions(live):
    """A tester turned an instruct task with a completed execution into an order task: the execution was
    listed as an order, its chat still ran instruct turns, and GET /order said it was not an order."""
    spec = valid_spec()
    assert admin(live, "PUT", json=spec).status_code == 200
    order = json.loads((REPO_ROOT / "tasks_config" / "order_pizzeria.json").read_text())
    order["name_for_system"] = spec["name_for_system"]
    unused = admin(live, "POST", json=order)  # no execution yet: the type may change
    assert unused.status_code == 200 and unused.json()["type"] == "order", unused.text
    assert admin(live, "POST", json=spec).status_code == 200
    live.new_user(tasks=[spec["name_for_system"]]).new_execution(spec["name_for_system"])
    refused = admin(live, "POST", json=order)
    assert refused.status_code == 409 and "instruct task with executions" in refused.json()["error"], refused.text
    body = get_task(live, spec["name_for_system"]).json()
    assert body["type"] == "instruct" and body["spec"]["final_instruction"] == spec["final_instruction"]


def test_deleted_executions_do_not_keep_a_task_from_changing_its_type(live):
    """A tester deleted the only execution of a task, then changing its type was still refused with 409: the
    check counted deleted executions, which no one can list, open or chat in any more."""
    spec = valid_spec()
    assert admin(live, "PUT", json=spec).status_code == 200
    user = live.new_user(tasks=[spec["name_for_system"]])
    created = user.new_execution(spec["name_for_system"])
    user.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": created["user_task_execution_pk"]})
    order = json.loads((REPO_ROOT / "tasks_config" / "order_pizzeria.json").read_text())
    order["name_for_system"] = spec["name_for_system"]
    changed = admin(live, "POST", json=order)
    assert changed.status_code == 200 and changed.json()["type"] == "order", changed.text


def test_get_of_an_unknown_task_is_404(live):
    response = get_task(live, unique("missing"))
    assert response.status_code == 404
    assert "error" in response.json()


# --- malformed specs


def _drop(*keys: str) -> Callable[[dict], None]:
    def change(spec: dict) -> None:
        target = spec
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        del target[keys[-1]]

    return change


def _set(path: str, value: Any) -> Callable[[dict], None]:
    keys = path.split(".")

    def change(spec: dict) -> None:
        target = spec
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        target[keys[-1]] = value

    return change


def _order_with_menu(menu: str) -> Callable[[dict], None]:
    def change(spec: dict) -> None:
        for key in (
            "final_instruction",
            "output_format_instruction_title",
            "output_format_instruction_draft",
            "infos_to_extract",
        ):
            spec.pop(key)
        spec.update(task_type="order", menu=menu, output_type="order")

    return change


def _only_french(spec: dict) -> None:
    spec["task_displayed_data"] = spec["task_displayed_data"][1:]


def _duplicate_language(spec: dict) -> None:
    spec["task_displayed_data"][1]["language_code"] = "en"


def _fewer_french_inputs(spec: dict) -> None:
    spec["task_displayed_data"][1]["json_input"].pop()


def _duplicate_info(spec: dict) -> None:
    spec["infos_to_extract"].append(dict(spec["infos_to_extract"][0]))


def _predefined_action_by_pk(spec: dict) -> None:
    spec["predefined_actions"] = [
        {"task_pk": 3, "displayed_data": [{"language_code": "en", "data": {"name": "Follow up"}}]}
    ]


MALFORMED = [
    ("missing_name", _drop("name_for_system"), "name_for_system", "is required"),
    ("bad_name", _set("name_for_system", "Bad Name"), "name_for_system", "must match ^[a-z0-9]"),
    (
        "unknown_task_type",
        _set("task_type", "chat"),
        "task_type",
        "must be one of: instruct, workflow, order",
    ),
    ("unknown_platform", _set("platforms", ["desktop"]), "platforms[0]", "must be one of: webapp, mobile"),
    ("no_platform", _set("platforms", []), "platforms", "must be a non-empty list"),
    ("duplicate_platform", _set("platforms", ["webapp", "webapp"]), "platforms[1]", "duplicate platform"),
    ("icon_not_emoji", _set("icon", "mail"), "icon", "must be an emoji"),
    ("unknown_output_type", _set("output_type", "emial"), "output_type", "must be one of: document, email"),
    ("empty_definition", _set("definition_for_system", "  "), "definition_for_system", "must not be empty"),
    ("missing_final_instruction", _drop("final_instruction"), "final_instruction", "is required"),
    (
        "result_chat_not_bool",
        _set("result_chat_enabled", "yes"),
        "result_chat_enabled",
        "must be true or false",
    ),
    ("no_en_entry", _only_french, "task_displayed_data", "must include an entry with language_code 'en'"),
    (
        "duplicate_language",
        _duplicate_language,
        "task_displayed_data[1].language_code",
        "duplicate language_code",
    ),
    (
        "bad_language",
        _set("task_displayed_data.1.language_code", "French"),
        "task_displayed_data[1].language_code",
        "must be a language code",
    ),
    (
        "placeholder_name",
        _set("task_displayed_data.0.name_for_user", "<USER TASK NAME>"),
        "task_displayed_data[0].name_for_user",
        "is a template placeholder",
    ),
    (
        "dropdown_without_values",
        _drop("task_displayed_data", "0", "json_input", "1", "possible_values"),
        "task_displayed_data[0].json_input[1].possible_values",
        "is required when type is 'drop_down_list'",
    ),
    (
        "unknown_input_type",
        _set("task_displayed_data.0.json_input.0.type", "checkbox"),
        "task_displayed_data[0].json_input[0].type",
        "must be one of: text_area, drop_down_list",
    ),
    (
        "misspelt_nested_field",
        _set("task_displayed_data.0.json_input.0.placeholdr", "Tell me"),
        "task_displayed_data[0].json_input[0].placeholdr",
        "unknown field (did you mean 'placeholder'?)",
    ),
    (
        "inputs_differ_by_language",
        _fewer_french_inputs,
        "task_displayed_data[1].json_input",
        "must have the same number of inputs as the 'en' entry",
    ),
    (
        "duplicate_info_name",
        _duplicate_info,
        "infos_to_extract[1].info_name",
        "duplicate info_name 'recipient'",
    ),
    (
        "predefined_action_by_pk",
        _predefined_action_by_pk,
        "predefined_actions[0].task_pk",
        "is not supported",
    ),
    ("steps_on_instruct", _set("steps", []), "steps", "is only allowed when task_type is workflow"),
    ("order_menu_missing", _order_with_menu("menus/nowhere.json"), "menu", "menu file not found"),
    ("order_menu_escapes", _order_with_menu("../secrets.json"), "menu", "must not contain '..'"),
]


@pytest.mark.parametrize(
    ("change", "path", "rule"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_put_of_a_malformed_spec_is_400_naming_path_and_rule_and_stores_nothing(live, change, path, rule):
    spec = valid_spec()
    name = spec["name_for_system"]
    change(spec)
    before = task_names(live)
    response = admin(live, "PUT", json=spec)
    assert response.status_code == 400, response.text
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    assert all(set(e) == {"path", "rule"} for e in body["errors"])
    matching = [e for e in body["errors"] if e["path"] == path]
    assert matching, f"no error at {path}: {body['errors']}"
    assert any(rule in e["rule"] for e in matching), matching
    assert get_task(live, name).status_code == 404
    assert task_names(live) == before


def test_post_of_a_malformed_spec_leaves_the_task_unchanged(live):
    spec = valid_spec()
    assert admin(live, "PUT", json=spec).status_code == 200
    stored = get_task(live, spec["name_for_system"]).json()["spec"]
    broken = json.loads(json.dumps(spec))
    broken["task_displayed_data"][0]["name_for_user"] = "Renamed"
    broken["platforms"] = ["tv"]
    response = admin(live, "POST", json=broken)
    assert response.status_code == 400
    assert {"path": "platforms[0]", "rule": "must be one of: webapp, mobile (got 'tv')"} in response.json()[
        "errors"
    ]
    assert get_task(live, spec["name_for_system"]).json()["spec"] == stored
    user = live.new_user(tasks=[spec["name_for_system"]])
    names = {t["name"] for t in user.ok("GET", "/user_task")["user_tasks"]}
    assert names == {"Email"}


def test_a_predefined_action_naming_no_task_is_400_naming_the_field_and_the_task(live):
    known = valid_spec()
    assert admin(live, "PUT", json=known).status_code == 200
    missing = unique("missing")
    spec = valid_spec(predefined_actions=[follow_up(known["name_for_system"]), follow_up(missing)])
    for method in ("PUT", "POST"):
        if method == "POST":
            assert admin(live, "PUT", json=valid_spec(spec["name_for_system"])).status_code == 200
        response = admin(live, method, json=spec)
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["errors"] == [{"path": "predefined_actions[1].task_name", "rule": f"no task named '{missing}'"}]
        assert "predefined_actions[1].task_name" in body["error"] and missing in body["error"]
        stored = get_task(live, spec["name_for_system"])
        assert stored.status_code == 404 if method == "PUT" else stored.json()["spec"]["predefined_actions"] == []


def test_a_predefined_action_may_name_a_stored_task_or_the_task_itself(live):
    known = valid_spec()
    assert admin(live, "PUT", json=known).status_code == 200
    spec = valid_spec()
    spec["predefined_actions"] = [follow_up(known["name_for_system"]), follow_up(spec["name_for_system"])]
    response = admin(live, "PUT", json=spec)
    assert response.status_code == 200, response.text
    names = [a["task_name"] for a in get_task(live, spec["name_for_system"]).json()["spec"]["predefined_actions"]]
    assert names == [known["name_for_system"], spec["name_for_system"]]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("[1, 2]", "application/json"),
        ('"a spec"', "application/json"),
        ("{not json", "application/json"),
        ("name_for_system=x", "text/plain"),
    ],
    ids=["array", "string", "broken_json", "text"],
)
def test_put_of_a_body_that_is_not_a_json_object_is_400_with_errors(live, body, content_type):
    response = admin(live, "PUT", data=body, headers={"Content-Type": content_type})
    assert response.status_code == 400
    payload = response.json()
    assert isinstance(payload["error"], str)
    assert payload["errors"] and payload["errors"][0]["path"] == "<root>"
    assert "JSON object" in payload["errors"][0]["rule"]


def test_order_specs_of_tasks_config_load_through_put(live):
    """Menus are resolved against the server's tasks_config directory."""
    spec = json.loads((REPO_ROOT / "tasks_config" / "order_pizzeria.json").read_text())
    spec["name_for_system"] = unique("order")
    response = admin(live, "PUT", json=spec)
    assert response.status_code == 200, response.text
    assert response.json()["type"] == "order"


# --- the real Mojodex specs of ../shared


def _shared(name: str) -> dict:
    return json.loads((SHARED_SPECS / name).read_text(encoding="utf-8"))


SHARED_FILES = [
    "doc_gen_workflow.json",
    "event_conversation_recap.json",
    "follow_up_email.json",
    "meeting_recap.json",
]


@needs_shared_specs
@pytest.mark.parametrize("file_name", SHARED_FILES)
def test_the_shared_mojodex_specs_load_unchanged_via_put(live, file_name):
    from sqlalchemy import delete

    from mojodex_core.db.models import Task

    spec = _shared(file_name)
    with live.db() as db:  # the CLI tests may have stored it already: PUT creates
        db.execute(delete(Task).where(Task.name_for_system == spec["name_for_system"]))
    response = admin(live, "PUT", json=spec)
    assert response.status_code == 200, response.text
    body = get_task(live, spec["name_for_system"]).json()
    assert body["type"] == spec.get("task_type", "instruct")
    assert sorted(body["languages"]) == sorted(d["language_code"] for d in spec["task_displayed_data"])
    for key in ("definition_for_system", "platforms", "icon", "output_type"):
        assert body["spec"][key] == spec[key]
    user = live.new_user(tasks=[spec["name_for_system"]])
    listed = user.ok("GET", "/user_task")["user_tasks"]
    en = next(d for d in spec["task_displayed_data"] if d["language_code"] == "en")
    assert [t["name"] for t in listed] == [en["name_for_user"]]


@needs_shared_specs
def test_the_shared_template_is_rejected_via_put(live):
    before = task_names(live)
    response = admin(live, "PUT", json=_shared("task_spec.json"))
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert {
        "path": "name_for_system",
        "rule": "must be filled in: '<SYSTEM TASK NAME>' is a template placeholder",
    } in (errors)
    paths = {e["path"] for e in errors}
    assert {
        "icon",
        "output_type",
        "task_displayed_data[0].name_for_user",
        "infos_to_extract[0].info_name",
    } <= paths
    assert not paths & {"task_type", "platforms", "result_chat_enabled", "predefined_actions"}
    assert task_names(live) == before


# --- concurrent admin writes: a conflict is a 409 or a success, never a 500


def _concurrently(live, specs: list[dict]) -> list[int]:
    barrier = threading.Barrier(len(specs))
    codes: list[int] = []

    def put(spec: dict) -> None:
        barrier.wait()
        codes.append(admin(live, "PUT", json=spec).status_code)

    threads = [threading.Thread(target=put, args=(spec,)) for spec in specs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return codes


def test_concurrent_puts_of_one_new_task_give_one_200_and_409s(live):
    name = unique("race")
    codes = _concurrently(live, [valid_spec(name) for _ in range(8)])
    assert sorted(codes) == [200] + [409] * 7
    assert get_task(live, name).status_code == 200


def test_concurrent_puts_creating_the_same_text_type_all_succeed(live):
    from sqlalchemy import delete, exists, select

    from mojodex_core.db.models import ProducedTextVersion, Task, TextType

    with live.db() as db:  # a text type no task uses yet, so the PUTs race to create its row
        unused = ~exists(
            select(Task.task_pk).where(Task.output_text_type_fk == TextType.text_type_pk)
        ) & ~exists(
            select(ProducedTextVersion.produced_text_version_pk).where(
                ProducedTextVersion.text_type_fk == TextType.text_type_pk
            )
        )
        db.execute(delete(TextType).where(unused))
        used = set(db.scalars(select(TextType.name)))
    fresh = [t for t in OUTPUT_TYPES if t not in used and t != "order"]
    if not fresh:
        pytest.skip("every output type is already used by a stored task")
    specs = [valid_spec(output_type=fresh[0]) for _ in range(8)]
    assert _concurrently(live, specs) == [200] * 8
    for spec in specs:
        assert get_task(live, spec["name_for_system"]).json()["spec"]["output_type"] == fresh[0]
