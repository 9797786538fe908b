"""The reasoning trace through the live server: one entry per LLM decision, the <reasoning> tag
never reaching a client (1-character chunks), the fallback, and the owner-only route."""

from __future__ import annotations

from tests.integration._helpers import BODY, DRAFT, TITLE
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
