"""The review chat of a rejected step: exactly one of explanation, question or instruction; an instruction
is learned and re-runs the step with it in the prompt; the message is stored and sent; the reasoning
goes to the trace."""

from __future__ import annotations

import json
import threading
import time

from tests.support.scripted_llm import Reply
from tests.workflow._helpers import (
    at_the_divider,
    awaiting,
    poem_user,
    prompts,
    start_doc,
    start_poem,
    steps,
    validate,
    wait_steps,
)

INSTRUCTION = "Use at most two stanzas"


def _rejected_divider(wf, llm):  # noqa: ANN001, ANN202
    user, created, pk, divider = at_the_divider(wf, llm, ["a", "b", "c", "d"])
    rejected = validate(user, divider["user_workflow_step_execution_pk"], validated=False)
    assert rejected["validated"] is False and rejected["run_submitted"] is False  # the review chat is open
    return user, created, pk, divider


def _say(user, created, text, message_id):  # noqa: ANN001, ANN202
    return user.ok("PUT", "/user_message", json={
        "session_id": created["session_id"], "user_task_execution_pk": created["user_task_execution_pk"],
        "text": text, "message_id": message_id})


def decision(kind: str, message: str, instruction: str | None = None, why: str = "SECRET-WHY") -> Reply:
    return Reply(json={"reasoning": why, "kind": kind, "message": message, "instruction": instruction})


def test_a_user_instruction_is_learned_and_reruns_the_step_with_it(wf, llm):
    user, created, pk, divider = _rejected_divider(wf, llm)
    socket = user.socket(created["session_id"])
    try:
        llm.script(decision("instruction", "I will write it in two stanzas.", INSTRUCTION, "the user wants fewer"),
                   Reply(json={"stanza_topics": ["a", "b"]}))
        _say(user, created, "Too long, two stanzas please", "review-1")
        answer = socket.wait_event("mojo_message")[0]
        assert answer["text"] == "I will write it in two stanzas."
        assert answer["review_kind"] == "instruction" and answer["learned_instruction"] == INSTRUCTION
        invalidated = socket.wait_event("workflow_step_execution_invalidated")[0]
        assert invalidated["user_workflow_step_execution_pk"] == divider["user_workflow_step_execution_pk"]
        (again,) = wait_steps(user, pk, awaiting(1))
        assert again["result"] == [{"stanza_topic": "a"}, {"stanza_topic": "b"}]
        assert INSTRUCTION in prompts(llm)[2]  # the re-run's prompt carries the learned instruction
        assert INSTRUCTION not in prompts(llm)[0]
        assert "Too long, two stanzas please" in str(llm.requests[1]["messages"])
        history = steps(user, pk, history=True)
        assert history[0]["learned_instruction"] == INSTRUCTION and history[0]["status"] == "invalidated"
    finally:
        socket.close()
    messages = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    stored = [m for m in messages if m["sender"] == "assistant" and m["event_name"] == "mojo_message"]
    assert stored[-1]["text"] == "I will write it in two stanzas."  # stored, not dropped
    reasoning = user.ok("GET", "/user_task_execution/reasoning", params={"user_task_execution_pk": pk})["reasoning"]
    # The divider's run, the review's decision, the divider's re-run: each LLM decision is in the trace.
    assert [(e["kind"], e["source"]) for e in reasoning] == [
        ("DIRECT", "WORKFLOW_STANZA_DIVIDER"), ("DIRECT", "WORKFLOW_REVIEW"), ("DIRECT", "WORKFLOW_STANZA_DIVIDER")]
    assert "the user wants fewer" in reasoning[1]["text"]
    assert all("the user wants fewer" not in m["text"] for m in messages)

    # Learned for this user's later executions of the task too.
    llm.reset()
    llm.script(Reply(json={"stanza_topics": ["x"]}))
    second = start_poem(user, "autumn")
    wait_steps(user, second["user_task_execution_pk"], awaiting(1))
    assert INSTRUCTION in prompts(llm)[0]


