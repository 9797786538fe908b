"""Tools in instruct turns, through the live server and the scripted OpenAI-compatible server:
both forms of asking, approval, the built-in tools, errors and the per-turn bound."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from mojodex_core.db.models import Message, ProducedText, ProducedTextVersion
from mojodex_core.execution.tool_requests import NO_MORE_TOOLS
from tests.integration._helpers import BODY, DRAFT, TITLE, new_execution, send
from tests.integration._tools import (
    TOOL_TASK,
    ToolTurn,
    answer,
    assert_nothing_leaked,
    one_char,
    tag_call,
    tool_results_sent,
    tool_rows,
    trace,
)
from tests.support.scripted_llm import Reply, ToolCall


def test_tag_form_tool_turn_end_to_end(tools_live, llm):
    turn = ToolTurn(tools_live)
    try:
        llm.script(
            Reply(chunks=one_char("Let me check. " + tag_call("echo", {"text": "ping"}))),
            Reply(chunks=one_char(answer("The echo says ping."))),
        )
        final = turn.send("use the echo")
        assert final["text"] == "Let me check.\nThe echo says ping."
        assert "".join(turn.deltas(final)["mojo"]) == final["text"]
        assert_nothing_leaked(turn.all_text_sent())
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert (execution.tool_name, execution.status, execution.call_id) == ("echo", "done", None)
    assert execution.explanation == "Checking something."
    assert queries[0].query == {"text": "ping"}
    assert queries[0].result["echo"] == "ping" and queries[0].result_date is not None
    follow_up = llm.requests[1]
    assert "tools" in llm.requests[0]  # auto mode offers the native form too
    results = tool_results_sent(follow_up)
    assert len(results) == 1 and '"echo": "ping"' in results[0]
    assert "<tool_call>" in follow_up["messages"][-2]["content"]  # the model's own ask, replayed
    entries = [(e.kind, e.text, e.source) for e in trace(tools_live, turn.pk)]
    assert entries == [
        ("TOOL_CALL", "[TOOL_CALL] echo: SECRET-WHY tool", "INSTRUCT_TASK"),
        ("DIRECT", "[DIRECT] SECRET-WHY answer", "TOOL_FOLLOW_UP"),
    ]


def test_function_call_form_tool_turn_end_to_end(tools_live, llm):
    turn = ToolTurn(tools_live)
    try:
        llm.script(
            ToolCall("echo", json.dumps({"text": "pong", "explanation": "Echoing."}), id="call_42",
                     content_chunks=one_char("<reasoning>SECRET-WHY native</reasoning>")),
            Reply(chunks=one_char(answer("It said pong."))),
        )
        final = turn.send("use the echo")
        assert final["text"] == "It said pong."
        assert "".join(turn.deltas(final)["mojo"]) == final["text"]
        assert_nothing_leaked(turn.all_text_sent())
    finally:
        turn.close()
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert {"echo", "guarded_echo", "internal_memory", "http_json"} <= offered
    follow_up = llm.requests[1]["messages"]
    assert follow_up[-2]["role"] == "assistant" and follow_up[-2]["tool_calls"][0]["id"] == "call_42"
    assert follow_up[-1]["role"] == "tool" and follow_up[-1]["tool_call_id"] == "call_42"
    assert json.loads(follow_up[-1]["content"])["echo"] == "pong"
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert (execution.status, execution.call_id, execution.explanation) == ("done", "call_42", "Echoing.")
    assert queries[0].query == {"text": "pong"}
    kinds = [e.text for e in trace(tools_live, turn.pk)]
    assert kinds == ["[TOOL_CALL] echo: SECRET-WHY native", "[DIRECT] SECRET-WHY answer"]


def _ask_approval(tools_live, llm) -> tuple[ToolTurn, dict]:
    turn = ToolTurn(tools_live)
    llm.script(Reply(chunks=one_char(tag_call("guarded_echo", {"text": "secret"}, "May I echo your secret?"))))
    final = turn.send("echo with approval")
    assert final["text"] == "May I echo your secret?"
    assert "".join(turn.deltas(final)["mojo"]) == final["text"]
    (execution, _queries), = tool_rows(tools_live, turn.pk)
    assert execution.status == "awaiting_approval" and execution.requires_approval
    assert final["task_tool_execution_pk"] == execution.task_tool_execution_pk
    assert len(llm.requests) == 1  # the tool did not run, no follow-up yet
    return turn, final


def test_approved_tool_runs_and_the_turn_follows_up(tools_live, llm):
    turn, asked = _ask_approval(tools_live, llm)
    try:
        pk = asked["task_tool_execution_pk"]
        stranger = tools_live.new_user()
        response = stranger.call("POST", "/task_tool_execution", json={"task_tool_execution_pk": pk, "approved": True})
        assert response.status_code == 404, response.text
        llm.script(Reply(chunks=one_char(answer("Done: secret."))))
        body = turn.client.ok("POST", "/task_tool_execution", json={"task_tool_execution_pk": pk, "approved": True})
        assert body["status"] == "approved"
        again = turn.client.call("POST", "/task_tool_execution", json={"task_tool_execution_pk": pk, "approved": False})
        assert again.status_code == 409 and "error" in again.json()
        final = turn.wait("mojo_message", 2)
        assert final["text"] == "Done: secret."
        assert_nothing_leaked(turn.all_text_sent())
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert (execution.status, execution.approved) == ("done", True) and execution.decided_at is not None
    assert queries[0].result["echo"] == "secret"
    results = tool_results_sent(llm.requests[1])
    assert len(results) == 1 and "secret" in results[0]
    assert [e.kind for e in trace(tools_live, turn.pk)] == ["TOOL_CALL", "DIRECT"]


def test_declined_tool_is_told_to_the_model(tools_live, llm):
    turn, asked = _ask_approval(tools_live, llm)
    try:
        llm.script(Reply(chunks=one_char(answer("Fine, I will not."))))
        turn.client.ok("POST", "/task_tool_execution",
                       json={"task_tool_execution_pk": asked["task_tool_execution_pk"], "approved": False})
        final = turn.wait("mojo_message", 2)
        assert final["text"] == "Fine, I will not."
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert (execution.status, execution.approved) == ("declined", False)
    assert "declined" in queries[0].result["error"]
    results = tool_results_sent(llm.requests[1])
    assert len(results) == 1 and "declined" in results[0]


def test_approval_route_validates_input(tools_live):
    client = tools_live.new_user()
    assert client.call("POST", "/task_tool_execution", json={"approved": True}).status_code == 400
    response = client.call("POST", "/task_tool_execution", json={"task_tool_execution_pk": 1, "approved": "yes"})
    assert response.status_code == 400
    assert client.call("POST", "/task_tool_execution",
                       json={"task_tool_execution_pk": 2**30, "approved": True}).status_code == 404


def _earlier_text(live, client, words: str) -> int:
    """An earlier execution of the client's with a produced text."""
    execution = client.new_execution(TOOL_TASK)
    with live.db() as db:
        produced = ProducedText(user_task_execution_fk=execution["user_task_execution_pk"], user_id=client.user_id)
        db.add(produced)
        db.flush()
        db.add(ProducedTextVersion(produced_text_fk=produced.produced_text_pk, version_index=1,
                                   title="Notes", production=words))
        db.add(Message(session_id=execution["session_id"], user_task_execution_fk=execution["user_task_execution_pk"],
                       sender="user", event_name="user_message", text=f"remember: {words}", status="answered"))
    return execution["user_task_execution_pk"]


