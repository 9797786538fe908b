"""Validation (once, even when two arrive together), edits, restart from any rank, a failing step and
its relaunch, through the live server and the scripted LLM."""

from __future__ import annotations

import json
import threading

from tests.support.scripted_llm import Reply
from tests.workflow._helpers import (
    awaiting,
    poem_user,
    start_poem,
    steps,
    validate,
    wait_completed,
    wait_steps,
)


def _divider(user, llm, topics):  # noqa: ANN001, ANN202
    llm.script(Reply(json={"stanza_topics": topics}))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    (row,) = wait_steps(user, pk, awaiting(1))
    return created, pk, row


def test_two_concurrent_validations_of_a_step_lead_to_one_run(wf, llm):
    user = poem_user(wf)
    _created, pk, divider = _divider(user, llm, ["a", "b"])
    llm.script(Reply("Stanza A"), Reply("Stanza B"))
    answers = []
    barrier = threading.Barrier(2)

    def send() -> None:
        barrier.wait()
        answers.append(user.call("POST", "/user_workflow_step_execution", json={
            "user_workflow_step_execution_pk": divider["user_workflow_step_execution_pk"], "validated": True}))

    threads = [threading.Thread(target=send) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status_code for r in answers) == [200, 200]
    assert sorted(r.json()["run_submitted"] for r in answers) == [False, True]
    assert [r.json()["result_author"] for r in answers] == ["assistant", "assistant"]  # was: null, unlike GET's
    wait_completed(user, pk)
    wf.wait_idle()
    history = steps(user, pk, history=True)
    assert len([r for r in history if r["rank"] == 2]) == 2  # each stanza written once
    assert len(llm.requests) == 3


def test_an_edited_result_is_a_user_row_and_the_next_step_runs_on_it(wf, llm):
    user = poem_user(wf)
    _created, pk, divider = _divider(user, llm, ["a", "b", "c"])
    step_pk = divider["user_workflow_step_execution_pk"]
    edited = user.ok("PUT", "/user_workflow_step_execution_result", json={
        "user_workflow_step_execution_pk": step_pk, "result": [{"stanza_topic": "wind"}, {"stanza_topic": "rain"}]})
    assert edited["result_author"] == "user" and edited["run_submitted"] is False
    assert edited["validated"] is None  # still the user's to validate
    llm.script(Reply("Wind stanza"), Reply("Rain stanza"))
    validate(user, step_pk)
    produced = wait_completed(user, pk)
    assert produced["produced_text"] == "Wind stanza\n\nRain stanza"
    assert [r["parameter"] for r in steps(user, pk) if r["rank"] == 2] == [
        {"stanza_topic": "wind"}, {"stanza_topic": "rain"}]
    with wf.db() as db:
        from mojodex_core.db.models import UserWorkflowStepExecutionResult as Result

        authors = [r.author for r in db.query(Result).filter_by(user_workflow_step_execution_fk=step_pk)
                   .order_by(Result.user_workflow_step_execution_result_pk)]
    assert authors == ["assistant", "user"]  # the assistant's result is kept


def test_an_edited_result_of_the_wrong_shape_is_400_naming_the_problem_and_stores_nothing(wf, llm):
    user = poem_user(wf)
    _created, pk, divider = _divider(user, llm, ["a", "b"])
    step_pk = divider["user_workflow_step_execution_pk"]
    cases = [
        ([{"wrong_key": "x"}], ["result[0]", "stanza_topic", "wrong_key"]),
        ([{"stanza_topic": "wind"}, {"stanza_topic": 3}], ["result[1].stanza_topic", "string"]),
        ([{"stanza_topic": "   "}], ["result[0].stanza_topic", "empty"]),
    ]
    for result, words in cases:
        response = user.call("PUT", "/user_workflow_step_execution_result", json={
            "user_workflow_step_execution_pk": step_pk, "result": result})
        assert response.status_code == 400, (result, response.text)
        assert all(w in response.json()["error"] for w in words), (result, response.json())
    (row,) = steps(user, pk)
    assert row["result"] == [{"stanza_topic": "a"}, {"stanza_topic": "b"}] and row["validated"] is None
    with wf.db() as db:
        from mojodex_core.db.models import UserWorkflowStepExecutionResult as Result

        assert db.query(Result).filter_by(user_workflow_step_execution_fk=step_pk).count() == 1
    llm.script(Reply("A stanza"), Reply("B stanza"))  # the step still runs on: nothing was half-written
    validate(user, step_pk)
    assert wait_completed(user, pk)["produced_text"] == "A stanza\n\nB stanza"


