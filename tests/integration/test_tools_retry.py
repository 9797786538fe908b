"""A message whose turn used tools, then failed, sent again with its message_id: the retried turn continues
from the uses already recorded for that message (their calls and results, in call order), so a tool is never
run twice nor put to the user again. Through the live server and the scripted OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest

from mojodex_core.db.models import Message
from mojodex_core.execution.tool_requests import NO_MORE_TOOLS
from tests.integration._helpers import message, send
from tests.integration._tools import (
    JsonService,
    ToolTurn,
    answer,
    install_tool_task,
    tag_call,
    tool_results_sent,
    tool_rows,
    trace,
)
from tests.support.scripted_llm import HTTPError, Reply, ToolCall

# What makes a turn's LLM call fail: the first attempt and the provider's 2 retries.
DOWN = (HTTPError(500), HTTPError(500), HTTPError(500))


@pytest.fixture(scope="module")
def service():
    svc = JsonService()
    yield svc
    svc.stop()


@pytest.fixture
def tools_live(live, service):
    install_tool_task(live, service.url)
    return live


def _send(turn: ToolTurn, text: str, message_id: str) -> dict:
    return send(turn.client, turn.pk, turn.session_id, text, message_id=message_id)


def _wait(turn: ToolTurn, name: str, count: int) -> dict:
    return turn.socket.wait_event(name, count, timeout=30)[count - 1]


def _calls(service: JsonService, customer: str) -> int:
    return sum(1 for path in service.requests if path.startswith(f"/status?customer={customer}"))


def _replayed_tags(request: dict) -> list[str]:
    """The tag-form asks and results a request carried after the user's message, in order."""
    return [m["content"] for m in request["messages"] if m["role"] == "assistant" and "<tool_call>" in m["content"]]


@pytest.mark.parametrize("form", ["tags", "native"])
def test_a_retried_message_continues_from_the_tool_its_failed_turn_ran(tools_live, llm, service, form):
    # was: the retry ran from scratch: the model, told nothing of the use made, asked for the tool again and the
    # endpoint was called a second time for the same message
    customer = f"ada-{form}"
    query = {"params": {"customer": customer}}
    ask = Reply(tag_call("http_json", query)) if form == "tags" else \
        ToolCall("http_json", json.dumps(query), id="call_ada")
    turn = ToolTurn(tools_live)
    try:
        llm.script(ask, *DOWN)
        sent = _send(turn, "status of ada?", "m-ada")
        error = _wait(turn, "error", 1)
        assert error["retryable"] is True and error["user_message_pk"] == sent["message_pk"]
        tools_live.wait_idle()
        assert _calls(service, customer) == 1

        llm.script(Reply(answer("Ada is gold.")))
        again = _send(turn, "status of ada?", "m-ada")
        assert again["message_pk"] == sent["message_pk"]
        final = _wait(turn, "mojo_message", 1)
        assert final["text"] == "Ada is gold." and final["user_message_pk"] == sent["message_pk"]
    finally:
        turn.close()
    assert _calls(service, customer) == 1  # the tool did not run again
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert (execution.tool_name, execution.status) == ("http_json", "done")
    retry = llm.requests[-1]["messages"]
    assert [m["role"] for m in retry[-3:]] == ["user", "assistant", "user" if form == "tags" else "tool"], retry
    assert retry[-3]["content"] == "status of ada?"
    if form == "tags":
        assert retry[-2]["role"] == "assistant" and "<tool_name>http_json</tool_name>" in retry[-2]["content"]
    else:
        assert retry[-2]["role"] == "assistant" and retry[-2]["tool_calls"][0]["id"] == "call_ada"
        assert retry[-1]["role"] == "tool" and retry[-1]["tool_call_id"] == "call_ada"
    (result,) = tool_results_sent(llm.requests[-1])
    assert json.dumps(queries[0].result) in result and '"status": "gold"' in result
    assert message(tools_live, sent["message_pk"]).status == "answered"
    # The first attempt's decision was traced with its failure; the retry's answer follows it up.
    assert [(e.kind, e.source) for e in trace(tools_live, turn.pk)] == [("TOOL_CALL", "INSTRUCT_TASK"),
                                                                        ("DIRECT", "TOOL_FOLLOW_UP")]


def test_a_retried_message_s_recorded_uses_come_in_call_order_and_count_toward_the_bound(tools_live, llm):
    turn = ToolTurn(tools_live)
    try:
        llm.script(*(Reply(tag_call("echo", {"text": f"n{i}"})) for i in range(3)), *DOWN)
        _send(turn, "loop", "m-loop")
        _wait(turn, "error", 1)
        tools_live.wait_idle()
        llm.script(Reply(answer("Here is what I have.")))
        _send(turn, "loop", "m-loop")
        assert _wait(turn, "mojo_message", 1)["text"] == "Here is what I have."
    finally:
        turn.close()
    assert [q[0].query["text"] for _e, q in tool_rows(tools_live, turn.pk)] == ["n0", "n1", "n2"]
    retry = llm.requests[-1]
    results = tool_results_sent(retry)
    assert [json.loads(r.split("<result>")[1].split("</result>")[0])["echo"] for r in results] == ["n0", "n1", "n2"]
    assert [a.count("<tool_call>") for a in _replayed_tags(retry)] == [1, 1, 1]
    # The three uses were the turn's bound: the retry may not ask for more.
    assert "tools" not in retry
    assert retry["messages"][-1] == {"role": "system", "content": NO_MORE_TOOLS.format(limit=3)}