def test_an_explanation_or_a_question_keeps_the_step_under_review(wf, llm):
    user, created, pk, divider = _rejected_divider(wf, llm)
    socket = user.socket(created["session_id"])
    try:
        llm.script(decision("question", "How many stanzas would you like?"))
        _say(user, created, "I don't like it", "r1")
        assert socket.wait_event("mojo_message")[0]["review_kind"] == "question"
        llm.script(decision("explanation", "I chose four stanzas for the four moments of the night."))
        _say(user, created, "Why four?", "r2")
        assert socket.wait_event("mojo_message", count=2)[1]["review_kind"] == "explanation"
        wf.wait_idle()
        assert steps(user, pk) == [{**divider, "validated": False}]
        assert socket.named("workflow_step_execution_invalidated") == []
        assert len(llm.requests) == 3
    finally:
        socket.close()


def test_an_invalid_review_answer_fails_the_message_visibly_and_changes_nothing(wf, llm):
    user, created, pk, divider = _rejected_divider(wf, llm)
    socket = user.socket(created["session_id"])
    try:
        # kind instruction without the instruction, twice (the corrective retry too)
        llm.script(decision("instruction", "ok"), decision("instruction", "ok"))
        _say(user, created, "change it", "r1")
        error = socket.wait_event("error")[0]
        assert error["retryable"] is True
        assert steps(user, pk) == [{**divider, "validated": False}]
    finally:
        socket.close()


def test_rejecting_a_step_without_review_chat_runs_it_again(wf, llm):
    user = poem_user(wf)
    llm.script(Reply("1. Intro"))
    created = start_doc(user, "talk.txt", b"Hello and welcome.")
    pk = created["user_task_execution_pk"]
    chapters = next(r for r in wait_steps(user, pk, awaiting(2)) if r["rank"] == 2)
    assert chapters["review_chat_enabled"] is False
    llm.script(Reply("1. Welcome\n2. Outro"))
    rejected = validate(user, chapters["user_workflow_step_execution_pk"], validated=False)
    assert rejected["run_submitted"] is True
    again = next(r for r in wait_steps(user, pk, lambda rs: awaiting(2)(rs) and all(
        r["user_workflow_step_execution_pk"] != chapters["user_workflow_step_execution_pk"] for r in rs))
        if r["rank"] == 2)
    assert again["result"] == [{"chapters": "1. Welcome\n2. Outro"}]


def test_a_chat_message_with_no_review_open_is_refused_with_409_and_not_stored(wf, llm):
    from mojodex_core.workflow.runner import NOT_CHATTING

    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": ["a"]}))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    wait_steps(user, pk, awaiting(1))  # the divider awaits validation: no review chat is open
    before = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    response = user.call("PUT", "/user_message", json={
        "session_id": created["session_id"], "user_task_execution_pk": pk, "text": "hello?", "message_id": "m1"})
    assert response.status_code == 409, response.text
    assert response.json()["error"] == NOT_CHATTING
    after = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    assert after == before and all(m["message_id"] != "m1" for m in after)  # nothing stored, no event
    assert len(llm.requests) == 1
    assert [r["validated"] for r in steps(user, pk)] == [None]  # the step still awaits validation


def test_a_review_message_whose_review_closed_meanwhile_fails_instead_of_staying_pending(wf, llm):
    import threading

    from mojodex_core.execution.intake import accept_user_message
    from mojodex_core.execution.jobs import TurnJob
    from mojodex_core.workflow.review import REVIEW_CLOSED

    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": ["a"]}))
    created = start_poem(user)
    wait_steps(user, created["user_task_execution_pk"], awaiting(1))  # awaiting validation: no review open
    platform = wf.platform
    accepted = accept_user_message(platform.session_factory, platform.events, session_id=created["session_id"],
                                   user_task_execution_pk=created["user_task_execution_pk"], text="why?",
                                   message_id="late-review")
    socket = user.socket(created["session_id"])
    try:
        review = platform.dispatcher.handler("workflow")._review  # as if routed before a restart closed it
        review(TurnJob(session_id=created["session_id"], message_pk=accepted.message_pk), threading.Event())
        error = socket.wait_event("error")[0]
        assert error["error"] == REVIEW_CLOSED and error["retryable"] is False
    finally:
        socket.close()
    messages = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    assert next(m for m in messages if m["message_id"] == "late-review")["status"] == "failed"
    assert len(llm.requests) == 1


