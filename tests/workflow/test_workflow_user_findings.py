"""Workflows used as a user would, through the live server: each test is a bug a tester found."""

from __future__ import annotations

from tests.support.scripted_llm import HTTPError, Reply
from tests.workflow._helpers import (
    at_the_divider,
    awaiting,
    poem_user,
    start_poem,
    steps,
    validate,
    wait_completed,
    wait_steps,
)


def _reasoning(user, pk):  # noqa: ANN001, ANN202
    return user.ok("GET", "/user_task_execution/reasoning", params={"user_task_execution_pk": pk})["reasoning"]


def test_each_llm_backed_step_leaves_a_reasoning_trace_entry(wf, llm):
    user, created, pk, divider = at_the_divider(wf, llm, ["tide", "dawn"])
    llm.script(Reply("Stanza about the tide"), Reply("Stanza about dawn"))
    validate(user, divider["user_workflow_step_execution_pk"])
    wait_completed(user, pk)
    entries = _reasoning(user, pk)
    sources = [e["source"] for e in entries]
    assert sources == ["WORKFLOW_STANZA_DIVIDER", "WORKFLOW_STANZA_WRITER", "WORKFLOW_STANZA_WRITER"]
    assert all(e["kind"] == "DIRECT" for e in entries)
    assert "stanza_divider" in entries[0]["text"] and "tide" in entries[0]["text"]
    assert "Stanza about the tide" in entries[1]["text"] and "Stanza about dawn" in entries[2]["text"]


def test_a_failed_llm_call_of_a_step_leaves_no_decision_in_the_trace(wf, llm):
    user = poem_user(wf)
    llm.script(HTTPError(400))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    wait_steps(user, pk, lambda rows: rows and rows[0]["status"] == "failed")
    assert _reasoning(user, pk) == []
    assert steps(user, pk)[0]["error"]


def test_internal_workflow_run_messages_are_never_listed(wf, llm):
    """Validations, relaunches and restarts store internal ``workflow_run`` messages: GET /message hides them."""
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    llm.script(HTTPError(400))
    validate(user, divider["user_workflow_step_execution_pk"])
    failed = wait_steps(user, pk, lambda rows: any(r["status"] == "failed" for r in rows))[-1]
    llm.script(Reply("Stanza about the tide"))
    user.ok("PUT", "/user_workflow_step_execution",
            json={"user_workflow_step_execution_pk": failed["user_workflow_step_execution_pk"]})
    wait_completed(user, pk)
    llm.script(Reply("Another stanza"))
    user.ok("POST", "/restart_user_workflow_execution", json={"user_task_execution_pk": pk, "from_rank": 2})
    wf.wait_idle()
    messages = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    assert [m["event_name"] for m in messages if m["sender"] == "system"] == []
    assert {m["event_name"] for m in messages} <= {"form_input", "draft_message"}


def test_restart_from_a_rank_whose_previous_step_is_not_validated_is_refused(wf, llm):
    """It answered 200 "run_submitted" and nothing ran: rank 2 has nothing validated to start from."""
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    response = user.call("POST", "/restart_user_workflow_execution",
                         json={"user_task_execution_pk": pk, "from_rank": 2, "inputs": {"poem_topic": "rain"}})
    assert response.status_code == 409, response.text
    assert "rank 1" in response.json()["error"]
    wf.wait_idle()
    assert steps(user, pk) == [divider]  # nothing changed
    assert user.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})["json_inputs_values"] == {
        "poem_topic": "the sea at night"}