def test_every_library_step_declares_the_shape_of_its_result():
    from mojodex_core.workflow.steps import get_step, step_names

    for name in step_names():
        assert get_step(name).result_item is not None, name


def test_restart_from_rank_2_with_new_inputs_keeps_rank_1_and_adds_a_version(wf, llm):
    user = poem_user(wf)
    created, pk, divider = _divider(user, llm, ["a", "b"])
    llm.script(Reply("First A"), Reply("First B"))
    validate(user, divider["user_workflow_step_execution_pk"])
    wait_completed(user, pk)
    socket = user.socket(created["session_id"])
    try:
        llm.reset()
        llm.script(Reply("Second A"), Reply("Second B"))
        restarted = user.ok("POST", "/restart_user_workflow_execution", json={
            "user_task_execution_pk": pk, "from_rank": 2, "inputs": {"poem_topic": "the mountains"}})
        assert restarted["from_rank"] == 2 and restarted["json_inputs_values"] == {"poem_topic": "the mountains"}
        socket.wait_event("workflow_execution_produced_text", count=2)  # the first one is replayed
        produced = user.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": pk})
        assert produced["produced_text"] == "Second A\n\nSecond B"
        assert produced["produced_text_version_index"] == 2
        assert len(llm.requests) == 2  # the divider did not run again
        assert all("the mountains" in json.dumps(r["messages"]) for r in llm.requests)
        invalidated = socket.wait_event("workflow_step_execution_invalidated", count=2)
        assert len(invalidated) == 2 and {e["reason"] for e in invalidated} == {"restarted"}
        live = steps(user, pk)
        assert [r["user_workflow_step_execution_pk"] for r in live if r["rank"] == 1] == [
            divider["user_workflow_step_execution_pk"]]
    finally:
        socket.close()


def test_restart_from_rank_1_runs_everything_again(wf, llm):
    user = poem_user(wf)
    _created, pk, divider = _divider(user, llm, ["a"])
    llm.script(Reply(json={"stanza_topics": ["x"]}))
    user.ok("POST", "/restart_user_workflow_execution", json={"user_task_execution_pk": pk, "from_rank": 1})
    rows = wait_steps(user, pk, lambda rs: awaiting(1)(rs) and rs[0]["user_workflow_step_execution_pk"]
                      != divider["user_workflow_step_execution_pk"])
    assert rows[0]["result"] == [{"stanza_topic": "x"}]


def test_a_step_that_fails_shows_its_error_and_can_be_relaunched(wf, llm):
    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": []}))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    socket = user.socket(created["session_id"])
    try:
        (failed,) = wait_steps(user, pk, lambda rs: rs and rs[0]["status"] == "failed")
        assert "no stanza topic" in failed["error"]
        ended = socket.wait_event("workflow_step_execution_ended")[0]
        assert ended["status"] == "failed" and "no stanza topic" in ended["error"] and ended["result"] is None
        llm.script(Reply(json={"stanza_topics": ["a"]}))
        relaunched = user.ok("PUT", "/user_workflow_step_execution", json={
            "user_workflow_step_execution_pk": failed["user_workflow_step_execution_pk"]})
        assert relaunched["run_submitted"] is True
        assert relaunched["status"] == "invalidated"  # as stored now (was: "failed", the state before)
        (again,) = wait_steps(user, pk, awaiting(1))
        assert again["user_workflow_step_execution_pk"] != failed["user_workflow_step_execution_pk"]
        history = steps(user, pk, history=True)
        assert [r["status"] for r in history] == ["invalidated", "done"]
        assert history[0]["error"] and "no stanza topic" in history[0]["error"]
    finally:
        socket.close()


def test_an_llm_error_fails_the_step_visibly(wf, llm):
    user = poem_user(wf)
    from tests.support.scripted_llm import HTTPError

    llm.script(HTTPError(400, "the prompt is rejected"))
    created = start_poem(user)
    (failed,) = wait_steps(user, created["user_task_execution_pk"], lambda rs: rs and rs[0]["status"] == "failed")
    assert failed["error"]
    assert execution_status(user, created["user_task_execution_pk"]) == "started"