def test_internal_memory_only_searches_the_callers_own_texts(tools_live, llm):
    other = tools_live.new_user(tasks=[TOOL_TASK])
    _earlier_text(tools_live, other, "zebrafinch budget belongs to someone else")
    turn = ToolTurn(tools_live)
    mine = _earlier_text(tools_live, turn.client, "my zebrafinch budget is 40k")
    try:
        llm.script(
            Reply(tag_call("internal_memory", {"query": "zebrafinch budget"})),
            Reply(answer("Your budget is 40k.")),
        )
        turn.send("what was my budget?")
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert execution.status == "done", execution.error
    matches = queries[0].result["matches"]
    assert sorted(m["kind"] for m in matches) == ["message", "produced_text"]
    assert {m["user_task_execution_pk"] for m in matches} == {mine}
    assert all("40k" in m["text"] for m in matches)
    assert "someone else" not in json.dumps(queries[0].result)
    assert "someone else" not in json.dumps(llm.requests[1])


def test_http_json_calls_the_configured_endpoint(tools_live, llm, service):
    turn = ToolTurn(tools_live)
    try:
        llm.script(
            Reply(tag_call("http_json", {"params": {"customer": "ada"}})),
            Reply(answer("Ada is gold.")),
        )
        assert turn.send("status of ada?")["text"] == "Ada is gold."
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert execution.status == "done", execution.error
    assert queries[0].result == {"status": 200, "data": {"status": "gold", "params": {"customer": "ada"}}}
    assert any(path.startswith("/status?customer=ada") for path in service.requests)