def test_steps_and_the_review_are_bounded_by_the_configured_max_tokens(database_url, scripted_llm, llm):
    """`make run`'s local model gets max_tokens=400 for every call: workflow steps asked without a bound, and
    the tiny model generated for minutes before its timeout."""
    import dataclasses

    from tests.support.live import serving
    from tests.workflow.conftest import load_workflows, workflow_settings

    settings = workflow_settings(database_url, scripted_llm.base_url)
    settings = dataclasses.replace(settings, extra={**settings.extra, "max_tokens": 123})
    with serving(settings, configure=load_workflows) as live:
        user = poem_user(live)
        llm.script(Reply(json={"stanza_topics": ["tide"]}))
        created = start_poem(user)
        pk = created["user_task_execution_pk"]
        (divider,) = wait_steps(user, pk, awaiting(1))
        validate(user, divider["user_workflow_step_execution_pk"], validated=False)
        llm.script(Reply(json={"reasoning": "r", "kind": "explanation", "message": "Because.", "instruction": None}))
        user.ok("PUT", "/user_message", json={"session_id": created["session_id"], "user_task_execution_pk": pk,
                                              "text": "why?", "message_id": "why-1"})
        live.wait_idle()
        assert [r.get("max_tokens") for r in llm.requests] == [123, 123]


def test_an_edit_while_the_result_chat_answers_still_produces_the_rerun_text(wf, llm):
    """A reviewer found it: the result chat's draft, stored after an edit had reopened the workflow, completed the
    execution again, so the re-run of the later steps found it completed and produced no text."""
    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": ["tide"]}))
    created = start_poem(user)
    pk, session_id = created["user_task_execution_pk"], created["session_id"]
    (divider,) = wait_steps(user, pk, awaiting(1))
    llm.script(Reply("Stanza about the tide"))
    validate(user, divider["user_workflow_step_execution_pk"])
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"
    llm.script(Reply(chunks=["<execution><title>Sea</title>", "<draft>Softer tide</draft>", "</execution>"],
                     delay_s=0.4),
               Reply("Stanza about the stars"))
    socket = user.socket(session_id)
    try:
        user.ok("PUT", "/user_message", json={"session_id": session_id, "user_task_execution_pk": pk,
                                              "text": "Make it softer", "message_id": "chat-1"})
        wait_steps(user, pk, lambda rows: len(llm.requests) >= 3)  # the chat's request is streaming
        edited = user.ok("PUT", "/user_workflow_step_execution_result", json={
            "user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"],
            "result": [{**divider["result"][0], "stanza_topic": "stars"}]})
        assert edited["run_submitted"] is True
        assert socket.wait_event("draft_message")[0]["produced_text"] == "Softer tide"
    finally:
        socket.close()
    rows = wait_steps(user, pk, lambda rs: any(r["rank"] == 2 and r["status"] == "done" for r in rs)
                      and not any(r["status"] == "running" for r in rs))
    assert [r["result"] for r in rows if r["rank"] == 2] == [[{"stanza": "Stanza about the stars"}]], rows
    final = wait_completed(user, pk)
    assert (final["produced_text"], final["produced_text_version_index"]) == ("Stanza about the stars", 3), final


def test_a_badly_shaped_result_edit_names_the_field_and_a_running_step_is_a_409(wf, llm):
    """A reviewer found it: the shape error was a 400 with no ``field``, and it was checked before the step's
    state, so a badly shaped edit of a running step was a 400 where the step's state makes it a 409."""
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    bad = user.call("PUT", "/user_workflow_step_execution_result", json={
        "user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"], "result": [{"wrong_key": "x"}]})
    assert bad.status_code == 400, bad.text
    assert bad.json()["field"] == "result" and "wrong_key" in bad.json()["error"]
    llm.script(Reply("Stanza about the tide", delay_s=0.4))  # each streamed word
    validate(user, divider["user_workflow_step_execution_pk"])
    rows = wait_steps(user, pk, lambda rs: any(r["rank"] == 2 and r["status"] == "running" for r in rs))
    writer = next(r for r in rows if r["rank"] == 2)
    running = user.call("PUT", "/user_workflow_step_execution_result", json={
        "user_workflow_step_execution_pk": writer["user_workflow_step_execution_pk"], "result": [{"wrong_key": "x"}]})
    assert running.status_code == 409, running.text
    assert "status running" in running.json()["error"]
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"


