"""GET/PUT /user_profile, and the profile in the instruct prompt, through the live server."""

from __future__ import annotations

import threading

import pytest
import requests
from sqlalchemy import text

from tests.integration._helpers import QUESTION, new_execution, send
from tests.support.row_locks import backend_pid, waiting_for_a_lock
from tests.support.scripted_llm import Reply

PROFILE = {
    "name": "Ada", "language": "en", "timezone": "Asia/Tokyo", "company_name": "Analytical Engines",
    "company_description": "Builds calculating machines", "job": "Engineer", "about_me": "Prefers short emails",
}


def _system_prompt_of_one_turn(live, llm, client) -> str:
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION))
        send(client, pk, session_id, "an email to Bob")
        socket.wait_event("mojo_message")
    finally:
        socket.close()
        live.wait_idle()
    return llm.requests[-1]["messages"][0]["content"]


def test_profile_round_trip_and_owner_only(live, llm):
    ada, bob = live.new_user(), live.new_user()
    empty = ada.ok("GET", "/user_profile")["user_profile"]
    assert all(empty[k] is None for k in PROFILE)
    stored = ada.ok("PUT", "/user_profile", json=PROFILE)["user_profile"]
    assert {k: stored[k] for k in PROFILE} == PROFILE and stored["updated_at"]
    # a partial update keeps the rest; an empty string clears a field
    again = ada.ok("PUT", "/user_profile", json={"job": "Mathematician", "about_me": ""})["user_profile"]
    assert again["job"] == "Mathematician" and again["about_me"] is None and again["name"] == "Ada"
    # another user sees only their own (empty) profile; no token is a 401
    assert bob.ok("GET", "/user_profile")["user_profile"]["name"] is None
    assert requests.get(live.base_url + "/user_profile", timeout=10).status_code == 401


