"""Crash recovery: a step whose process is killed mid-run is detected by its lapsed heartbeat and run
again exactly once, by another process; a re-run that lapses too is failed, visibly, and relaunchable;
an engine transaction that fails after claiming a step leaves no claimed step behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from mojodex_core.db.models import UserTaskExecution, UserWorkflowStepExecution
from mojodex_core.workflow import store
from mojodex_core.workflow.heartbeat import LAPSED, LAPSED_TWICE
from mojodex_core.workflow.runner import WorkflowTurn
from tests.support.live import REPO_ROOT, Client
from tests.support.scripted_llm import Hang, Reply
from tests.workflow._helpers import POEM, at_the_divider, awaiting, poem_user, start_poem, steps, wait_steps
from tests.workflow.conftest import LAPSE_S


def _spawn(database_url: str, llm_base_url: str) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.workflow._crash_worker", database_url, llm_base_url],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ.copy(),
    )
    line = process.stdout.readline()
    assert line.startswith("PORT "), line
    return process, int(line.split()[1])


def _heartbeats(wf, pk: int) -> list:  # noqa: ANN001
    with wf.db() as db:
        return list(db.execute(select(UserWorkflowStepExecution.status, UserWorkflowStepExecution.heartbeat_at)
                               .where(UserWorkflowStepExecution.user_task_execution_fk == pk)).all())


def test_a_step_whose_process_is_killed_is_run_again_exactly_once(wf, llm, database_url):
    user = poem_user(wf)
    llm.script(Hang(seconds=30), Reply(json={"stanza_topics": ["a", "b"]}))
    process, port = _spawn(database_url, llm.base_url)
    try:
        worker = Client(f"http://127.0.0.1:{port}", user.token, user.user_id)
        created = start_poem(worker)  # the worker process runs the divider, which hangs in its LLM call
        pk = created["user_task_execution_pk"]
        deadline = time.monotonic() + 4  # well within the worker's 5 s LLM timeout
        seen = set()
        while True:  # running, and its heartbeat renewed at least once by the worker
            rows = _heartbeats(wf, pk)
            assert all(status == "running" for status, _beat in rows), rows
            seen |= {beat for _status, beat in rows}
            if len(seen) > 1:
                break
            assert time.monotonic() < deadline, rows
            time.sleep(0.05)
        killed_at = time.monotonic()
        process.send_signal(signal.SIGKILL)
        process.wait(5)
        (rerun,) = wait_steps(user, pk, awaiting(1), timeout=LAPSE_S * 6)
        detected_s = time.monotonic() - killed_at
        assert rerun["attempt"] == 2 and rerun["result"] == [{"stanza_topic": "a"}, {"stanza_topic": "b"}]
        history = steps(user, pk, history=True)
        assert [(r["status"], r["attempt"]) for r in history] == [("lapsed", 1), ("done", 2)]
        assert history[0]["error"] == LAPSED
        print(f"crash detected and step re-run in {detected_s:.2f} s")
        assert detected_s < LAPSE_S * 6
        time.sleep(LAPSE_S * 1.5)  # long enough for another sweep: nothing runs a third time
        wf.wait_idle()
        assert len(steps(user, pk, history=True)) == 2
        assert len(llm.requests) == 2
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)


def test_a_rerun_that_lapses_too_is_failed_visibly_and_can_be_relaunched(wf, llm):
    user, created, pk, done = at_the_divider(wf, llm, ["a"])
    socket = user.socket(created["session_id"])
    try:
        # As if a second process died while running the slot's re-run: attempt 2, heartbeat long gone.
        with wf.db() as db:
            row = db.get(UserWorkflowStepExecution, done["user_workflow_step_execution_pk"])
            row.status, row.validated, row.attempt = "running", None, 2
            row.heartbeat_at = datetime.now(UTC) - timedelta(seconds=LAPSE_S * 10)
        (failed,) = wait_steps(user, pk, lambda rs: rs and rs[0]["status"] == "failed", timeout=LAPSE_S * 6)
        assert failed["error"] == LAPSED_TWICE
        ended = socket.wait_event("workflow_step_execution_ended", count=2)[-1]
        assert ended["status"] == "failed" and ended["error"] == LAPSED_TWICE
        llm.script(Reply(json={"stanza_topics": ["b"]}))
        user.ok("PUT", "/user_workflow_step_execution", json={
            "user_workflow_step_execution_pk": failed["user_workflow_step_execution_pk"]})
        (again,) = wait_steps(user, pk, awaiting(1))
        assert again["attempt"] == 1 and again["result"] == [{"stanza_topic": "b"}]
    finally:
        socket.close()
    assert POEM


def test_a_failure_after_the_claim_of_a_step_leaves_no_claimed_step(wf, llm, monkeypatch):
    # On SQLite the claim's savepoint was the first write of the engine's transaction, and its
    # release committed the claim alone: the step stayed "running" with no one running it, until
    # the heartbeat watch took it for lapsed and ran it again.
    user = poem_user(wf)
    created = user.new_execution(POEM)
    pk = created["user_task_execution_pk"]
    with wf.db() as db:
        db.get(UserTaskExecution, pk).json_input_values = {"poem_topic": "the sea at night"}
    platform = wf.platform
    turn = WorkflowTurn(platform.session_factory, platform.events, None, platform.heartbeat)

    def failing(*_args: object) -> list[str]:
        raise RuntimeError("the engine failed after the claim")

    monkeypatch.setattr(store, "learned_instructions", failing)
    try:
        with pytest.raises(RuntimeError, match="after the claim"):
            turn._next(created["session_id"], pk)
        assert _heartbeats(wf, pk) == []
    finally:
        with wf.db() as db:  # a claim left behind is not re-run in a later test
            db.get(UserTaskExecution, pk).status = "deleted"


def test_a_lapse_whose_rerun_could_not_be_stored_is_swept_again(wf, llm, monkeypatch):
    # was: the lapse was committed alone, then its event and re-run message in another transaction: when
    # that one failed, the step stayed "lapsed" with nothing to run its slot again, for good
    from mojodex_core.workflow import lapse

    user, created, pk, done = at_the_divider(wf, llm, ["a"])
    real, calls = lapse.request_run, []

    def failing_once(*args: object, **kwargs: object):  # noqa: ANN202
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("the database went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(lapse, "request_run", failing_once)
    llm.script(Reply(json={"stanza_topics": ["b"]}))
    with wf.db() as db:  # as if its process died while running it
        row = db.get(UserWorkflowStepExecution, done["user_workflow_step_execution_pk"])
        row.status, row.validated = "running", None
        row.heartbeat_at = datetime.now(UTC) - timedelta(seconds=LAPSE_S * 10)
    (rerun,) = wait_steps(user, pk, awaiting(1), timeout=LAPSE_S * 6)
    assert rerun["attempt"] == 2 and rerun["result"] == [{"stanza_topic": "b"}]
    assert [r["status"] for r in steps(user, pk, history=True)] == ["lapsed", "done"]
    assert len(calls) == 2


def test_a_lapse_whose_rerun_could_not_be_submitted_fails_the_step_visibly_and_a_relaunch_goes_on(wf, llm,
                                                                                                  monkeypatch):
    # was: the lapse and its re-run message were committed, then submitting the message to the runner failed:
    # the step stayed "lapsed" (nothing to relaunch, validate or chat in) with a message no one would run
    # before the process restarted
    from mojodex_core.workflow.lapse import NOT_RERUN

    user, created, pk, done = at_the_divider(wf, llm, ["a"])
    runner, refused = wf.platform.runner, []
    real = runner.submit

    def refusing_once(job):  # noqa: ANN001, ANN202
        if not refused:
            refused.append(job)
            raise RuntimeError("cannot schedule new futures after shutdown")
        return real(job)

    monkeypatch.setattr(runner, "submit", refusing_once)
    socket = user.socket(created["session_id"])
    try:
        with wf.db() as db:  # as if its process died while running it
            row = db.get(UserWorkflowStepExecution, done["user_workflow_step_execution_pk"])
            row.status, row.validated = "running", None
            row.heartbeat_at = datetime.now(UTC) - timedelta(seconds=LAPSE_S * 10)
        (failed,) = wait_steps(user, pk, lambda rows: [r["status"] for r in rows] == ["failed"], timeout=LAPSE_S * 6)
        assert failed["error"] == NOT_RERUN and refused
        ended = socket.wait_for(lambda evs: any(e == "workflow_step_execution_ended" and d["status"] == "failed"
                                                for e, d in evs))
        assert any(d.get("error") == NOT_RERUN for e, d in ended if e == "workflow_step_execution_ended")
    finally:
        socket.close()
    llm.script(Reply(json={"stanza_topics": ["b"]}))
    user.ok("PUT", "/user_workflow_step_execution",
            json={"user_workflow_step_execution_pk": failed["user_workflow_step_execution_pk"]})
    (rerun,) = wait_steps(user, pk, awaiting(1))
    assert rerun["result"] == [{"stanza_topic": "b"}]


def test_a_lapse_whose_rerun_is_refused_at_shutdown_is_left_to_the_start_up_resume(wf, llm, monkeypatch):
    # was: Platform.close() stops the heartbeat (without waiting for its sweep), then shuts the runner down; a
    # sweep in between had its re-run refused and failed the step and its message, where the start-up resume
    # would have run the re-run
    import backend.context
    from mojodex_core.db.models import Message
    from mojodex_core.execution.jobs import TurnJob

    user, created, pk, done = at_the_divider(wf, llm, ["a"])
    runner, heartbeat, refused = wf.platform.runner, wf.platform.heartbeat, []
    handled = threading.Event()
    submit_rerun = backend.context.submit_rerun

    def submitting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the sweep's handling, then a signal
        try:
            return submit_rerun(*args, **kwargs)
        finally:
            handled.set()

    def refusing(job):  # noqa: ANN001, ANN202
        refused.append(job)
        raise RuntimeError("cannot schedule new futures after shutdown")

    monkeypatch.setattr(runner, "submit", refusing)
    monkeypatch.setattr(heartbeat, "stopping", lambda: True)  # Platform.close() stopped it
    monkeypatch.setattr(backend.context, "submit_rerun", submitting)
    with wf.db() as db:  # as if its process died while running it
        row = db.get(UserWorkflowStepExecution, done["user_workflow_step_execution_pk"])
        row.status, row.validated = "running", None
        row.heartbeat_at = datetime.now(UTC) - timedelta(seconds=LAPSE_S * 10)
    assert handled.wait(LAPSE_S * 6), "the lapse was never swept"  # and what follows the refusal is done
    monkeypatch.undo()
    assert refused
    assert [r["status"] for r in steps(user, pk, history=True)] == ["lapsed"]
    with wf.db() as db:
        message = db.get(Message, refused[0].message_pk)
        assert (message.status, message.error) == ("pending", None)
    llm.script(Reply(json={"stanza_topics": ["b"]}))
    runner.submit(TurnJob(session_id=created["session_id"], message_pk=refused[0].message_pk))  # the resume
    (rerun,) = wait_steps(user, pk, awaiting(1))
    assert rerun["attempt"] == 2 and rerun["result"] == [{"stanza_topic": "b"}]