def test_the_review_prompt_carries_what_the_assistant_knows(wf, llm):
    user, created, _pk, _divider = _rejected_divider(wf, llm)
    user.ok("PUT", "/user_profile", json={"name": "Poet Laureate", "job": "Poet", "timezone": "Europe/Rome"})
    socket = user.socket(created["session_id"])
    try:
        llm.script(decision("question", "Which stanza should change?"))
        _say(user, created, "I don't like it", "review-knowledge")
        socket.wait_event("mojo_message")
    finally:
        socket.close()
    review_prompt = llm.requests[-1]["messages"][0]["content"]
    assert review_prompt.startswith("WHO YOU ARE\n")
    assert "(time zone Europe/Rome, UTC+0" in review_prompt and "- Job: Poet" in review_prompt
    assert "rejected the result of a step" in review_prompt


def test_an_audio_message_with_no_review_open_is_refused_with_409_and_not_stored(wf, llm):
    from mojodex_core.workflow.runner import NOT_CHATTING
    from tests.integration.test_audio import wav_bytes

    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": ["a"]}))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    wait_steps(user, pk, awaiting(1))
    response = user.call("PUT", "/user_message", data={
        "session_id": created["session_id"], "user_task_execution_pk": str(pk), "message_id": "voice-wf"},
        files={"file": ("voice.wav", wav_bytes(0.2), "audio/wav")})
    assert response.status_code == 409, response.text
    assert response.json()["error"] == NOT_CHATTING
    messages = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    assert all(m["message_id"] != "voice-wf" for m in messages)
    from mojodex_core.audio.store import AudioStore

    digest = AudioStore.new_name(created["session_id"], "voice-wf", "wav")[:40]  # every upload's for that id
    assert not list(wf.platform.audio_store.directory.glob(f"{digest}*"))  # the recording was not kept either


def _review_answer_held_until(restarted: threading.Event, reasoning: str):
    """The scripted model: the review of "rhymes please" answers an instruction once ``restarted`` is set;
    any other call (the re-run) answers one stanza topic."""
    def answer(body: dict) -> Reply:
        if "rhymes please" in json.dumps(body["messages"]):
            restarted.wait(10)
            return Reply(json={"reasoning": reasoning, "kind": "instruction", "message": "Will do.",
                               "instruction": "make it rhyme"})
        return Reply(json={"stanza_topics": ["m"]})
    return answer


def _wait_for_the_review_call(llm) -> None:  # noqa: ANN001
    deadline = time.monotonic() + 10
    while len(llm.requests) < 2:  # the review's call is in flight
        assert time.monotonic() < deadline, "the review never called the model"
        time.sleep(0.02)


