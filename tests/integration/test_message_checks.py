"""PUT /user_message refuses before storing anything, and in a fixed order of precedence:
404 session (missing or another user's), 404 user_task_execution (missing, another user's or
deleted), 400 execution of another session. The route reads all of it in one query."""

from __future__ import annotations

import uuid

from tests.integration._helpers import event_count, messages, new_execution


def _put(client, session_id: str, pk: int):  # noqa: ANN001, ANN202
    return client.call("PUT", "/user_message", json={
        "session_id": session_id, "user_task_execution_pk": pk, "text": "hi", "message_id": uuid.uuid4().hex,
    })


def test_refusals_come_in_order_and_store_nothing(live, llm):
    owner, intruder = live.new_user(), live.new_user()
    pk, session_id = new_execution(owner)
    other_pk, other_session = new_execution(owner)
    deleted_pk, deleted_session = new_execution(owner)
    owner.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": deleted_pk})
    foreign_pk, foreign_session = new_execution(intruder)
    missing_pk = 2_000_000_000

    cases = [
        # The session is checked first, whatever the execution.
        (owner, "no-such-session", pk, 404, "session not found"),
        (owner, "no-such-session", missing_pk, 404, "session not found"),
        (owner, foreign_session, foreign_pk, 404, "session not found"),
        (owner, foreign_session, pk, 404, "session not found"),
        (intruder, session_id, pk, 404, "session not found"),
        # Then the execution: missing, another user's, deleted.
        (owner, session_id, missing_pk, 404, "user_task_execution not found"),
        (owner, session_id, foreign_pk, 404, "user_task_execution not found"),
        (intruder, foreign_session, pk, 404, "user_task_execution not found"),
        (owner, deleted_session, deleted_pk, 404, "user_task_execution not found"),
        (owner, session_id, deleted_pk, 404, "user_task_execution not found"),
        # Then the pair: both the user's, but not each other's.
        (owner, session_id, other_pk, 400, "session_id is not the session of this user_task_execution"),
        (owner, other_session, pk, 400, "session_id is not the session of this user_task_execution"),
    ]
    for client, sid, epk, status, error in cases:
        response = _put(client, sid, epk)
        assert response.status_code == status, (sid, epk, response.text)
        assert response.json()["error"] == error, (sid, epk, response.text)
        if status == 400:
            assert response.json()["field"] == "session_id"
    for sid in (session_id, other_session, deleted_session, foreign_session):
        assert messages(live, sid) == []
        assert event_count(live, sid) == 0

    # The same pair is accepted once it matches.
    response = _put(owner, session_id, pk)
    assert response.status_code == 200, response.text


def test_the_token_is_read_in_the_checks_statement(live, llm):
    """One statement answers who the caller is and whether the message may be stored: a refused
    send runs nothing else, nor does a bad token (401 from the same statement)."""
    from sqlalchemy import event

    owner = live.new_user()
    pk, _session_id = new_execution(owner)
    statements: list[str] = []

    def count(_conn, _cursor, statement, parameters, *_args):  # noqa: ANN001, ANN002
        # This test's requests only: the live server is shared, and a request of an earlier test still in
        # flight ran a third check statement once (a CI run on a loaded machine).
        if "no-such-session" in str(parameters):
            statements.append(statement)

    event.listen(live.platform.engine, "before_cursor_execute", count)
    try:
        refused = _put(owner, "no-such-session", pk)
        owner.http.headers["Authorization"] = "Bearer not-a-token"
        unknown = _put(owner, "no-such-session", pk)
    finally:
        event.remove(live.platform.engine, "before_cursor_execute", count)
    assert (refused.status_code, refused.json()["error"]) == (404, "session not found")
    assert (unknown.status_code, unknown.json()["error"]) == (401, "missing or invalid token")
    assert len(statements) == 2, statements
    assert all("api_token" in s and "md_session" in s for s in statements), statements


def test_a_bad_token_answers_401_before_any_other_refusal(live, llm):
    """Authentication runs in the route for PUT /user_message: every body (JSON that fails the
    route's own checks, a form or multipart body that spectree does not validate, home chat,
    audio) still answers 401 for a bad token first, and stores nothing."""
    owner = live.new_user()
    pk, session_id = new_execution(owner)
    owner.http.headers["Authorization"] = "Bearer not-a-valid-token"
    bodies = [
        {"data": {}},
        {"data": "", "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
        {"data": "--b--\r\n", "headers": {"Content-Type": "multipart/form-data; boundary=b"}},
        {"data": {}, "files": {"file": ("a.webm", b"", "audio/webm")}},
        {"data": {"session_id": session_id}},
        {"json": {"session_id": session_id, "user_task_execution_pk": pk, "text": "   "}},
        {"json": {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi", "message_id": "form_start"}},
        {"json": {"origin": "home_chat", "session_id": session_id, "text": "hi"}},
        {"json": {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi"}},
    ]
    for kwargs in bodies:
        response = owner.call("PUT", "/user_message", **kwargs)
        assert (response.status_code, response.json()["error"]) == (401, "missing or invalid token"), (
            kwargs, response.status_code, response.text)
    assert messages(live, session_id) == [] and event_count(live, session_id) == 0