def _approve_then_fail(tools_live, llm, turn: ToolTurn, message_id: str) -> tuple[int, int]:
    """The message asks for guarded_echo; the user approves; the follow-up runs it, then its LLM call fails."""
    llm.script(Reply(tag_call("guarded_echo", {"text": "secret"}, "May I echo your secret?")))
    sent = _send(turn, "echo with approval", message_id)
    asked = _wait(turn, "mojo_message", 1)
    assert asked["text"] == "May I echo your secret?"
    llm.script(*DOWN)
    turn.client.ok("POST", "/task_tool_execution",
                   json={"task_tool_execution_pk": asked["task_tool_execution_pk"], "approved": True})
    assert _wait(turn, "error", 1)["user_message_pk"] == sent["message_pk"]
    tools_live.wait_idle()
    return sent["message_pk"], asked["task_tool_execution_pk"]


def test_an_approved_use_whose_follow_up_failed_is_neither_asked_nor_run_again_on_retry(tools_live, llm):
    # was: the retry asked the user to approve the same echo again (a second awaiting_approval use)
    turn = ToolTurn(tools_live)
    try:
        message_pk, tool_pk = _approve_then_fail(tools_live, llm, turn, "m-approve")
        assert message(tools_live, message_pk).status == "failed"
        llm.script(Reply(answer("Done: secret.")))
        _send(turn, "echo with approval", "m-approve")
        final = _wait(turn, "mojo_message", 2)
        assert final["text"] == "Done: secret." and "task_tool_execution_pk" not in final
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert (execution.task_tool_execution_pk, execution.status, execution.approved) == (tool_pk, "done", True)
    assert queries[0].result["echo"] == "secret"
    (result,) = tool_results_sent(llm.requests[-1])
    assert '"echo": "secret"' in result
    assert message(tools_live, message_pk).status == "answered"


def test_a_follow_up_sees_the_uses_its_turn_made_before_asking_for_approval(tools_live, llm):
    # was: the follow-up was told only the approved use: the echo run before the ask was lost to the model
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "first"})),
                   Reply(tag_call("guarded_echo", {"text": "second"}, "May I echo it?")))
        _send(turn, "echo twice", "m-twice")
        asked = _wait(turn, "mojo_message", 1)
        llm.script(Reply(answer("Both done.")))
        turn.client.ok("POST", "/task_tool_execution",
                       json={"task_tool_execution_pk": asked["task_tool_execution_pk"], "approved": True})
        assert _wait(turn, "mojo_message", 2)["text"] == "Both done."
    finally:
        turn.close()
    assert [(e.tool_name, e.status) for e, _q in tool_rows(tools_live, turn.pk)] == [("echo", "done"),
                                                                                   ("guarded_echo", "done")]
    results = tool_results_sent(llm.requests[-1])
    assert len(results) == 2 and '"echo": "first"' in results[0] and '"echo": "second"' in results[1]


def test_a_retry_that_fails_again_leaves_the_uses_for_the_next_and_adds_none(tools_live, llm, service):
    turn = ToolTurn(tools_live)
    query = {"params": {"customer": "cy"}}
    try:
        llm.script(Reply(tag_call("http_json", query)), *DOWN)
        sent = _send(turn, "status of cy?", "m-cy")
        _wait(turn, "error", 1)
        tools_live.wait_idle()
        llm.script(*DOWN)  # the retry fails too, before any answer
        _send(turn, "status of cy?", "m-cy")
        second = _wait(turn, "error", 2)
        assert second["user_message_pk"] == sent["message_pk"] and second["retryable"] is True
        tools_live.wait_idle()
        assert len(tool_results_sent(llm.requests[-1])) == 1  # it was told the recorded use
        llm.script(Reply(answer("Cy is gold.")))
        _send(turn, "status of cy?", "m-cy")
        assert _wait(turn, "mojo_message", 1)["text"] == "Cy is gold."
    finally:
        turn.close()
    assert _calls(service, "cy") == 1
    (execution, _queries), = tool_rows(tools_live, turn.pk)
    assert execution.status == "done"
    (result,) = tool_results_sent(llm.requests[-1])
    assert '"customer": "cy"' in result
    with tools_live.db() as db:
        stored = db.get(Message, sent["message_pk"])
        assert stored.status == "answered" and db.get(Message, stored.answer_message_fk).text == "Cy is gold."


def test_a_failed_use_is_told_on_retry_with_its_error_but_leaves_the_retry_free_to_try_again(tools_live, llm):
    # was: the failed use counted toward the bound like the two that ran: the retry was sent with no tools and told
    # it had used all its calls, so after an outage the tool could never be tried again for this message
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "n0"})), Reply(tag_call("echo", {"text": "n1"})),
                   Reply(tag_call("boom", {"text": "n2"})), *DOWN)
        _send(turn, "loop", "m-boom")
        _wait(turn, "error", 1)
        tools_live.wait_idle()
        llm.script(Reply(tag_call("echo", {"text": "n3"})), Reply(answer("Here is what I have.")))
        _send(turn, "loop", "m-boom")
        assert _wait(turn, "mojo_message", 1)["text"] == "Here is what I have."
    finally:
        turn.close()
    assert [(e.tool_name, e.status, q[0].query["text"]) for e, q in tool_rows(tools_live, turn.pk)] == [
        ("echo", "done", "n0"), ("echo", "done", "n1"), ("boom", "failed", "n2"), ("echo", "done", "n3")]
    retry, last = llm.requests[-2], llm.requests[-1]
    told = tool_results_sent(retry)
    assert len(told) == 3 and '"echo": "n0"' in told[0] and '"echo": "n1"' in told[1]
    assert "the tool failed: RuntimeError: kaboom" in told[2]
    # Two uses ran: the retry may make one more, which it did; then the bound (3) is reached.
    assert "tools" in retry and NO_MORE_TOOLS.format(limit=3) not in str(retry["messages"])
    assert "tools" not in last and last["messages"][-1] == {"role": "system", "content": NO_MORE_TOOLS.format(limit=3)}