def test_a_restart_while_the_review_answers_fails_the_message_and_learns_nothing(wf, llm):
    # was: the answer was stored and sent as learned ("learned_instruction" in its event) while the
    # restart had closed the review: the instruction was dropped, the user told otherwise
    from mojodex_core.workflow.review import REVIEW_CLOSED

    user, created, pk, divider = _rejected_divider(wf, llm)
    restarted = threading.Event()

    llm.responder = _review_answer_held_until(restarted, reasoning="they want rhymes")
    socket = user.socket(created["session_id"])
    try:
        sent = _say(user, created, "rhymes please", "review-late")
        _wait_for_the_review_call(llm)
        user.ok("POST", "/restart_user_workflow_execution",
                json={"user_task_execution_pk": pk, "from_rank": 1, "inputs": {"poem_topic": "mountains"}})
        restarted.set()
        error = socket.wait_for(lambda evs: any(e == "error" and d.get("user_message_pk") == sent["message_pk"]
                                                for e, d in evs))
        (rerun,) = wait_steps(user, pk, awaiting(1))
    finally:
        restarted.set()  # never leave the review's answer held for the next test
        socket.close()
    failure = next(d for e, d in error if e == "error" and d.get("user_message_pk") == sent["message_pk"])
    assert failure["error"] == REVIEW_CLOSED and failure["retryable"] is False
    assert not [d for d in socket.named("mojo_message") if d.get("learned_instruction")]
    history = steps(user, pk, history=True)
    assert next(r for r in history if r["user_workflow_step_execution_pk"] ==
                divider["user_workflow_step_execution_pk"])["learned_instruction"] is None
    assert rerun["parameter"] == {"poem_topic": "mountains"} and "make it rhyme" not in prompts(llm)[-1]
    reasoning = user.ok("GET", "/user_task_execution/reasoning", params={"user_task_execution_pk": pk})["reasoning"]
    assert any(e["source"] == "WORKFLOW_REVIEW" and "they want rhymes" in e["text"] for e in reasoning)


def test_a_review_message_sent_again_after_its_review_closed_answers_as_before(wf, llm):
    """A reviewer found it: the client lost the response of a review message that was answered (the step
    re-ran with the instruction), sent the same message_id again, and got a 409 "running its steps"."""
    from tests.integration.test_audio import wav_bytes

    user, created, pk, _divider = _rejected_divider(wf, llm)
    llm.script(decision("instruction", "Two stanzas then.", INSTRUCTION), Reply(json={"stanza_topics": ["a", "b"]}))
    first = _say(user, created, "Too long, two stanzas please", "review-1")
    wait_steps(user, pk, lambda rows: awaiting(1)(rows) and len(rows[0]["result"]) == 2)
    again = _say(user, created, "Too long, two stanzas please", "review-1")
    assert (again["message_pk"], again["status"]) == (first["message_pk"], "answered")
    # A voice message too, once its review has closed.
    (divider,) = wait_steps(user, pk, awaiting(1))
    validate(user, divider["user_workflow_step_execution_pk"], validated=False)
    llm.transcript = "Only one stanza"
    llm.script(decision("instruction", "One stanza then.", "Use one stanza"), Reply(json={"stanza_topics": ["a"]}))
    voice = {"session_id": created["session_id"], "user_task_execution_pk": str(pk), "message_id": "voice-1"}
    sent = user.ok("PUT", "/user_message", data=voice, files={"file": ("v.wav", wav_bytes(0.2), "audio/wav")})
    wait_steps(user, pk, lambda rows: awaiting(1)(rows) and len(rows[0]["result"]) == 1)
    resent = user.ok("PUT", "/user_message", data=voice, files={"file": ("v.wav", wav_bytes(0.2), "audio/wav")})
    assert resent["message_pk"] == sent["message_pk"] and resent["status"] != "failed"


def test_a_review_answered_after_its_execution_was_deleted_changes_nothing(wf, llm):
    # was: the answer was stored and sent, and an instruction invalidated the step, on a deleted execution
    from sqlalchemy import select

    from mojodex_core.db.models import Message, UserTaskExecution, UserWorkflowStepExecution

    user, created, pk, divider = _rejected_divider(wf, llm)

    def deleted_meanwhile(_body):  # noqa: ANN001, ANN202
        with wf.db() as db:  # the deletion commits while the model answers
            db.get(UserTaskExecution, pk).status = "deleted"
        return decision("instruction", "I will write it in two stanzas.", INSTRUCTION)

    llm.responder = deleted_meanwhile
    _say(user, created, "Too long, two stanzas please", "review-deleted")
    wf.wait_idle()
    with wf.db() as db:
        message = db.scalar(select(Message).where(Message.message_id == "review-deleted"))
        assert (message.status, message.error) == ("failed", "The task execution was deleted.")
        answers = db.scalars(select(Message.event_name).where(Message.session_id == created["session_id"],
                                                              Message.sender == "assistant")).all()
        assert "mojo_message" not in answers
        row = db.get(UserWorkflowStepExecution, divider["user_workflow_step_execution_pk"])
        assert (row.status, row.validated, row.learned_instruction) == ("done", False, None)
    assert len(llm.requests) == 2  # the divider and the review: no re-run


