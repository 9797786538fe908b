"""A workflow's form start while it is still on its way to the runner: the execution deleted, or
started again with other inputs, before the runner claims the form message."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select, text

from mojodex_core.db.models import Message, SessionEvent, UserTaskExecution
from mojodex_core.execution.intake import FORM_MESSAGE_ID
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.workflow.runner import WorkflowTurn
from tests.support.row_locks import backend_pid, waiting_for_a_lock
from tests.workflow._helpers import POEM, poem_user


def _form_on_its_way(wf, pk: int, session_id: str, topic: str) -> int:  # noqa: ANN001
    """The state between a form start's commit and the runner's claim: inputs stored, the form
    message pending, the execution not started."""
    with wf.db() as db:
        db.get(UserTaskExecution, pk).json_input_values = {"poem_topic": topic}
        message = Message(session_id=session_id, user_task_execution_fk=pk, sender="user", message_id=FORM_MESSAGE_ID,
                          event_name="form_input", text=f"poem_topic: {topic}", status="pending", data={})
        db.add(message)
        db.flush()
        return message.message_pk


def test_an_execution_deleted_before_its_form_is_claimed_stays_deleted(wf):  # noqa: ANN001
    user = poem_user(wf)
    created = user.new_execution(POEM)
    pk, session_id = created["user_task_execution_pk"], created["session_id"]
    message_pk = _form_on_its_way(wf, pk, session_id, "the sea at night")
    user.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})
    platform = wf.platform
    turn = WorkflowTurn(platform.session_factory, platform.events, None, platform.heartbeat)

    turn(TurnJob(session_id=session_id, message_pk=message_pk), threading.Event())

    with wf.db() as db:
        execution = db.get(UserTaskExecution, pk)
        assert (execution.status, execution.start_date) == ("deleted", None)
        message = db.get(Message, message_pk)
        assert (message.status, message.error) == ("failed", "The task execution was deleted.")
        events = list(db.scalars(select(SessionEvent.event_name).where(SessionEvent.session_id == session_id)))
    assert "user_task_execution_start" not in events
    assert user.call("GET", "/user_task_execution", params={"user_task_execution_pk": pk}).status_code == 404


def test_a_second_start_with_other_inputs_while_the_form_is_on_its_way_is_refused(wf):  # noqa: ANN001
    user = poem_user(wf)
    created = user.new_execution(POEM)
    pk, session_id = created["user_task_execution_pk"], created["session_id"]
    message_pk = _form_on_its_way(wf, pk, session_id, "the sea at night")

    other = user.call("POST", "/user_task_execution_run",
                      json={"user_task_execution_pk": pk, "inputs": {"poem_topic": "a desert at noon"}})
    assert other.status_code == 409, other.text
    assert "already started" in other.json()["error"]
    same = user.ok("POST", "/user_task_execution_run",
                   json={"user_task_execution_pk": pk, "inputs": {"poem_topic": "the sea at night"}})
    assert same["message_pk"] == message_pk  # the same start again: the form already on its way
    with wf.db() as db:
        assert db.get(UserTaskExecution, pk).json_input_values == {"poem_topic": "the sea at night"}
        db.get(Message, message_pk).status = "failed"  # its turn failed: a start with other inputs may retry
    user.ok("POST", "/user_task_execution_run",
            json={"user_task_execution_pk": pk, "inputs": {"poem_topic": "a desert at noon"}})
    with wf.db() as db:
        assert db.get(UserTaskExecution, pk).json_input_values == {"poem_topic": "a desert at noon"}


def test_a_deletion_committing_while_the_form_is_claimed_is_not_overwritten(wf, is_postgres):  # noqa: ANN001
    # was: the claim read the execution without its lock, saw it not deleted, and its UPDATE to
    # "started" overwrote the deletion that committed meanwhile (a lost update)
    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database")
    user = poem_user(wf)
    created = user.new_execution(POEM)
    pk, session_id = created["user_task_execution_pk"], created["session_id"]
    message_pk = _form_on_its_way(wf, pk, session_id, "the sea at night")
    platform = wf.platform
    turn = WorkflowTurn(platform.session_factory, platform.events, None, platform.heartbeat)
    engine = platform.engine
    with engine.connect() as deleting:  # a DELETE /user_task_execution in progress
        deleting.execute(text("UPDATE user_task_execution SET status = 'deleted' WHERE user_task_execution_pk = :pk"),
                         {"pk": pk})
        claiming = threading.Thread(target=turn, args=(TurnJob(session_id=session_id, message_pk=message_pk),
                                                       threading.Event()))
        claiming.start()
        assert waiting_for_a_lock(engine, backend_pid(deleting)), "the claim never met the deletion's lock"
        deleting.commit()
    claiming.join(10)
    with wf.db() as db:
        execution = db.get(UserTaskExecution, pk)
        assert (execution.status, execution.start_date) == ("deleted", None)
        assert db.get(Message, message_pk).status == "failed"


def test_the_engine_s_claim_does_not_wait_for_a_row_naming_the_execution(wf, llm, is_postgres):  # noqa: ANN001
    # was: the engine locked the execution FOR UPDATE, which waits for every uncommitted row that only names it (a
    # message, an llm_call row: their foreign key takes FOR KEY SHARE) and makes them wait
    from tests.support.row_locks import row_naming_the_execution
    from tests.workflow._helpers import at_the_divider

    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database")
    user, created, pk, divider = at_the_divider(wf, llm, ["tide"])
    wf.wait_idle()
    with wf.db() as db:  # validated, its run not submitted: the engine's next action claims rank 2
        db.execute(text("UPDATE user_workflow_step_execution SET validated = true "
                        "WHERE user_workflow_step_execution_pk = :pk"),
                   {"pk": divider["user_workflow_step_execution_pk"]})
    platform = wf.platform
    turn = WorkflowTurn(platform.session_factory, platform.events, None, platform.heartbeat)
    claimed: list = []
    try:
        with row_naming_the_execution(platform.engine, pk) as other:
            claiming = threading.Thread(target=lambda: claimed.append(turn._next(created["session_id"], pk)))
            claiming.start()
            claiming.join(5)
            waited = claiming.is_alive()
            assert not waited, f"the claim waited for another transaction's row (blocker {backend_pid(other)})"
        claiming.join(10)
        assert claimed and claimed[0].action.step.rank == 2
    finally:
        with wf.db() as db:  # the claimed step is not run: not re-run by the watch in a later test either
            db.get(UserTaskExecution, pk).status = "deleted"


@pytest.mark.parametrize(("before", "after"), [
    (["tide"], [{"stanza_topic": "stars"}]),
    # was: only the claimed item was compared; the run's past (its parent's whole result) stayed the old one
    (["tide", "moon"], [{"stanza_topic": "tide"}, {"stanza_topic": "stars"}]),
], ids=["its-item", "another-item"])
def test_a_claim_waiting_for_an_edit_of_its_parent_does_not_run_on_the_old_result(  # noqa: PLR0913
        wf, llm, is_postgres, before, after):  # noqa: ANN001
    # was: should the session's publication lock lapse, the claim planned rank 2 on the divider's result, waited
    # for the edit holding the divider's row (its foreign key), then stored its run on the result the edit had
    # just replaced: the edit had invalidated the later runs before this one existed, so it was never invalidated
    import json

    from tests.workflow._helpers import at_the_divider

    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database")
    user, created, pk, divider = at_the_divider(wf, llm, before)
    wf.wait_idle()
    divider_pk = divider["user_workflow_step_execution_pk"]
    with wf.db() as db:  # validated, its run not submitted: the engine's next action claims rank 2
        db.execute(text("UPDATE user_workflow_step_execution SET validated = true "
                        "WHERE user_workflow_step_execution_pk = :pk"), {"pk": divider_pk})
    platform = wf.platform
    turn = WorkflowTurn(platform.session_factory, platform.events, None, platform.heartbeat)
    claimed: list = []
    try:
        with platform.engine.connect() as edit:  # a result edit of the divider, not committed yet
            edit.execute(text("SELECT 1 FROM user_workflow_step_execution WHERE user_workflow_step_execution_pk = :pk "
                              "FOR UPDATE"), {"pk": divider_pk})
            edit.execute(text("INSERT INTO user_workflow_step_execution_result (user_workflow_step_execution_fk, "
                              "result, author, created_at) VALUES (:pk, :result, 'user', now())"),
                         {"pk": divider_pk, "result": json.dumps(after)})
            claiming = threading.Thread(target=lambda: claimed.append(turn._next(created["session_id"], pk)))
            claiming.start()
            assert waiting_for_a_lock(platform.engine, backend_pid(edit)), "the claim did not wait for the edit"
            edit.commit()
        claiming.join(10)
        assert claimed == [None], claimed  # was: {"stanza_topic": "tide"}, claimed
        with wf.db() as db:
            assert db.scalar(text("SELECT count(*) FROM user_workflow_step_execution "
                                  "WHERE user_task_execution_fk = :pk AND rank = 2"), {"pk": pk}) == 0
        again = turn._next(created["session_id"], pk)  # the edit's own run message: rank 2 on the new result
        assert again.action.step.rank == 2 and again.action.parameter == after[0]
        assert again.past[-1]["result"] == after
    finally:
        with wf.db() as db:  # the claimed step is not run: not re-run by the watch in a later test either
            db.get(UserTaskExecution, pk).status = "deleted"
