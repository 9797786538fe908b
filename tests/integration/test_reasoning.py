"""The reasoning trace through the live server: one entry per LLM decision, the <reasoning> tag
never reaching a client (1-character chunks), the fallback, and the owner-only route."""

from __future__ import annotations

from sqlalchemy import event

from mojodex_core.execution.reasoning import append_trace, trace_page
from tests.integration._helpers import BODY, DRAFT, TITLE, new_execution
from tests.integration._tools import (
    ToolTurn,
    answer,
    assert_nothing_leaked,
    install_tool_task,
    one_char,
    tag_call,
    trace,
)
from tests.support.scripted_llm import Reply


def test_direct_reply_adds_one_direct_entry_and_never_shows_the_reasoning(live, llm):
    install_tool_task(live, "http://127.0.0.1:9")
    turn = ToolTurn(live)
    try:
        llm.script(Reply(chunks=one_char(answer("Who is it for?", why="SECRET-WHY the recipient is missing"))))
        final = turn.send("write an email")
        assert final["text"] == "Who is it for?"
        assert "".join(turn.deltas(final)["mojo"]) == final["text"]
        assert_nothing_leaked(turn.all_text_sent())
    finally:
        turn.close()
    (entry,) = trace(live, turn.pk)
    assert (entry.position, entry.kind, entry.source) == (1, "DIRECT", "INSTRUCT_TASK")
    assert entry.text == "[DIRECT] SECRET-WHY the recipient is missing"


def test_draft_reply_streams_without_the_reasoning(live, llm):
    install_tool_task(live, "http://127.0.0.1:9")
    turn = ToolTurn(live)
    try:
        llm.script(Reply(chunks=one_char("<reasoning>SECRET-WHY all known</reasoning>" + DRAFT)))
        final = turn.send("write it", "draft_message")
        assert (final["produced_text_title"], final["produced_text"]) == (TITLE, BODY)
        deltas = turn.deltas(final)
        assert "".join(deltas["draft"]) == BODY and "".join(deltas["title"]) == TITLE
        assert_nothing_leaked(turn.all_text_sent())
    finally:
        turn.close()
    assert [e.text for e in trace(live, turn.pk)] == ["[DIRECT] SECRET-WHY all known"]


def test_missing_tag_falls_back_to_the_reply_or_the_tool_arguments(live, llm):
    install_tool_task(live, "http://127.0.0.1:9")
    turn = ToolTurn(live)
    long_question = "Could you tell me who should receive this email and what tone you want me to use for it?"
    try:
        llm.script(Reply(long_question))
        turn.send("first")
        llm.script(
            Reply("<tool_call><tool_name>echo</tool_name><tool_query>{\"text\": \"hi\"}</tool_query></tool_call>"),
            Reply("Echo said hi."),
        )
        turn.send("second", count=2)
    finally:
        turn.close()
    entries = [(e.position, e.text) for e in trace(live, turn.pk)]
    assert entries == [
        (1, "[DIRECT] " + long_question[:80]),
        (2, "[TOOL_CALL] echo: echo(text='hi')"),
        (3, "[DIRECT] Echo said hi."),
    ]


def test_reasoning_route_is_ordered_and_owner_only(live, llm):
    install_tool_task(live, "http://127.0.0.1:9")
    turn = ToolTurn(live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "a"}, why="look it up")), Reply(answer("ok", why="done")))
        turn.send("go")
    finally:
        turn.close()
    body = turn.client.ok("GET", f"/user_task_execution/reasoning?user_task_execution_pk={turn.pk}")
    assert [(e["position"], e["kind"], e["text"], e["source"]) for e in body["reasoning"]] == [
        (1, "TOOL_CALL", "[TOOL_CALL] echo: look it up", "INSTRUCT_TASK"),
        (2, "DIRECT", "[DIRECT] done", "TOOL_FOLLOW_UP"),
    ]
    stranger = live.new_user()
    response = stranger.call("GET", f"/user_task_execution/reasoning?user_task_execution_pk={turn.pk}")
    assert response.status_code == 404 and "error" in response.json()
    assert turn.client.call("GET", "/user_task_execution/reasoning").status_code == 400


def test_reasoning_route_pages_like_the_execution_list(live, llm):
    client = live.new_user()
    pk, _session_id = new_execution(client)
    with live.db() as db:  # an order turn writes tens of entries: 25 here
        append_trace(db, pk, [f"[RULE] rule {i}" for i in range(1, 26)], "ORDER_TURN")
    route = "/user_task_execution/reasoning"

    def page(**params) -> dict:
        return client.ok("GET", route, params={"user_task_execution_pk": pk, **params})

    # Without a limit, the whole trace as before (the web app reads it so), with its size.
    whole = page()
    assert [e["position"] for e in whole["reasoning"]] == list(range(1, 26))
    assert (whole["total"], whole["offset"], whole["limit"]) == (25, 0, None)
    first = page(limit=10)
    assert [e["text"] for e in first["reasoning"]] == [f"[RULE] rule {i}" for i in range(1, 11)]
    assert (first["total"], first["offset"], first["limit"]) == (25, 0, 10)
    last = page(offset=20, limit=10)
    assert [e["position"] for e in last["reasoning"]] == list(range(21, 26))
    assert (last["total"], last["offset"], last["limit"]) == (25, 20, 10)
    assert [e["position"] for e in page(offset=23)["reasoning"]] == [24, 25]
    assert page(offset=25, limit=5)["reasoning"] == []
    assert len(page(limit=100)["reasoning"]) == 25
    # An empty parameter is an absent one, for offset as for limit (a form sends both empty).
    blank = page(offset="", limit="")
    assert (len(blank["reasoning"]), blank["total"], blank["offset"], blank["limit"]) == (25, 25, 0, None)
    assert page(offset="", limit=3)["reasoning"] == first["reasoning"][:3]
    assert page(offset=30)["total"] == 25

    for params in ({"offset": -1}, {"offset": "x"}, {"limit": 0}, {"limit": 101}, {"limit": "all"},
                   {"offset": 2**31}):
        response = client.call("GET", route, params={"user_task_execution_pk": pk, **params})
        (name,) = params
        assert response.status_code == 400, (params, response.text)
        assert response.json()["field"] == name and name in response.json()["error"]


def test_a_page_of_the_trace_and_its_total_come_from_one_statement(live, llm):
    # A second SELECT for the total could count an entry appended after the page was read.
    client = live.new_user()
    pk, _session_id = new_execution(client)
    with live.db() as db:
        append_trace(db, pk, [f"[RULE] rule {i}" for i in range(1, 8)], "ORDER_TURN")
    statements: list[str] = []

    def count(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        statements.append(statement)

    with live.db() as db:
        engine = db.get_bind()
        event.listen(engine, "before_cursor_execute", count)
        try:
            entries, total = trace_page(db, pk, offset=2, limit=3)
        finally:
            event.remove(engine, "before_cursor_execute", count)
    assert [e["position"] for e in entries] == [3, 4, 5] and total == 7
    assert len([s for s in statements if "reasoning_trace_entry" in s]) == 1, statements
