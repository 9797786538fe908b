"""A text edit the runner refuses, sent again with its message_id: it runs."""

from __future__ import annotations

import pytest

from mojodex_core.execution.failures import NOT_STARTED
from tests.integration._edits import edited, load_edit_actions
from tests.integration._helpers import DRAFT, new_execution, run_form, session_socket
from tests.support.scripted_llm import Reply


@pytest.fixture(scope="module", autouse=True)
def _actions(live_server):  # noqa: ANN001, ANN202
    load_edit_actions(live_server)


def test_a_refused_text_edit_runs_when_sent_again(live, llm, refuse):
    client = live.new_user()
    pk, session_id = new_execution(client)
    with session_socket(live, client, session_id) as socket:
        llm.script(Reply(DRAFT))
        run_form(client, pk)
        draft = socket.wait_event("draft_message")[0]
        live.wait_idle()
        actions = client.ok("GET", "/text_edit_action",
                            params={"produced_text_version_pk": draft["produced_text_version_pk"]})["text_edit_actions"]
        body = {"produced_text_version_pk": draft["produced_text_version_pk"],
                "text_edit_action_pk": actions[0]["text_edit_action_pk"], "message_id": "edit-1"}
        refuse(live)
        refused = client.call("POST", "/text_edit_action", json=body)
        assert refused.status_code == 503 and refused.json() == {"error": NOT_STARTED}, refused.text
        refuse.undo()
        llm.script(Reply(edited("T2", "Edited body")))
        assert client.ok("POST", "/text_edit_action", json=body)["status"] == "pending"
        final = socket.wait_event("draft_message", 2)[-1]
        assert final["produced_text"] == "Edited body"