def test_bad_profiles_are_refused_and_nothing_is_written(live, llm):
    client = live.new_user()
    client.ok("PUT", "/user_profile", json={"name": "Ada"})
    for body, field in [
        ({"name": "Eve", "timezone": "Nowhere/Land"}, "timezone"),
        ({"name": "Eve", "language": "english"}, "language"),
        ({"name": "Eve", "about_me": "x" * 2001}, "about_me"),
        ({"name": "Eve", "salary": 10}, "salary"),
        ({"name": ["Eve"]}, "name"),
    ]:
        response = client.call("PUT", "/user_profile", json=body)
        assert response.status_code == 400, body
        assert response.json()["field"] == field and field in response.json()["error"]
    response = client.call("PUT", "/user_profile", data="not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert client.ok("GET", "/user_profile")["user_profile"]["name"] == "Ada"


@pytest.mark.parametrize("zone", ["localtime", "posixrules", "Factory", "posix/Europe/Paris", "right/UTC",
                                  "europe/paris", "../etc/localtime", "Nowhere/Land"])
def test_a_time_zone_that_is_not_an_iana_name_is_refused(live, llm, zone):
    body = _refused(live.new_user(), "timezone", kept="Europe/Paris", bad=zone)
    assert body["error"] == f"timezone: unknown time zone {zone!r}: use an IANA zone name like 'Europe/Paris'"


def _refused(client, field: str, *, kept: str, bad: str) -> dict:  # noqa: ANN001
    """Stores ``kept``, PUTs ``bad``: a 400 naming the field, ``kept`` still stored. The error's body."""
    client.ok("PUT", "/user_profile", json={field: kept})
    response = client.call("PUT", "/user_profile", json={field: bad})
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert client.ok("GET", "/user_profile")["user_profile"][field] == kept
    return response.json()


def test_a_zone_stored_before_the_iana_check_may_be_sent_back_unchanged(live, llm):
    # A client that PUTs back the whole profile it read must not get a 400 for a zone it did not set.
    client = live.new_user()
    client.ok("PUT", "/user_profile", json={"name": "Ada", "timezone": "Europe/Paris"})
    with live.db() as db:
        db.execute(text("UPDATE user_profile SET timezone = 'localtime' WHERE user_id = :u"), {"u": client.user_id})
    profile = client.ok("GET", "/user_profile")["user_profile"]
    assert profile["timezone"] == "localtime"
    sent = {name: profile[name] for name in PROFILE} | {"job": "Engineer"}
    assert client.ok("PUT", "/user_profile", json=sent)["user_profile"]["job"] == "Engineer"
    assert client.ok("GET", "/user_profile")["user_profile"]["timezone"] == "localtime"
    # Another non-IANA zone is still refused, and an IANA one replaces it.
    response = client.call("PUT", "/user_profile", json={"timezone": "posixrules"})
    assert response.status_code == 400 and response.json()["field"] == "timezone"
    tokyo = client.ok("PUT", "/user_profile", json={"timezone": "Asia/Tokyo"})
    assert tokyo["user_profile"]["timezone"] == "Asia/Tokyo"
    response = client.call("PUT", "/user_profile", json={"timezone": "localtime"})
    assert response.status_code == 400 and response.json()["field"] == "timezone"


@pytest.mark.parametrize("zone", ["UTC", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "Asia/Kolkata"])
def test_iana_time_zones_are_accepted(live, llm, zone):
    client = live.new_user()
    assert client.ok("PUT", "/user_profile", json={"timezone": zone})["user_profile"]["timezone"] == zone


def test_the_profile_appears_in_the_instruct_prompt(live, llm):
    client = live.new_user()
    client.ok("PUT", "/user_profile", json=PROFILE)
    prompt = _system_prompt_of_one_turn(live, llm, client)
    assert "WHO YOU ARE\nYou are Mojo" in prompt  # tasks_config/assistant_knowledge.md
    assert "(time zone Asia/Tokyo, UTC+09:00)" in prompt
    assert "WHAT YOU KNOW ABOUT ADA\n- Name: Ada\n- Job: Engineer\n- About them: Prefers short emails" in prompt
    assert "- Company: Analytical Engines" in prompt
    assert "helps Ada complete a task" in prompt


def test_a_zone_stored_before_the_iana_check_is_not_put_in_the_prompt(live, llm):
    # "localtime" was accepted before: the prompt then gave the server's own time as the user's
    client = live.new_user()
    client.ok("PUT", "/user_profile", json={"name": "Ada"})
    with live.db() as db:
        db.execute(text("UPDATE user_profile SET timezone = 'localtime' WHERE user_id = :u"), {"u": client.user_id})
    prompt = _system_prompt_of_one_turn(live, llm, client)
    assert "(time zone UTC+00:00)" in prompt and "localtime" not in prompt


def test_without_a_profile_the_prompt_has_no_profile_heading(live, llm):
    client = live.new_user()
    prompt = _system_prompt_of_one_turn(live, llm, client)
    assert "GLOBAL CONTEXT" in prompt and "(time zone UTC+00:00)" in prompt
    assert "WHAT YOU KNOW ABOUT" not in prompt and "COMPANY" not in prompt and "HOW YOU WRITE" not in prompt


def test_the_profile_language_becomes_the_account_language(live, llm):
    client = live.new_user()
    client.ok("PUT", "/user_profile", json={"language": "fr"})
    execution = client.new_execution()
    assert execution["json_input"][0]["description_for_user"] == "De quoi parle l'e-mail ?"


def test_a_mobile_session_prompt_asks_for_spoken_answers(live, llm):
    client = live.new_user()
    execution = client.ok("PUT", "/user_task_execution", json={"user_task_pk": client.user_task_pk(),
                                                              "platform": "mobile"})
    pk, session_id = execution["user_task_execution_pk"], execution["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION))
        send(client, pk, session_id, "an email to Bob")
        socket.wait_event("mojo_message")
    finally:
        socket.close()
        live.wait_idle()
    prompt = llm.requests[-1]["messages"][0]["content"]
    assert "HOW YOU WRITE" in prompt and "*Paris*" in prompt


_OTHER_INSERT = text("INSERT INTO user_profile (user_id, name, updated_at) VALUES (:u, 'Ada L.', now())")


def test_a_first_save_racing_another_updates_the_profile_the_other_created(live, is_postgres):
    # was: both requests found no profile and inserted one; the second's INSERT failed on the
    # primary key and answered 500 (a double-click on "save")
    if not is_postgres:
        pytest.skip("SQLite serialises the two writes: there is no race to lose")
    ada = live.new_user()
    engine = live.platform.engine
    answers: list[requests.Response] = []
    with engine.connect() as other:  # the other request, its profile inserted and not yet committed
        other.execute(_OTHER_INSERT, {"u": ada.user_id})
        saving = threading.Thread(target=lambda: answers.append(ada.call("PUT", "/user_profile", json={"job": "Poet"})))
        saving.start()
        assert waiting_for_a_lock(engine, backend_pid(other)), "the request never waited for the other insert"
        other.commit()
    saving.join(10)
    assert answers and answers[0].status_code == 200, answers and answers[0].text
    stored = ada.ok("GET", "/user_profile")["user_profile"]
    assert (stored["name"], stored["job"]) == ("Ada L.", "Poet")


@pytest.mark.parametrize("language", ["zz", "qq", "zz-FR", "xx"])
def test_a_language_that_is_not_an_iso_639_1_code_is_refused(live, llm, language):
    client = live.new_user()
    body = _refused(client, "language", kept="fr", bad=language)
    assert f"unknown language code {language.split('-')[0]!r}" in body["error"], body
    # a known code, with or without a region, is still accepted
    assert client.ok("PUT", "/user_profile", json={"language": "pt-BR"})["user_profile"]["language"] == "pt-BR"
