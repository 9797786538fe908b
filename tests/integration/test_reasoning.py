"""The reasoning trace through the live server: one entry per LLM decision, the <reasoning> tag
never reaching a client (1-character chunks), the fallback, and the owner-only route."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from mojodex_core.execution.reasoning import append_trace, trace_page
from mojodex_core.home_chat.turn import EMPTY_ANSWER
from tests.integration._helpers import BODY, DRAFT, TITLE, new_execution, send
from tests.integration._tools import (
    ToolTurn,
    answer,
    assert_nothing_leaked,
    install_tool_task,
    one_char,
    tag_call,
    trace,
)
from tests.support.scripted_llm import Reply, ToolCall


@pytest.fixture
def tools_live(live):  # noqa: ANN001, ANN201
    install_tool_task(live, "http://127.0.0.1:9")  # no test here calls http_json: no service behind it
    return live


def test_direct_reply_adds_one_direct_entry_and_never_shows_the_reasoning(tools_live, llm):
    with ToolTurn(tools_live) as turn:
        llm.script(Reply(chunks=one_char(answer("Who is it for?", why="SECRET-WHY the recipient is missing"))))
        final = turn.send("write an email")
        assert final["text"] == "Who is it for?"
        assert "".join(turn.deltas(final)["mojo"]) == final["text"]
        assert_nothing_leaked(turn.all_text_sent())
    (entry,) = trace(tools_live, turn.pk)
    assert (entry.position, entry.kind, entry.source) == (1, "DIRECT", "INSTRUCT_TASK")
    assert entry.text == "[DIRECT] SECRET-WHY the recipient is missing"


def test_draft_reply_streams_without_the_reasoning(tools_live, llm):
    with ToolTurn(tools_live) as turn:
        llm.script(Reply(chunks=one_char("<reasoning>SECRET-WHY all known</reasoning>" + DRAFT)))
        final = turn.send("write it", "draft_message")
        assert (final["produced_text_title"], final["produced_text"]) == (TITLE, BODY)
        deltas = turn.deltas(final)
        assert "".join(deltas["draft"]) == BODY and "".join(deltas["title"]) == TITLE
        assert_nothing_leaked(turn.all_text_sent())
    assert [e.text for e in trace(tools_live, turn.pk)] == ["[DIRECT] SECRET-WHY all known"]


def test_missing_tag_falls_back_to_the_reply_or_the_tool_arguments(tools_live, llm):
    long_question = "Could you tell me who should receive this email and what tone you want me to use for it?"
    with ToolTurn(tools_live) as turn:
        llm.script(Reply(long_question))
        turn.send("first")
        llm.script(
            Reply("<tool_call><tool_name>echo</tool_name><tool_query>{\"text\": \"hi\"}</tool_query></tool_call>"),
            Reply("Echo said hi."),
        )
        turn.send("second", count=2)
    entries = [(e.position, e.text) for e in trace(tools_live, turn.pk)]
    assert entries == [
        (1, "[DIRECT] " + long_question[:80]),
        (2, "[TOOL_CALL] echo: echo(text='hi')"),
        (3, "[DIRECT] Echo said hi."),
    ]


def test_an_unclosed_reasoning_ends_at_the_first_known_tag(tools_live, llm):
    # was: everything after <reasoning> was hidden, so the question never reached the user
    # (the turn failed with "empty answer")
    with ToolTurn(tools_live) as turn:
        llm.script(Reply(chunks=one_char("<reasoning>SECRET-WHY the recipient is missing\n<user_language>en"
                                         "</user_language><ask_user_input>Who is it for?</ask_user_input>")))
        final = turn.send("write an email")
        assert final["text"] == "Who is it for?"
        assert "".join(turn.deltas(final)["mojo"]) == final["text"]
        assert_nothing_leaked(turn.all_text_sent())
    assert [e.text for e in trace(tools_live, turn.pk)] == ["[DIRECT] SECRET-WHY the recipient is missing"]


def test_an_unclosed_reasoning_with_no_tag_after_it_is_shown_rather_than_lost(tools_live, llm):
    said = "The user greets me.\n\nHello! How can I help?"
    with ToolTurn(tools_live) as turn:
        llm.script(Reply(chunks=one_char("<reasoning>" + said)))
        final = turn.send("hello")  # was: an "error" event, "The assistant returned an empty answer"
        assert final["text"] == said
        assert "".join(turn.deltas(final)["mojo"]) == said
    assert [e.text for e in trace(tools_live, turn.pk)] == ["[DIRECT] " + " ".join(said.split())]


def test_an_unclosed_reasoning_before_a_native_tool_call_stays_hidden(tools_live, llm):
    with ToolTurn(tools_live) as turn:
        llm.script(
            ToolCall("echo", '{"text": "pong"}', content_chunks=one_char("<reasoning>SECRET-WHY native")),
            Reply(chunks=one_char(answer("It said pong."))),
        )
        final = turn.send("use the echo")
        assert final["text"] == "It said pong."
        assert_nothing_leaked(turn.all_text_sent())
    assert [e.text for e in trace(tools_live, turn.pk)] == ["[TOOL_CALL] echo: SECRET-WHY native",
                                                      "[DIRECT] SECRET-WHY answer"]


def test_an_unclosed_reasoning_after_an_earlier_call_showed_text_stays_hidden(tools_live, llm):
    # was: the follow-up call's parser saw only its own (empty) reply and showed the reasoning
    with ToolTurn(tools_live) as turn:
        llm.script(
            ToolCall("echo", '{"text": "pong"}', content_chunks=one_char("Let me check that.")),
            Reply(chunks=one_char("<reasoning>SECRET-WHY the user seems impatient")),
        )
        final = turn.send("use the echo")
        assert final["text"] == "Let me check that."
        assert_nothing_leaked(turn.all_text_sent())
    assert trace(tools_live, turn.pk)[-1].text == "[DIRECT] SECRET-WHY the user seems impatient"


def test_a_reply_cut_off_by_the_token_limit_in_its_reasoning_is_not_shown(tools_live, llm):
    # finish_reason "length": the model never got to its reply; what it wrote is its private reasoning.
    # was: shown as the answer. Now the turn fails visibly as before the unclosed-reasoning fallback.
    with ToolTurn(tools_live) as turn:
        llm.script(Reply(chunks=one_char("<reasoning>SECRET-WHY the user seems impatient, I"),
                         finish_reason="length"))
        send(turn.client, turn.pk, turn.session_id, "hello")
        [error] = turn.socket.wait_event("error")
        assert "empty answer" in error["error"] and error["retryable"]
        assert not turn.socket.named("mojo_message")
        assert_nothing_leaked(turn.all_text_sent())


def test_a_home_chat_reply_cut_off_in_its_reasoning_is_not_shown(live, llm):
    client = live.new_user()
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    socket = client.socket(session_id)
    try:
        llm.script(Reply(chunks=one_char("<reasoning>SECRET-WHY small talk, I"), finish_reason="length"))
        client.ok("PUT", "/user_message", json={"origin": "home_chat", "session_id": session_id,
                                                "text": "hello", "message_id": "m-cut"})
        [error] = socket.wait_event("error")
        assert error["error"] == EMPTY_ANSWER and error["retryable"]
        assert not socket.named("mojo_message") and not socket.named("mojo_token")
    finally:
        socket.close()
        live.wait_idle()


def test_reasoning_route_is_ordered_and_owner_only(tools_live, llm):
    with ToolTurn(tools_live) as turn:
        llm.script(Reply(tag_call("echo", {"text": "a"}, why="look it up")), Reply(answer("ok", why="done")))
        turn.send("go")
    body = turn.client.ok("GET", f"/user_task_execution/reasoning?user_task_execution_pk={turn.pk}")
    assert [(e["position"], e["kind"], e["text"], e["source"]) for e in body["reasoning"]] == [
        (1, "TOOL_CALL", "[TOOL_CALL] echo: look it up", "INSTRUCT_TASK"),
        (2, "DIRECT", "[DIRECT] done", "TOOL_FOLLOW_UP"),
    ]
    stranger = tools_live.new_user()
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
