"""Crash recovery: a step whose process is killed mid-run is detected by its lapsed heartbeat and run
again exactly once, by another process; a re-run that lapses too is failed, visibly, and relaunchable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from mojodex_core.db.models import UserWorkflowStepExecution
from mojodex_core.workflow.heartbeat import LAPSED, LAPSED_TWICE
from tests.support.live import REPO_ROOT, Client
from tests.support.scripted_llm import Hang, Reply
from tests.workflow._helpers import POEM, awaiting, poem_user, start_poem, steps, wait_steps
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
    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": ["a"]}))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    (done,) = wait_steps(user, pk, awaiting(1))
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