def execution_status(user, pk):  # noqa: ANN001, ANN201
    return user.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})["status"]


def test_bad_requests_are_clear_and_change_nothing(wf, llm):
    user = poem_user(wf)
    _created, pk, divider = _divider(user, llm, ["a"])
    step_pk = divider["user_workflow_step_execution_pk"]
    cases = [
        ("POST", "/user_workflow_step_execution", {"user_workflow_step_execution_pk": step_pk}, 400, "validated"),
        ("POST", "/user_workflow_step_execution", {"user_workflow_step_execution_pk": "x", "validated": True}, 400,
         "user_workflow_step_execution_pk"),
        ("PUT", "/user_workflow_step_execution", {"user_workflow_step_execution_pk": step_pk}, 409, "failed"),
        ("PUT", "/user_workflow_step_execution_result", {"user_workflow_step_execution_pk": step_pk,
                                                          "result": ["not an object"]}, 400, "list of objects"),
        ("PUT", "/user_workflow_step_execution_result", {"user_workflow_step_execution_pk": step_pk,
                                                          "result": []}, 400, "non-empty"),
        ("POST", "/restart_user_workflow_execution", {"user_task_execution_pk": pk, "from_rank": 9}, 400,
         "from_rank"),
        ("POST", "/restart_user_workflow_execution", {"user_task_execution_pk": pk, "from_rank": 1,
                                                       "inputs": {"nope": "x"}}, 400, "unknown input"),
    ]
    for method, path, body, status, words in cases:
        response = user.call(method, path, json=body)
        assert response.status_code == status, (path, body, response.text)
        assert words in response.json()["error"], (path, response.json())
    assert steps(user, pk) == [divider]
    assert len(llm.requests) == 1
    missing = user.call("POST", "/user_workflow_step_execution",
                        json={"user_workflow_step_execution_pk": 2**31 - 1, "validated": True})
    assert missing.status_code == 404


def test_every_workflow_route_is_owner_only(wf, llm):
    owner, intruder = poem_user(wf), poem_user(wf)
    _created, pk, divider = _divider(owner, llm, ["a"])
    step_pk = divider["user_workflow_step_execution_pk"]
    attempts = [
        ("GET", "/user_workflow_step_execution", {"params": {"user_task_execution_pk": pk}}),
        ("POST", "/user_workflow_step_execution", {"json": {"user_workflow_step_execution_pk": step_pk,
                                                            "validated": True}}),
        ("POST", "/user_workflow_step_execution", {"json": {"user_workflow_step_execution_pk": step_pk,
                                                            "validated": False}}),
        ("PUT", "/user_workflow_step_execution", {"json": {"user_workflow_step_execution_pk": step_pk}}),
        ("PUT", "/user_workflow_step_execution_result", {"json": {"user_workflow_step_execution_pk": step_pk,
                                                                  "result": [{"stanza_topic": "x"}]}}),
        ("POST", "/restart_user_workflow_execution", {"json": {"user_task_execution_pk": pk, "from_rank": 1}}),
        ("POST", "/user_task_execution_run", {"json": {"user_task_execution_pk": pk,
                                                       "inputs": {"poem_topic": "x"}}}),
    ]
    for method, path, kwargs in attempts:
        response = intruder.call(method, path, **kwargs)
        assert response.status_code == 404, (method, path, response.text)
    assert steps(owner, pk) == [divider]
    assert len(llm.requests) == 1


def test_a_restart_while_a_step_runs_drops_the_old_run_and_runs_on_the_new_inputs(wf, llm):
    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": ["old"]}, delay_s=1.5), Reply(json={"stanza_topics": ["new"]}))
    created = start_poem(user, "old topic")
    pk = created["user_task_execution_pk"]
    wait_steps(user, pk, lambda rs: rs and rs[0]["status"] == "running")
    user.ok("POST", "/restart_user_workflow_execution", json={
        "user_task_execution_pk": pk, "from_rank": 1, "inputs": {"poem_topic": "new topic"}})
    (row,) = wait_steps(user, pk, awaiting(1))
    assert row["result"] == [{"stanza_topic": "new"}] and row["parameter"] == {"poem_topic": "new topic"}
    wf.wait_idle()
    history = steps(user, pk, history=True)
    assert [r["status"] for r in history] == ["invalidated", "done"]
    assert steps(user, pk) == [row]
