"""A step decision, relaunch, result edit or restart whose run the runner refuses (shut down, no thread to
start): the change is kept, the run's message fails with a visible error and the route answers 503; a
restart from the step that should run next goes on. Before, the route answered 500 and the message stayed
pending until the process restarted: nothing ran the next step, and the step offered nothing to act on."""

from __future__ import annotations

from mojodex_core.workflow.runner import NOT_ADVANCED
from tests.support.scripted_llm import Reply
from tests.workflow._helpers import (
    POEM,
    at_the_divider,
    awaiting,
    poem_user,
    run_messages,
    steps,
    validate,
    wait_completed,
    wait_steps,
)


def test_a_validation_runs_the_next_step(wf, llm):
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    llm.script(Reply("Stanza about the tide"))
    assert validate(user, divider["user_workflow_step_execution_pk"])["run_submitted"] is True
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"


def test_a_refused_validation_answers_503_fails_its_run_visibly_and_a_restart_goes_on(wf, llm, refuse):
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    refuse(wf)
    socket = user.socket(created["session_id"])
    try:
        refused = user.call("POST", "/user_workflow_step_execution",
                            json={"user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"],
                                  "validated": True})
        assert refused.status_code == 503, refused.text
        assert refused.json() == {"error": NOT_ADVANCED} and refused.headers["Retry-After"] == "5"
        error = socket.wait_event("error")[0]
        assert (error["error"], error["retryable"]) == (NOT_ADVANCED, False)
    finally:
        socket.close()
    assert run_messages(wf, created["session_id"])[-1] == ("failed", NOT_ADVANCED)
    (kept,) = steps(user, pk)
    assert (kept["status"], kept["validated"]) == ("done", True)  # the decision is kept

    refuse.undo()
    llm.script(Reply("Stanza about the tide"))
    user.ok("POST", "/restart_user_workflow_execution", json={"user_task_execution_pk": pk, "from_rank": 2})
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"


def test_a_refused_restart_answers_503_and_runs_when_sent_again(wf, llm, refuse):
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    refuse(wf)
    body = {"user_task_execution_pk": pk, "from_rank": 1}
    refused = user.call("POST", "/restart_user_workflow_execution", json=body)
    assert refused.status_code == 503, refused.text
    assert refused.json() == {"error": NOT_ADVANCED}
    assert run_messages(wf, created["session_id"])[-1] == ("failed", NOT_ADVANCED)

    refuse.undo()
    llm.script(Reply(json={"stanza_topics": ["stars"]}))
    user.ok("POST", "/restart_user_workflow_execution", json=body)
    (again,) = wait_steps(user, pk, awaiting(1))
    assert again["result"] == [{"stanza_topic": "stars"}]


def test_a_refused_form_start_fails_retryable_and_runs_when_posted_again(wf, llm, refuse):
    from mojodex_core.execution.failures import NOT_STARTED

    user = poem_user(wf)
    created = user.new_execution(POEM)
    pk = created["user_task_execution_pk"]
    body = {"user_task_execution_pk": pk, "inputs": {"poem_topic": "the sea at night"}}
    refuse(wf)
    refused = user.call("POST", "/user_task_execution_run", json=body)
    assert refused.status_code == 503, refused.text
    assert refused.json() == {"error": NOT_STARTED}
    refuse.undo()
    llm.script(Reply(json={"stanza_topics": ["tide"]}))
    user.ok("POST", "/user_task_execution_run", json=body)
    (divider,) = wait_steps(user, pk, awaiting(1))
    assert divider["result"] == [{"stanza_topic": "tide"}]
