"""POST /produced_text (a manual edit) and the versions written beside it.

The edit carries the latest version's title (when it sends none) and text type forward, and may
name the version it was made on (``base_produced_text_version_index``): that latest version is
read under the execution's lock, so an edit never builds on a version older than one another
writer appended meanwhile (before: it was read before the lock was taken)."""

from __future__ import annotations

import threading

import pytest
import requests
from sqlalchemy import text

from tests.integration._helpers import new_execution
from tests.support.row_locks import backend_pid, waiting_for_a_lock


def _first_version(client, title: str = "Old") -> tuple[int, dict]:  # noqa: ANN001
    pk, _session_id = new_execution(client)
    first = client.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "title": title, "production": "v1"})
    assert first["produced_text_version_index"] == 1
    return pk, first


def test_two_edits_based_on_the_same_version_the_second_is_409(live):
    client = live.new_user()
    pk, first = _first_version(client)
    base = "base_produced_text_version_index"
    edit = {"produced_text_pk": first["produced_text_pk"], base: 1}
    mine = client.ok("POST", "/produced_text", json={**edit, "production": "mine"})
    assert mine["produced_text_version_index"] == 2
    theirs = client.call("POST", "/produced_text", json={**edit, "production": "theirs"})
    assert theirs.status_code == 409, theirs.text
    assert theirs.json() == {"error": "this edit is based on version 1, but the latest version is 2: "
                                      "read it again before editing", "field": base,
                             "latest_produced_text_version_index": 2}
    latest = client.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": pk})
    assert (latest["produced_text_version_index"], latest["produced_text"]) == (2, "mine")
    # based on the latest, it is accepted; with no base named, as before, it is appended
    assert client.ok("POST", "/produced_text", json={**edit, base: 2, "production": "again"})[
        "produced_text_version_index"] == 3
    assert client.ok("POST", "/produced_text", json={"produced_text_pk": first["produced_text_pk"],
                                                     "production": "blind"})["produced_text_version_index"] == 4


def test_an_edit_of_an_execution_with_no_version_yet_is_based_on_version_0(live):
    client = live.new_user()
    pk, _session_id = new_execution(client)
    edit = {"user_task_execution_pk": pk, "production": "x"}
    first = client.ok("POST", "/produced_text", json={**edit, "base_produced_text_version_index": 0})
    assert first["produced_text_version_index"] == 1


@pytest.mark.parametrize(("versions", "base"), [(2, 5), (2, 3), (0, 1)])
def test_an_edit_based_on_a_version_that_never_existed_is_400(live, versions, base):
    # A base beyond the latest version is no edit that came too late (409) but a bad request.
    client = live.new_user()
    pk, _session_id = new_execution(client)
    edit = {"user_task_execution_pk": pk, "production": "x"}
    for _ in range(versions):
        client.ok("POST", "/produced_text", json=edit)
    response = client.call("POST", "/produced_text", json={**edit, "base_produced_text_version_index": base})
    assert response.status_code == 400, response.text
    assert response.json() == {"error": f"base_produced_text_version_index: there is no version {base} "
                                        f"(the latest version is {versions})",
                               "field": "base_produced_text_version_index"}
    count = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
    assert count["produced_text_version_count"] == versions


_HOLD_EXECUTION = text("UPDATE user_task_execution SET title = title WHERE user_task_execution_pk = :pk")
_OTHER_VERSION = text(
    "INSERT INTO produced_text_version (produced_text_fk, version_index, title, production, origin, created_at) "
    "VALUES (:produced, 2, 'New', 'v2', 'assistant', now())"
)


def test_the_latest_version_is_read_once_the_execution_is_locked(live, is_postgres):
    # An assistant's version being written (the execution row held, version 2 not yet committed)
    # while the user saves an edit without a title: the edit waits, then carries version 2's
    # title. Before, it had read version 1 before waiting and wrote its title "Old" as version 3.
    if not is_postgres:
        pytest.skip("SQLite serialises the two writes before either reads: there is no race to lose")
    client = live.new_user()
    pk, first = _first_version(client)
    engine = live.platform.engine
    answers: list[requests.Response] = []
    with engine.connect() as other:
        other.execute(_HOLD_EXECUTION, {"pk": pk})
        other.execute(_OTHER_VERSION, {"produced": first["produced_text_pk"]})
        saving = threading.Thread(target=lambda: answers.append(client.call(
            "POST", "/produced_text", json={"produced_text_pk": first["produced_text_pk"], "production": "mine"})))
        saving.start()
        assert waiting_for_a_lock(engine, backend_pid(other)), "the edit never waited for the other writer"
        other.commit()
    saving.join(10)
    assert answers and answers[0].status_code == 200, answers and answers[0].text
    assert (answers[0].json()["produced_text_version_index"], answers[0].json()["produced_text_title"]) == (3, "New")
