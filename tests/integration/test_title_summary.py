"""The background title/summary job on a live server with jobs on: once, by event and GET; retries; give-up."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading

import pytest

from backend.context import build_jobs
from mojodex_core.db.models import UserTaskExecution
from tests.integration._helpers import DRAFT, QUESTION, TITLE, execution_row, llm_calls, new_execution, run_form, send
from tests.support.live import live_settings, serving
from tests.support.row_locks import row_naming_the_execution
from tests.support.scripted_llm import HTTPError, Reply, asks_structured

GENERATED = {"title": "Friday sync announcement", "summary": "Tell the team the weekly sync moves to Friday."}


@pytest.fixture(scope="module")
def titled_server(database_url, scripted_llm, live_server):
    base = live_settings(database_url, scripted_llm.base_url)
    settings = dataclasses.replace(base, extra={**base.extra, "title_summary_jobs": True, "job_backoff_s": 0.05,
                                                "job_max_attempts": 3})
    with serving(settings) as live:
        yield live


@pytest.fixture
def titled(titled_server, llm):
    yield titled_server
    titled_server.wait_idle(10)
    assert titled_server.platform.jobs.wait_idle(10), "title jobs still running"


def route(llm, turn_replies, title_step):
    """Turns get their scripted replies in order; every structured (title) request gets title_step."""
    turns = iter(turn_replies)
    llm.responder = lambda body: title_step if asks_structured(body) else next(turns)


def title_requests(llm) -> int:
    return sum(1 for body in llm.requests if asks_structured(body))


def settle(live) -> None:
    live.wait_idle()
    assert live.platform.jobs.wait_idle(15), "title job still running"


def test_title_and_summary_arrive_once_by_event_and_get_and_never_again(titled, llm):
    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        # A slow title: the turn must not wait for it (one streamed chunk: one delay).
        slow_title = Reply(chunks=[json.dumps(GENERATED)], delay_s=0.5)
        route(llm, [Reply(DRAFT), Reply(QUESTION), Reply(QUESTION)], slow_title)
        run_form(client, pk)
        draft = socket.wait_event("draft_message")[0]
        event = socket.wait_event("user_task_execution_title")[0]
        assert draft["seq"] < event["seq"]
        assert {k: event[k] for k in ("title", "summary", "session_id", "user_task_execution_pk")} == {
            **GENERATED, "session_id": session_id, "user_task_execution_pk": pk}
        settle(titled)
        view = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
        assert (view["title"], view["summary"], view["title_status"]) == (
            GENERATED["title"], GENERATED["summary"], "done")

        send(client, pk, session_id, "make it shorter")
        send(client, pk, session_id, "and friendlier")
        socket.wait_event("mojo_message", 2)
        settle(titled)
        assert title_requests(llm) == 1
        assert len(socket.named("user_task_execution_title")) == 1
        listed = client.ok("GET", "/user_task_execution")["user_task_executions"][0]
        assert (listed["title"], listed["summary"]) == (GENERATED["title"], GENERATED["summary"])
        labels = [c.label for c in llm_calls(titled, pk)]
        assert labels.count("TITLE_SUMMARY") == 1
    finally:
        socket.close()
    replay = client.socket(session_id, last_seq=0)  # durable: a reconnecting client gets it again
    try:
        assert replay.wait_event("user_task_execution_title")[0]["title"] == GENERATED["title"]
    finally:
        replay.close()


def test_a_chat_start_also_gets_its_title_once(titled, llm):
    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        route(llm, [Reply(QUESTION), Reply(DRAFT)], Reply(json=GENERATED))
        send(client, pk, session_id, "an email saying the sync moves to Friday")
        send(client, pk, session_id, "to the team")
        socket.wait_event("draft_message")
        assert socket.wait_event("user_task_execution_title")[0]["title"] == GENERATED["title"]
        settle(titled)
        assert title_requests(llm) == 1
        # the job's title is kept: the draft's <title> does not replace it
        assert execution_row(titled, pk).title == GENERATED["title"]
    finally:
        socket.close()


def test_a_title_the_user_set_meanwhile_is_kept(titled, llm):
    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        gate = threading.Event()

        def responder(body):
            if asks_structured(body):  # the title/summary job's call
                gate.wait(10)  # the user renames while the job waits for the model
                return Reply(json=GENERATED)
            return Reply(DRAFT)

        llm.responder = responder
        run_form(client, pk)
        socket.wait_event("draft_message")
        client.ok("POST", "/user_task_execution_title", json={"user_task_execution_pk": pk, "title": "Mine"})
        gate.set()
        event = socket.wait_event("user_task_execution_title")[0]
        assert (event["title"], event["summary"]) == ("Mine", GENERATED["summary"])
        settle(titled)
        assert execution_row(titled, pk).title == "Mine"
    finally:
        socket.close()


def test_the_job_retries_then_gives_up_visibly(titled, llm, caplog):
    caplog.set_level(logging.WARNING, logger="mojodex")
    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        route(llm, [Reply(DRAFT)], HTTPError(400, "no titles today"))
        run_form(client, pk)
        socket.wait_event("draft_message")
        settle(titled)
        row = execution_row(titled, pk)
        assert row.title_status == "failed"
        assert row.title == TITLE and row.summary is None  # the draft's title stays; no summary invented
        calls = [c for c in llm_calls(titled, pk) if c.label == "TITLE_SUMMARY"]
        assert [c.status for c in calls] == ["error"] * 3
        assert socket.named("user_task_execution_title") == []
        assert any("gave up" in r.getMessage() and str(pk) in r.getMessage() for r in caplog.records)
        view = client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})
        assert view["title_status"] == "failed"
    finally:
        socket.close()


def test_no_llm_means_no_job(database_url):
    settings = dataclasses.replace(live_settings(database_url, None), extra={"title_summary_jobs": True})
    assert build_jobs(settings, None, None, None) is None


def test_a_job_claimed_before_a_restart_runs_at_start_up(titled, llm):
    client = titled.new_user()
    pk, _session_id = new_execution(client)
    with titled.db() as db:  # claimed, then the process died before the job ran
        db.get(UserTaskExecution, pk).title_status = "pending"
    llm.responder = lambda body: Reply(json=GENERATED)
    with serving(titled.platform.settings) as restarted:
        assert restarted.platform.jobs.wait_idle(15)
    row = execution_row(titled, pk)
    assert (row.title, row.summary, row.title_status) == (GENERATED["title"], GENERATED["summary"], "done")


def test_an_execution_started_by_home_chat_routing_is_named(titled, llm):
    client = titled.new_user()
    session_id = client.ok("PUT", "/home_chat")["session_id"]
    socket = client.socket(session_id)
    try:
        route(llm, [Reply("<route_to_task>test_email</route_to_task>"), Reply(QUESTION)], Reply(json=GENERATED))
        client.ok("PUT", "/user_message", json={"origin": "home_chat", "session_id": session_id,
                                                "text": "an email to say the sync moves"})
        event = socket.wait_event("user_task_execution_title")[0]
        settle(titled)
    finally:
        socket.close()
    pk = socket.named("user_task_execution_start")[0]["user_task_execution_pk"]
    assert event["user_task_execution_pk"] == pk and event["title"] == GENERATED["title"]
    assert title_requests(llm) == 1


def test_a_task_started_by_an_audio_message_is_named_from_its_transcription(titled, llm):
    from tests.integration.test_audio import wav_bytes
    from tests.support.scripted_llm import Transcription

    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script_transcription(Transcription("an email to say the sync moves", duration=1.0))
        route(llm, [Reply(QUESTION)], Reply(json=GENERATED))
        response = client.call("PUT", "/user_message", data={"session_id": session_id,
                                                             "user_task_execution_pk": str(pk)},
                               files={"file": ("v.wav", wav_bytes(0.5), "audio/wav")})
        assert response.status_code == 200, response.text
        socket.wait_event("user_task_execution_title")
        settle(titled)
    finally:
        socket.close()
    title_request = next(body for body in llm.requests if asks_structured(body))
    assert "an email to say the sync moves" in json.dumps(title_request["messages"])


def test_an_audio_message_sent_again_as_text_is_named_from_its_transcription(titled, llm):
    # was: the text route requested the title at once, which could read the still empty message
    from tests.integration.test_audio import wav_bytes
    from tests.support.scripted_llm import HTTPError, Transcription

    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script_transcription(HTTPError(500), HTTPError(500),  # the upload and the client's own retry
                                 Transcription("an email to say the sync moves", duration=1.0, delay_s=2.0))
        route(llm, [Reply(QUESTION)], Reply(json=GENERATED))
        failed = client.call("PUT", "/user_message", data={"session_id": session_id, "user_task_execution_pk": str(pk),
                                                            "message_id": "v-1"},
                             files={"file": ("v.wav", wav_bytes(0.5), "audio/wav")})
        assert failed.status_code == 200, failed.text
        socket.wait_event("error")
        settle(titled)
        assert title_requests(llm) == 0  # nothing to name it from yet
        client.ok("PUT", "/user_message", json={"session_id": session_id, "user_task_execution_pk": pk,
                                                "message_id": "v-1", "text": "retry"})
        with titled.db() as db:  # the transcription takes 2 s: nothing may claim the title before it
            assert db.get(UserTaskExecution, pk).title_status is None
        socket.wait_event("user_task_execution_title")
        settle(titled)
    finally:
        socket.close()
    [title_request] = [body for body in llm.requests if asks_structured(body)]
    assert "an email to say the sync moves" in json.dumps(title_request["messages"])


def test_later_inputs_do_not_claim_the_title_job_again(titled, llm):
    # Before, every accepted message ran the claim (an UPDATE ... WHERE title_status IS NULL): a
    # write transaction per message that changed nothing after the first.
    from sqlalchemy import event

    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    claims: list[str] = []

    def count(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        if statement.lstrip().upper().startswith("UPDATE") and "title_status" in statement:
            claims.append(statement)

    engine = titled.platform.engine
    try:
        route(llm, [Reply(DRAFT), Reply(QUESTION), Reply(QUESTION)], Reply(json=GENERATED))
        run_form(client, pk)
        socket.wait_event("draft_message")
        settle(titled)
        event.listen(engine, "before_cursor_execute", count)
        send(client, pk, session_id, "make it shorter")
        send(client, pk, session_id, "and friendlier")
        socket.wait_event("mojo_message", 2)
        settle(titled)
        assert claims == []
        assert title_requests(llm) == 1
    finally:
        if event.contains(engine, "before_cursor_execute", count):
            event.remove(engine, "before_cursor_execute", count)
        socket.close()


def test_a_row_naming_the_execution_does_not_hold_the_job(titled, llm, is_postgres):
    # was: the job locked the execution FOR UPDATE, which waits for the key-share lock of every
    # uncommitted row that names it (an llm_call of the spool, a message): in the bench a spool
    # batch waited 177 ms behind it. FOR NO KEY UPDATE serialises it with the row's writers only.
    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database")
    client = titled.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        route(llm, [Reply(DRAFT)], Reply(json=GENERATED))
        with row_naming_the_execution(titled.platform.engine, pk):
            run_form(client, pk)
            event = socket.wait_event("user_task_execution_title")[0]
        assert event["title"] == GENERATED["title"]
        settle(titled)
        assert execution_row(titled, pk).title_status == "done"
    finally:
        socket.close()


def _title_events(live, session_id: str) -> int:
    from sqlalchemy import func, select

    from mojodex_core.db.models import SessionEvent

    with live.db() as db:
        return db.scalar(select(func.count()).select_from(SessionEvent).where(
            SessionEvent.session_id == session_id, SessionEvent.event_name == "user_task_execution_title"))


def test_an_execution_deleted_while_its_title_is_asked_gets_no_title(titled, llm):
    # was: the job only checked that the row still existed (a deletion is soft), so an execution deleted
    # during the title's LLM call still got a title, a summary, title_status done and an event
    import time

    client = titled.new_user()
    pk, session_id = new_execution(client)
    route(llm, [Reply(DRAFT)], Reply(chunks=[json.dumps(GENERATED)], delay_s=1.0))
    run_form(client, pk)
    deadline = time.monotonic() + 10
    while title_requests(llm) == 0:  # the title's LLM call is under way
        assert time.monotonic() < deadline, "the title job never asked the LLM"
        time.sleep(0.02)
    client.ok("DELETE", "/user_task_execution", params={"user_task_execution_pk": pk})
    settle(titled)
    row = execution_row(titled, pk)
    assert (row.status, row.summary, row.title_status) == ("deleted", None, "pending")
    assert row.title != GENERATED["title"]
    assert _title_events(titled, session_id) == 0



def test_a_job_gives_up_or_writes_only_while_the_title_is_pending(titled, llm):
    # was: give_up set "failed" whatever the status (with several processes, over the "done" another
    # wrote), and run wrote the title and sent its event again for a job already done
    from mojodex_core.execution.title_summary import TitleSummaryJob, TitleSummaryWriter

    client = titled.new_user()
    pk, session_id = new_execution(client)
    with titled.db() as db:  # another process wrote the title already
        row = db.get(UserTaskExecution, pk)
        row.title, row.summary, row.title_status = "Done elsewhere", "Its summary", "done"
    platform = titled.platform
    writer = TitleSummaryWriter(platform.session_factory, platform.events, platform.llm)
    job = TitleSummaryJob(user_task_execution_pk=pk, session_id=session_id, attempt=3)
    writer.give_up(job, RuntimeError("a retry that failed here"))
    assert execution_row(titled, pk).title_status == "done"
    llm.responder = lambda body: Reply(json=GENERATED)
    writer.run(job)
    row = execution_row(titled, pk)
    assert (row.title, row.summary, row.title_status) == ("Done elsewhere", "Its summary", "done")
    assert _title_events(titled, session_id) == 0
    assert title_requests(llm) == 0  # nothing to ask: the title is not pending
