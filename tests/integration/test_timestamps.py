"""Every timestamp of a REST answer or a Socket.IO event is ISO 8601 in UTC with its offset
(``2026-01-02T03:04:05.123456+00:00``), whether the row was just written or read back."""

from __future__ import annotations

import copy
import re
import uuid

from tests.integration._helpers import DRAFT, new_execution, send
from tests.support.live import TEST_TASK
from tests.support.scripted_llm import Reply

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?\+00:00$")


def _utc(value: str | None) -> bool:
    return isinstance(value, str) and ISO_UTC.match(value) is not None


def test_a_profile_s_updated_at_is_the_same_text_when_written_and_when_read(live, llm):
    client = live.new_user()
    written = client.ok("PUT", "/user_profile", json={"name": "Ada"})["user_profile"]["updated_at"]
    read = client.ok("GET", "/user_profile")["user_profile"]["updated_at"]
    assert _utc(written) and _utc(read), (written, read)
    assert written == read


def test_an_execution_its_version_and_its_messages_read_back_with_their_offset(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(DRAFT))
        send(client, pk, session_id, "an email to Bob")
        draft = socket.wait_event("draft_message")[0]
    finally:
        socket.close()
        live.wait_idle()
    assert _utc(draft["created_at"]), draft
    one = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
    assert _utc(one["created_at"]) and _utc(one["start_date"]) and _utc(one["end_date"]), one
    listed = client.ok("GET", "/user_task_execution")["user_task_executions"][0]
    assert _utc(listed["created_at"]), listed
    version = client.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": pk})
    assert version["created_at"] == draft["created_at"], (version, draft)
    edited = client.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "production": "Hi Bob"})
    again = client.ok("GET", "/produced_text", params={"produced_text_pk": edited["produced_text_pk"]})
    assert _utc(edited["created_at"]) and again["created_at"] == edited["created_at"], (edited, again)
    messages = client.ok("GET", "/message", params={"session_id": session_id})["messages"]
    assert messages and all(_utc(message["created_at"]) for message in messages), messages


def test_a_task_s_updated_at_is_the_same_text_when_stored_and_when_listed(live):
    admin = live.admin()
    spec = copy.deepcopy(TEST_TASK)
    spec["name_for_system"] = f"test_stamp_{uuid.uuid4().hex[:8]}"
    stored = admin.put(live.base_url + "/task", json=spec, timeout=10)
    assert stored.status_code == 200, stored.text
    one = admin.get(live.base_url + "/task", params={"name_for_system": spec["name_for_system"]}, timeout=10).json()
    listed = next(t for t in admin.get(live.base_url + "/task", timeout=10).json()["tasks"]
                  if t["name_for_system"] == spec["name_for_system"])
    assert _utc(stored.json()["updated_at"]), stored.json()
    assert stored.json()["updated_at"] == one["updated_at"] == listed["updated_at"]