def test_an_instruction_leaves_the_rerun_of_its_step_for_the_start_up_resume(wf, llm, monkeypatch):
    # was: the step re-ran through an inline call, with no workflow_run message stored: a process that
    # died after the instruction was committed left the step invalidated and nothing to run it again
    from sqlalchemy import select

    from mojodex_core.db.models import MESSAGE_UNANSWERED, Message
    from mojodex_core.execution.jobs import TurnJob

    user, created, pk, _divider = _rejected_divider(wf, llm)
    review = wf.platform.dispatcher.handler("workflow")._review
    for name in ("_advance", "_run_workflow"):  # the process dies right after the answer is committed
        if hasattr(review, name):
            monkeypatch.setattr(review, name, lambda *_args: None)
    llm.script(decision("instruction", "I will write it in two stanzas.", INSTRUCTION))
    _say(user, created, "Too long, two stanzas please", "review-crash")
    wf.wait_idle()
    monkeypatch.undo()
    assert steps(user, pk) == []  # the rejected step is invalidated; nothing ran it again
    with wf.db() as db:  # what the start-up resume finds
        unanswered = db.scalars(select(Message.message_pk).where(
            Message.session_id == created["session_id"], Message.event_name == "workflow_run",
            Message.status.in_(MESSAGE_UNANSWERED))).all()
    assert len(unanswered) == 1
    llm.script(Reply(json={"stanza_topics": ["a", "b"]}))
    wf.platform.runner.submit(TurnJob(session_id=created["session_id"], message_pk=unanswered[0]))
    (again,) = wait_steps(user, pk, awaiting(1))
    assert again["result"] == [{"stanza_topic": "a"}, {"stanza_topic": "b"}]
    assert INSTRUCTION in prompts(llm)[-1]


def test_a_review_message_that_failed_for_good_is_answered_as_before_when_sent_again(wf, llm):
    """A reviewer found it: a review message failed with retryable false (its review closed while the model
    answered), sent again with the same message_id once another review was open, ran again in that review."""
    from mojodex_core.workflow.review import REVIEW_CLOSED

    user, created, pk, _divider = _rejected_divider(wf, llm)
    restarted = threading.Event()

    llm.responder = _review_answer_held_until(restarted, reasoning="r")
    try:
        sent = _say(user, created, "rhymes please", "review-late")
        _wait_for_the_review_call(llm)
        user.ok("POST", "/restart_user_workflow_execution", json={"user_task_execution_pk": pk, "from_rank": 1})
        restarted.set()
        (rerun,) = wait_steps(user, pk, awaiting(1))
    finally:
        restarted.set()
    wf.wait_idle()
    messages = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    assert next(m for m in messages if m["message_id"] == "review-late")["error"] == REVIEW_CLOSED
    validate(user, rerun["user_workflow_step_execution_pk"], validated=False)  # another review opens
    calls = len(llm.requests)
    again = _say(user, created, "rhymes please", "review-late")
    wf.wait_idle()
    assert (again["message_pk"], again["status"]) == (sent["message_pk"], "failed")
    assert len(llm.requests) == calls  # not run again in the new review
    messages = user.ok("GET", "/message", params={"session_id": created["session_id"]})["messages"]
    assert not [m for m in messages if m["event_name"] == "mojo_message"]
    assert next(m for m in messages if m["message_id"] == "review-late")["status"] == "failed"