def test_a_step_that_returns_no_item_fails_visibly_and_can_be_relaunched(wf, llm, monkeypatch):
    """A reviewer found it: a step returning [] ended "done" with nothing to run after it and no text to
    produce, so the workflow stalled silently (execution "started", every chat a 409)."""
    from mojodex_core.workflow.runner import NO_ITEM
    from mojodex_core.workflow.steps.stanza_writer import StanzaWriter

    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    monkeypatch.setattr(StanzaWriter, "execute", lambda *_args: [])
    validate(user, divider["user_workflow_step_execution_pk"])
    rows = wait_steps(user, pk, lambda rs: any(r["rank"] == 2 and r["status"] in ("done", "failed") for r in rs))
    writer = next(r for r in rows if r["rank"] == 2)
    assert (writer["status"], writer["result"], writer["error"]) == ("failed", None, NO_ITEM), writer
    monkeypatch.undo()
    llm.script(Reply("Stanza about the tide"))
    user.ok("PUT", "/user_workflow_step_execution",
            json={"user_workflow_step_execution_pk": writer["user_workflow_step_execution_pk"]})
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"


def _failing_between_steps(monkeypatch, times: int) -> list:  # noqa: ANN001
    """The engine's transaction fails (a database error) ``times`` times, outside any step."""
    from mojodex_core.workflow import store

    real, calls = store.learned_instructions, []

    def failing(*args):  # noqa: ANN002, ANN202
        calls.append(args)
        if len(calls) <= times:
            raise RuntimeError("database error between steps")
        return real(*args)

    monkeypatch.setattr(store, "learned_instructions", failing)
    return calls


def test_a_failure_between_steps_is_retried(wf, llm, monkeypatch):
    """A reviewer found it: a failure of the engine outside a step (a database error claiming the next step,
    producing the text) marked the run's message failed and stopped: no step running, none failed, so
    relaunch, validation and chat all answered 409 and nothing ever ran the next step."""
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    calls = _failing_between_steps(monkeypatch, times=1)
    llm.script(Reply("Stanza about the tide"))
    validate(user, divider["user_workflow_step_execution_pk"])
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"
    assert len(calls) == 2


def test_a_lasting_failure_between_steps_is_an_error_event_and_a_restart_goes_on(wf, llm, monkeypatch):
    from mojodex_core.workflow.runner import STALLED

    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    socket = user.socket(created["session_id"])
    try:
        _failing_between_steps(monkeypatch, times=100)
        validate(user, divider["user_workflow_step_execution_pk"])
        error = socket.wait_event("error", timeout=15)[0]
        assert error["error"] == STALLED and error["retryable"] is False
    finally:
        socket.close()
    wf.wait_idle()
    monkeypatch.undo()
    assert [r["rank"] for r in steps(user, pk)] == [1]  # nothing half-written: no claimed rank 2
    llm.script(Reply("Stanza about the tide"))
    user.ok("POST", "/restart_user_workflow_execution", json={"user_task_execution_pk": pk, "from_rank": 2})
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"


def test_stopping_a_writing_step_fails_it_and_a_relaunch_goes_on(wf, llm):
    """A tester pressed stop while a stanza was being written: the step ended "done" seconds later, nothing ran
    after it and no text was produced, with no failed step to relaunch and chat refused - stuck until a restart.
    The step's plain chat call could not be interrupted either."""
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    llm.script(Reply("Stanza about the tide", delay_s=3))  # before its body, or each streamed word
    validate(user, divider["user_workflow_step_execution_pk"])
    wait_steps(user, pk, lambda rows: any(r["rank"] == 2 and r["status"] == "running" for r in rows)
               and len(llm.requests) >= 2)
    assert user.ok("POST", "/user_task_execution_stop", json={"user_task_execution_pk": pk})["stopped"] is True
    rows = wait_steps(user, pk, lambda rs: any(r["rank"] == 2 and r["status"] == "failed" for r in rs))
    (stopped,) = [r for r in rows if r["rank"] == 2]
    assert stopped["error"] == "The step was stopped before it ended. Relaunch it to run it again."
    llm.script(Reply("Stanza about the tide"))
    user.ok("PUT", "/user_workflow_step_execution", json={
        "user_workflow_step_execution_pk": stopped["user_workflow_step_execution_pk"]})
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"