@pytest.mark.parametrize(
    ("name", "query", "error"),
    [
        ("slow", {"text": "x"}, "timed out after 0.3 s"),
        ("boom", {"text": "x"}, "RuntimeError: kaboom"),
        ("no_such_tool", {"text": "x"}, "unknown tool 'no_such_tool'"),
        ("echo", {"txt": "x"}, "invalid query for echo"),
        ("echo", "{not json", "invalid query for echo: the query is not valid JSON"),
        ("clock", {"text": "x"}, "the tool returned a result that is not JSON"),
        # A tool that needs approval is not offered to the user with a query it would refuse.
        ("guarded_echo", {"txt": "x"}, "invalid query for guarded_echo"),
        ("guarded_echo", "{not json", "invalid query for guarded_echo: the query is not valid JSON"),
    ],
    ids=["timeout", "exception", "unknown", "invalid-schema", "invalid-json", "not-json", "approval-invalid-schema",
         "approval-invalid-json"],
)
def test_tool_errors_are_told_to_the_model_and_the_turn_completes(tools_live, llm, name, query, error):
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call(name, query)), Reply(answer("Sorry, the tool failed.")))
        assert turn.send("try it")["text"] == "Sorry, the tool failed."
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert execution.status == "failed" and error in execution.error
    assert error in queries[0].result["error"]
    results = tool_results_sent(llm.requests[1])
    assert len(results) == 1 and error in results[0]


def test_a_stored_tool_config_the_run_cannot_read_fails_the_use_not_the_turn(tools_live, llm):
    """A tester stored timeout_s "abc" (specs now refuse it; a task stored before keeps it): each use crashed the
    turn as an internal error, and left its task_tool_execution "running" for ever."""
    from datetime import UTC, datetime

    from sqlalchemy import select

    from mojodex_core.db.models import Task

    with tools_live.db() as db:
        task = db.scalar(select(Task).where(Task.name_for_system == TOOL_TASK))
        before = task.spec
        task.spec = {**before, "tools": [{**t, "config": {"timeout_s": "abc"}} if t["name"] == "echo" else t
                                         for t in before["tools"]]}
        task.updated_at = datetime.now(UTC)
        db.commit()
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "x"})), Reply(answer("Sorry, the tool failed.")))
        assert turn.send("try it")["text"] == "Sorry, the tool failed."
    finally:
        turn.close()
        with tools_live.db() as db:
            db.scalar(select(Task).where(Task.name_for_system == TOOL_TASK)).spec = before
            db.commit()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert execution.status == "failed" and "could not run" in execution.error
    assert "could not run" in queries[0].result["error"]


def test_tool_calls_per_turn_are_bounded(tools_live, llm):
    turn = ToolTurn(tools_live)
    try:
        llm.script(
            *(Reply(tag_call("echo", {"text": f"n{i}"})) for i in range(3)),
            Reply("Here is what I have. " + tag_call("echo", {"text": "n3"})),  # past the bound: not run
        )
        final = turn.send("loop forever")
        assert final["text"] == "Here is what I have."
    finally:
        turn.close()
    rows = tool_rows(tools_live, turn.pk)
    assert [q[0].query["text"] for _e, q in rows] == ["n0", "n1", "n2"]
    assert len(llm.requests) == 4
    assert all("tools" in r for r in llm.requests[:3])
    last = llm.requests[3]
    assert "tools" not in last
    assert last["messages"][-1] == {"role": "system", "content": NO_MORE_TOOLS.format(limit=3)}
    # The last decision was the answer (its call was ignored), not a tool call: a tester found it traced as one.
    entries = [e.text for e in trace(tools_live, turn.pk)]
    assert [e.split(" ")[0] for e in entries] == ["[TOOL_CALL]"] * 3 + ["[DIRECT]"], entries


def test_calls_past_the_bound_in_one_reply_are_recorded_as_refused(tools_live, llm):
    """A tester's model asked for five tools in one reply: it was told five results, but only three uses were
    recorded, where every use asked for is."""
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply("".join(tag_call("echo", {"text": f"n{i}"}) for i in range(5))),
                   Reply(answer("Done.")))
        assert turn.send("five at once")["text"] == "Done."
    finally:
        turn.close()
    rows = tool_rows(tools_live, turn.pk)
    assert [(q[0].query["text"], e.status) for e, q in rows] == [
        ("n0", "done"), ("n1", "done"), ("n2", "done"), ("n3", "failed"), ("n4", "failed")]
    assert all(e.error == NO_MORE_TOOLS.format(limit=3) for e, _q in rows[3:])
    (results,) = tool_results_sent(llm.requests[1])  # the tag form: one message with the five results
    assert results.count("<tool_result>") == 5 and results.count(NO_MORE_TOOLS.format(limit=3)) == 2


