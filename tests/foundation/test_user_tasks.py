"""GET /user_task: the caller's enabled tasks in their language (else en), filtered by platform."""

from __future__ import annotations

import pytest

from mojodex_core.db.models import UserTask
from tests.foundation.conftest import unique, valid_spec


def put_task(live, spec: dict) -> None:
    response = live.admin().put(live.base_url + "/task", json=spec, timeout=30)
    assert response.status_code == 200, response.text


def post_task(live, spec: dict) -> None:
    response = live.admin().post(live.base_url + "/task", json=spec, timeout=30)
    assert response.status_code == 200, response.text


@pytest.fixture
def tasks(live):
    """A webapp-only task and a task on both platforms, each in en and fr."""
    webapp_only = valid_spec(unique("web"), platforms=["webapp"], icon="🌐")
    everywhere = valid_spec(unique("all"))
    everywhere["task_displayed_data"][0]["name_for_user"] = "Everywhere"
    everywhere["task_displayed_data"][1]["name_for_user"] = "Partout"
    put_task(live, webapp_only)
    put_task(live, everywhere)
    return webapp_only, everywhere


def listed(client, **params) -> list[dict]:
    return client.ok("GET", "/user_task", params=params)["user_tasks"]


def test_a_french_user_sees_french_texts_and_inputs(live, tasks):
    webapp_only, _ = tasks
    client = live.new_user(language="fr", tasks=[webapp_only["name_for_system"]])
    [task] = listed(client)
    fr = webapp_only["task_displayed_data"][1]
    assert task["name_for_system"] == webapp_only["name_for_system"]
    assert task["name"] == fr["name_for_user"] == "E-mail"
    assert task["description"] == fr["definition_for_user"]
    assert task["icon"] == "🌐"
    assert task["type"] == "instruct"
    assert task["language_code"] == "fr"
    assert task["enabled"] is True
    assert isinstance(task["user_task_pk"], int)
    assert task["json_input"] == fr["json_input"]
    assert task["json_input"][1]["possible_values"][0]["displayed_text"] == "Formel"


@pytest.mark.parametrize("language", ["de", "en", "pt-BR"])
def test_a_language_without_texts_falls_back_to_english(live, tasks, language):
    webapp_only, _ = tasks
    client = live.new_user(language=language, tasks=[webapp_only["name_for_system"]])
    [task] = listed(client)
    en = webapp_only["task_displayed_data"][0]
    assert (task["name"], task["description"], task["language_code"]) == (
        en["name_for_user"],
        en["definition_for_user"],
        "en",
    )
    assert task["json_input"] == en["json_input"]


def test_a_regional_language_uses_its_base_language(live, tasks):
    webapp_only, _ = tasks
    client = live.new_user(language="fr-CA", tasks=[webapp_only["name_for_system"]])
    [task] = listed(client)
    assert (task["name"], task["language_code"]) == ("E-mail", "fr")


def test_platform_filter(live, tasks):
    webapp_only, everywhere = tasks
    names = [webapp_only["name_for_system"], everywhere["name_for_system"]]
    client = live.new_user(tasks=names)
    assert {t["name_for_system"] for t in listed(client)} == set(names)
    assert {t["name_for_system"] for t in listed(client, platform="webapp")} == set(names)
    assert [t["name_for_system"] for t in listed(client, platform="mobile")] == [
        everywhere["name_for_system"]
    ]


@pytest.mark.parametrize("platform", ["desktop", "", "WEBAPP", "webapp,mobile"])
def test_a_bad_platform_is_400(live, platform):
    client = live.new_user()
    response = client.call("GET", "/user_task", params={"platform": platform})
    assert response.status_code == 400
    assert "platform" in response.json()["error"]


def test_only_granted_and_enabled_tasks_are_listed(live, tasks):
    webapp_only, everywhere = tasks
    client = live.new_user(tasks=[everywhere["name_for_system"]])
    assert [t["name_for_system"] for t in listed(client)] == [everywhere["name_for_system"]]
    with live.db() as db:
        db.get(UserTask, client.user_task_pk(everywhere["name_for_system"])).enabled = False
    assert listed(client) == []
    # Another user's grants never show up.
    other = live.new_user(tasks=[webapp_only["name_for_system"]])
    assert [t["name_for_system"] for t in listed(other)] == [webapp_only["name_for_system"]]


def test_an_update_through_post_task_is_reflected_in_user_task(live, tasks):
    webapp_only, _ = tasks
    name = webapp_only["name_for_system"]
    french, german = live.new_user(language="fr", tasks=[name]), live.new_user(language="de", tasks=[name])
    assert listed(french)[0]["name"] == "E-mail"

    updated = valid_spec(name, platforms=["webapp", "mobile"], icon="📨")
    updated["task_displayed_data"] = updated["task_displayed_data"][:1]  # the fr entry is removed
    updated["task_displayed_data"][0]["name_for_user"] = "Email writer"
    updated["task_displayed_data"][0]["json_input"] = updated["task_displayed_data"][0]["json_input"][:1]
    post_task(live, updated)

    for client in (french, german):
        [task] = listed(client)
        assert (task["name"], task["language_code"], task["icon"]) == ("Email writer", "en", "📨")
        assert [i["input_name"] for i in task["json_input"]] == ["email_content"]
    assert [t["name_for_system"] for t in listed(french, platform="mobile")] == [name]
    languages = live.admin().get(live.base_url + "/task", params={"name_for_system": name}, timeout=30).json()
    assert languages["languages"] == ["en"]

    # Back to webapp only: gone from the mobile list again.
    post_task(live, valid_spec(name, platforms=["webapp"]))
    assert listed(french, platform="mobile") == []
    assert listed(french)[0]["name"] == "E-mail"  # the fr entry is back