def test_a_step_ending_after_its_execution_was_deleted_tells_nobody(wf, llm):
    """A tester deleted an execution while a stanza was written: 3 s later the step stored its result and sent
    workflow_step_execution_ended into the deleted execution's session."""
    from sqlalchemy import select

    from mojodex_core.db.models import SessionEvent, UserWorkflowStepExecution

    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    llm.script(Reply("Stanza about the tide", delay_s=2))
    validate(user, divider["user_workflow_step_execution_pk"])
    wait_steps(user, pk, lambda rows: any(r["rank"] == 2 and r["status"] == "running" for r in rows)
               and len(llm.requests) >= 2)
    with wf.db() as db:
        before = len(db.scalars(select(SessionEvent).where(SessionEvent.session_id == created["session_id"])).all())
    user.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})
    wf.wait_idle()
    with wf.db() as db:
        events = db.scalars(select(SessionEvent).where(SessionEvent.session_id == created["session_id"])).all()
        step = db.scalars(select(UserWorkflowStepExecution).where(UserWorkflowStepExecution.rank == 2,
                                                                 UserWorkflowStepExecution.user_task_execution_fk == pk)
                          ).one()
        assert [e.event_name for e in events[before:]] in ([], ["error"]), [e.event_name for e in events[before:]]
        assert step.status == "failed"


def test_a_step_call_dropped_mid_answer_is_retried(wf, llm):
    """A reviewer found 94197b5 streamed a step's call with a token handler: the first chunk counted as shown,
    so a connection dropped mid-answer was no longer retried and the step failed."""
    from tests.support.scripted_llm import DropMidStream

    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    llm.script(DropMidStream(after_chunks=2), Reply("Stanza about the tide"))
    validate(user, divider["user_workflow_step_execution_pk"])
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"


def test_a_rejected_step_whose_result_was_edited_can_be_validated(wf, llm):
    """A tester rejected the divider, then wrote the topics themselves: validating the edited result was a 409
    ("not waiting for validation"), and the workflow could not go on but by a restart."""
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    step_pk = divider["user_workflow_step_execution_pk"]
    assert validate(user, step_pk, validated=False)["validated"] is False  # the review chat is open
    edited = user.ok("PUT", "/user_workflow_step_execution_result", json={
        "user_workflow_step_execution_pk": step_pk, "result": [{"stanza_topic": "stars"}]})
    assert (edited["validated"], edited["result_author"], edited["run_submitted"]) == (None, "user", False), edited
    llm.script(Reply("Stanza about the stars"))
    assert validate(user, step_pk)["run_submitted"] is True
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the stars"
    assert "stars" in str(llm.requests[-1]["messages"])


def test_a_form_start_that_stalled_runs_when_sent_again(wf, llm, monkeypatch):
    """A reviewer found it: the engine failed between steps on a form start (STALLED, no step claimed), then the
    same start sent again was a 409 ("this execution has already started") instead of running rank 1: only a
    review message whose review closed is failed for good, not an engine failure a resend can recover from."""
    from mojodex_core.workflow.runner import STALLED

    user = poem_user(wf)
    _failing_between_steps(monkeypatch, times=100)
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    socket = user.socket(created["session_id"])
    try:
        error = socket.wait_event("error", timeout=15)[0]
        assert error["error"] == STALLED and error["retryable"] is False
    finally:
        socket.close()
    wf.wait_idle()
    monkeypatch.undo()
    assert steps(user, pk) == []
    llm.script(Reply(json={"stanza_topics": ["tide"]}))
    user.ok("POST", "/user_task_execution_run", json={
        "user_task_execution_pk": pk, "inputs": {"poem_topic": "the sea at night"}})
    (divider,) = wait_steps(user, pk, awaiting(1))
    assert divider["result"] == [{"stanza_topic": "tide"}]
