"""A message whose turn used tools, then failed, sent again with its message_id: the retried turn continues
from the uses already recorded for that message (their calls and results, in call order): the model is told them
instead of asking again. Through the live server and the scripted OpenAI-compatible server."""

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
    tag_call,
    tool_results_sent,
    tool_rows,
    trace,
)
from tests.support.scripted_llm import HTTPError, Reply, ToolCall

# What makes a turn's LLM call fail: the first attempt and the provider's 2 retries.
DOWN = (HTTPError(500), HTTPError(500), HTTPError(500))


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
    # was: the retry's prompt ended with the user's message: it lacked the recorded call and its result, and a
    # model told nothing of them would call the endpoint again
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
    # was: the retry's prompt lacked the approved use and its result: a model told nothing of them would ask the
    # user to approve the echo again
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
    # was: the follow-up's prompt carried only the approved use's result, not the echo run before the ask
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


def test_a_follow_up_counts_the_uses_its_turn_made_before_the_approval_toward_the_bound(tools_live, llm):
    # The echo before the ask and the approved use are two of the three calls: the follow-up may make one more.
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "first"})),
                   Reply(tag_call("guarded_echo", {"text": "second"}, "May I echo it?")))
        _send(turn, "echo thrice", "m-thrice")
        asked = _wait(turn, "mojo_message", 1)
        llm.script(Reply(tag_call("echo", {"text": "third"})), Reply(answer("All three.")))
        turn.client.ok("POST", "/task_tool_execution",
                       json={"task_tool_execution_pk": asked["task_tool_execution_pk"], "approved": True})
        assert _wait(turn, "mojo_message", 2)["text"] == "All three."
    finally:
        turn.close()
    assert [(e.tool_name, e.status) for e, _q in tool_rows(tools_live, turn.pk)] == [
        ("echo", "done"), ("guarded_echo", "done"), ("echo", "done")]
    follow_up, last = llm.requests[-2], llm.requests[-1]
    assert "tools" in follow_up or NO_MORE_TOOLS.format(limit=3) not in str(follow_up["messages"])
    assert last["messages"][-1] == {"role": "system", "content": NO_MORE_TOOLS.format(limit=3)}


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
    # was: the retry's prompt lacked the three recorded uses. Counting the failed one with the two that ran would
    # send the retry with no tools (the bound reached), so after an outage the tool could never be tried again.
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


def test_a_declined_use_is_told_on_retry_and_counts_toward_the_bound(tools_live, llm):
    # was: the retry's prompt lacked the two echoes and the user's refusal: a model told nothing of them would ask
    # the user again
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "n0"})), Reply(tag_call("echo", {"text": "n1"})),
                   Reply(tag_call("guarded_echo", {"text": "secret"}, "May I echo your secret?")))
        sent = _send(turn, "echo with approval", "m-decline")
        asked = _wait(turn, "mojo_message", 1)
        assert asked["text"] == "May I echo your secret?"
        llm.script(*DOWN)
        turn.client.ok("POST", "/task_tool_execution",
                       json={"task_tool_execution_pk": asked["task_tool_execution_pk"], "approved": False})
        assert _wait(turn, "error", 1)["user_message_pk"] == sent["message_pk"]
        tools_live.wait_idle()
        llm.script(Reply(answer("I will not echo it.")))
        _send(turn, "echo with approval", "m-decline")
        final = _wait(turn, "mojo_message", 2)
        assert final["text"] == "I will not echo it." and "task_tool_execution_pk" not in final
    finally:
        turn.close()
    assert [(e.tool_name, e.status) for e, _q in tool_rows(tools_live, turn.pk)] == [
        ("echo", "done"), ("echo", "done"), ("guarded_echo", "declined")]
    retry = llm.requests[-1]
    told = tool_results_sent(retry)
    assert len(told) == 3 and '"echo": "n1"' in told[1] and "The user declined this tool call" in told[2]
    # The declined use is one of the three calls: the retry may ask for none.
    assert "tools" not in retry
    assert retry["messages"][-1] == {"role": "system", "content": NO_MORE_TOOLS.format(limit=3)}
    assert message(tools_live, sent["message_pk"]).status == "answered"


def test_a_use_with_no_result_yet_is_not_replayed_its_follow_up_tells_it_once(tools_live, llm):
    # A use awaiting the user's decision has no result: not replayed. At its follow-up's set-up the approved use
    # still has none: it is told once, as it runs, after the use the message's first approval ran.
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("guarded_echo", {"text": "one"}, "May I echo one?")))
        _send(turn, "echo twice with approval", "m-two-asks")
        first = _wait(turn, "mojo_message", 1)
        llm.script(Reply(tag_call("guarded_echo", {"text": "two"}, "May I echo two?")))
        turn.client.ok("POST", "/task_tool_execution",
                       json={"task_tool_execution_pk": first["task_tool_execution_pk"], "approved": True})
        second = _wait(turn, "mojo_message", 2)
        assert second["text"] == "May I echo two?"
        llm.script(Reply(answer("One and two.")))
        turn.client.ok("POST", "/task_tool_execution",
                       json={"task_tool_execution_pk": second["task_tool_execution_pk"], "approved": True})
        assert _wait(turn, "mojo_message", 3)["text"] == "One and two."
    finally:
        turn.close()
    assert [(e.tool_name, e.status, q[0].result["echo"]) for e, q in tool_rows(tools_live, turn.pk)] == [
        ("guarded_echo", "done", "one"), ("guarded_echo", "done", "two")]
    told_first, told_second = tool_results_sent(llm.requests[-2]), tool_results_sent(llm.requests[-1])
    assert len(told_first) == 1 and '"echo": "one"' in told_first[0]
    assert len(told_second) == 2 and '"echo": "one"' in told_second[0] and '"echo": "two"' in told_second[1]
    assert [a.count("guarded_echo") for a in _replayed_tags(llm.requests[-1])] == [1, 1]


def test_a_stopped_turn_s_uses_are_told_on_retry(tools_live, llm):
    # The stop cancels the LLM call after the echo ran: the use happened, so the retry goes on from it.
    # was: the retry's prompt ended with the user's message, the echo untold
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "before the stop"})),
                   Reply(chunks=[f"w{i} " for i in range(100)], delay_s=0.05))
        sent = _send(turn, "echo then stop", "m-stop")
        turn.socket.wait_event("mojo_token", timeout=30)
        assert turn.client.ok("POST", "/user_task_execution_stop", json={"user_task_execution_pk": turn.pk})["stopped"]
        error = _wait(turn, "error", 1)
        assert error["retryable"] is True and error["user_message_pk"] == sent["message_pk"]
        tools_live.wait_idle()
        llm.script(Reply(answer("Echoed.")))
        _send(turn, "echo then stop", "m-stop")
        assert _wait(turn, "mojo_message", 1)["text"] == "Echoed."
    finally:
        turn.close()
    assert [(e.tool_name, e.status) for e, _q in tool_rows(tools_live, turn.pk)] == [("echo", "done")]
    (told,) = tool_results_sent(llm.requests[-1])
    assert '"echo": "before the stop"' in told
    assert message(tools_live, sent["message_pk"]).status == "answered"