def test_concurrent_decisions_have_one_winner(tools_live, llm):
    turn, asked = _ask_approval(tools_live, llm)
    try:
        llm.script(Reply(answer("Ran once.")))
        body = {"task_tool_execution_pk": asked["task_tool_execution_pk"], "approved": True}
        with ThreadPoolExecutor(4) as pool:
            statuses = sorted(pool.map(lambda _: turn.client.call("POST", "/task_tool_execution", json=body)
                                       .status_code, range(4)))
        assert statuses == [200, 409, 409, 409]
        assert turn.wait("mojo_message", 2)["text"] == "Ran once."
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert execution.status == "done" and len(queries) == 1
    assert len(llm.requests) == 2


def test_the_follow_up_may_write_the_result(tools_live, llm):
    turn = ToolTurn(tools_live)
    try:
        llm.script(Reply(tag_call("echo", {"text": "facts"})),
                   Reply(chunks=one_char("<reasoning>r</reasoning>" + DRAFT)))
        final = turn.send("write it", "draft_message")
        assert (final["produced_text_title"], final["produced_text"]) == (TITLE, BODY)
        deltas = turn.deltas(final)
        assert "".join(deltas["draft"]) == BODY and deltas["mojo"] == []
        assert_nothing_leaked(turn.all_text_sent())
    finally:
        turn.close()
    assert [e.kind for e in trace(tools_live, turn.pk)] == ["TOOL_CALL", "DIRECT"]


def test_a_task_without_tools_tells_the_model_the_tool_is_unknown(tools_live, llm):
    client = tools_live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(tag_call("echo", {"text": "x"})), Reply(answer("No tools here.")))
        send(client, pk, session_id, "use a tool")
        assert socket.wait_event("mojo_message")[0]["text"] == "No tools here."
    finally:
        socket.close()
        tools_live.wait_idle()
    assert "tools" not in llm.requests[0]
    results = tool_results_sent(llm.requests[1])
    assert len(results) == 1 and "unknown tool 'echo' (tools of this task: none)" in results[0]


def test_a_decision_whose_follow_up_the_runner_refuses_is_taken_back_and_can_be_sent_again(tools_live, llm, refuse):
    # was: the decision was committed, then submitting its follow-up turn failed (the runner shut down): the
    # route answered 500, the decision sent again was a 409 ("already decided"), and nothing ever ran the
    # follow-up, not even after a restart (the message was answered: the start-up resume skips it)
    from mojodex_core.execution.failures import NOT_STARTED

    turn, asked = _ask_approval(tools_live, llm)
    try:
        body = {"task_tool_execution_pk": asked["task_tool_execution_pk"], "approved": True}
        refuse(tools_live)
        refused = turn.client.call("POST", "/task_tool_execution", json=body)
        assert refused.status_code == 503, refused.text
        assert refused.json() == {"error": NOT_STARTED} and refused.headers["Retry-After"] == "5"
        (execution, _queries), = tool_rows(tools_live, turn.pk)
        assert (execution.status, execution.approved, execution.decided_at) == ("awaiting_approval", None, None)

        refuse.undo()
        llm.script(Reply(chunks=one_char(answer("Done: secret."))))
        assert turn.client.ok("POST", "/task_tool_execution", json=body)["status"] == "approved"
        assert turn.wait("mojo_message", 2)["text"] == "Done: secret."
    finally:
        turn.close()
    (execution, queries), = tool_rows(tools_live, turn.pk)
    assert (execution.status, execution.approved) == ("done", True)
    assert queries[0].result["echo"] == "secret"


def test_a_refused_decision_whose_follow_up_ran_meanwhile_is_answered_as_accepted(tools_live, llm, monkeypatch):
    # was: the route answered 503 "taken back" whatever undo_decision found; when the follow-up ran meanwhile
    # (another process's, its result recorded), the decision is kept and the route answers it accepted
    from sqlalchemy import update

    from mojodex_core.db.models import TaskToolQuery
    from mojodex_core.execution.jobs import JobRefused
    from mojodex_core.execution.tool_runs import DECLINED_RESULT

    turn, asked = _ask_approval(tools_live, llm)
    try:
        pk = asked["task_tool_execution_pk"]

        def ran_elsewhere_then_refused(job) -> None:  # noqa: ANN001
            with tools_live.db() as db:
                db.execute(update(TaskToolQuery).where(TaskToolQuery.task_tool_execution_fk == pk)
                           .values(result=DECLINED_RESULT))
            raise JobRefused("the runner refused it")

        monkeypatch.setattr(tools_live.platform.runner, "submit", ran_elsewhere_then_refused)
        body = turn.client.ok("POST", "/task_tool_execution", json={"task_tool_execution_pk": pk, "approved": False})
        assert body["status"] == "declined"
    finally:
        turn.close()
    (execution, _queries), = tool_rows(tools_live, turn.pk)
    assert (execution.status, execution.approved) == ("declined", False)
