"""A refused step change (validation, rejection, relaunch) sent again, as its 503's Retry-After invites: it runs.

The changes that are recorded once: was, the same validation sent again
answered 200 "run_submitted": false and nothing ran (the decision was recorded, its run failed); a rejection
without review chat or a relaunch sent again was a 409 (the step was already invalidated)."""

from __future__ import annotations

from mojodex_core.workflow.runner import NOT_ADVANCED
from tests.support.scripted_llm import Reply
from tests.workflow._helpers import (
    at_the_divider,
    awaiting,
    poem_user,
    run_messages,
    start_doc,
    start_poem,
    steps,
    wait_completed,
    wait_steps,
)

DECIDE = "/user_workflow_step_execution"


def test_a_refused_validation_retried_as_retry_after_says_runs_the_next_step(wf, llm, refuse):
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    body = {"user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"], "validated": True}
    refuse(wf)
    assert user.call("POST", DECIDE, json=body).status_code == 503
    refuse.undo()
    llm.script(Reply("Stanza about the tide"))
    again = user.call("POST", DECIDE, json=body)
    assert again.status_code == 200, again.text
    assert again.json()["run_submitted"] is True, [s["status"] for s in steps(user, pk)]
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"
    wf.wait_idle()
    assert user.ok("POST", DECIDE, json=body)["run_submitted"] is False  # its run ran: nothing more to do


def test_a_validation_refused_twice_answers_503_twice_then_runs_its_one_run(wf, llm, refuse):
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    body = {"user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"], "validated": True}
    refuse(wf)
    for _ in range(2):
        refused = user.call("POST", DECIDE, json=body)
        assert refused.status_code == 503 and refused.json() == {"error": NOT_ADVANCED}, refused.text
        assert refused.headers["Retry-After"] == "5"
    assert run_messages(wf, created["session_id"]) == [("failed", NOT_ADVANCED)]  # the same run, failed again
    refuse.undo()
    llm.script(Reply("Stanza about the tide"))
    assert user.ok("POST", DECIDE, json=body)["run_submitted"] is True
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the tide"
    wf.wait_idle()
    assert run_messages(wf, created["session_id"]) == [("answered", None)]


def test_a_refused_validation_is_no_retry_of_another_decision(wf, llm, refuse):
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    step_pk = divider["user_workflow_step_execution_pk"]
    refuse(wf)
    assert user.call("POST", DECIDE, json={"user_workflow_step_execution_pk": step_pk, "validated": True}
                     ).status_code == 503
    refuse.undo()
    other = user.call("POST", DECIDE, json={"user_workflow_step_execution_pk": step_pk, "validated": False})
    assert other.status_code == 409, other.text
    assert run_messages(wf, created["session_id"]) == [("failed", NOT_ADVANCED)]


def test_a_refused_rejection_without_review_chat_runs_the_step_again_when_sent_again(wf, llm, refuse):
    user = poem_user(wf)
    llm.script(Reply("1. Intro"))
    created = start_doc(user, "talk.txt", b"Hello and welcome.")
    pk = created["user_task_execution_pk"]
    chapters = next(r for r in wait_steps(user, pk, awaiting(2)) if r["rank"] == 2)
    body = {"user_workflow_step_execution_pk": chapters["user_workflow_step_execution_pk"], "validated": False}
    refuse(wf)
    assert user.call("POST", DECIDE, json=body).status_code == 503
    refuse.undo()
    llm.script(Reply("1. Welcome\n2. Outro"))
    assert user.ok("POST", DECIDE, json=body)["run_submitted"] is True
    again = next(r for r in wait_steps(user, pk, lambda rs: awaiting(2)(rs) and all(
        r["user_workflow_step_execution_pk"] != chapters["user_workflow_step_execution_pk"] for r in rs))
        if r["rank"] == 2)
    assert again["result"] == [{"chapters": "1. Welcome\n2. Outro"}]


def test_a_refused_relaunch_runs_the_step_when_sent_again(wf, llm, refuse):
    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": []}))
    pk = start_poem(user)["user_task_execution_pk"]
    (failed,) = wait_steps(user, pk, lambda rs: rs and rs[0]["status"] == "failed")
    body = {"user_workflow_step_execution_pk": failed["user_workflow_step_execution_pk"]}
    refuse(wf)
    refused = user.call("PUT", DECIDE, json=body)
    assert refused.status_code == 503 and refused.json() == {"error": NOT_ADVANCED}, refused.text
    refuse.undo()
    llm.script(Reply(json={"stanza_topics": ["a"]}))
    relaunched = user.ok("PUT", DECIDE, json=body)
    assert (relaunched["run_submitted"], relaunched["status"]) == (True, "invalidated")
    (again,) = wait_steps(user, pk, awaiting(1))
    assert again["result"] == [{"stanza_topic": "a"}]


def test_a_refused_result_edit_reruns_the_later_steps_when_sent_again(wf, llm, refuse):
    # An edit is no recorded-once change: sent again, it is stored again and asks for a run of its own.
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    llm.script(Reply("Stanza about the tide"))
    user.ok("POST", DECIDE, json={"user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"],
                                  "validated": True})
    wait_completed(user, pk)
    wf.wait_idle()
    body = {"user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"],
            "result": [{"stanza_topic": "stars"}]}
    refuse(wf)
    refused = user.call("PUT", "/user_workflow_step_execution_result", json=body)
    assert refused.status_code == 503 and refused.json() == {"error": NOT_ADVANCED}, refused.text
    refuse.undo()
    llm.script(Reply("Stanza about the stars"))
    assert user.ok("PUT", "/user_workflow_step_execution_result", json=body)["run_submitted"] is True
    assert wait_completed(user, pk)["produced_text"] == "Stanza about the stars"
