"""The set-up reads the tool uses of its message only when a run of it recorded one (a retry, a decision's
follow-up), as its context read tells: a new message's turn, the hot path, runs the statements it ran before they
were replayed, and a message failed by any path goes on from its uses."""

from __future__ import annotations

import uuid

from sqlalchemy import event, select

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, TaskToolExecution, TaskToolQuery
from mojodex_core.execution import failures
from mojodex_core.execution.intake import accept_user_message
from mojodex_core.llm import LLMError
from tests.turn._harness import QUESTION, Step, tool_call


def _statements(engine, run) -> list[str]:  # noqa: ANN001
    seen: list[str] = []

    def before(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001, ANN002
        seen.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", before)
    try:
        run()
    finally:
        event.remove(engine, "before_cursor_execute", before)
    return seen


def _echo_then_the_llm_fails(turns):  # noqa: ANN001, ANN202
    """A new message of the tool task whose turn will run turn_echo, then meet a down LLM:
    (execution pk, session_id, message_id, the accepted message)."""
    pk, session_id = turns.execution(turns.user(), "turn_prompt_tools")
    message_id = uuid.uuid4().hex
    accepted = accept_user_message(turns.factory, turns.events, session_id=session_id, user_task_execution_pk=pk,
                                   text="echo it", message_id=message_id)
    turns.llm.script(tool_call("turn_echo", "hi"), Step(LLMError("the LLM is down")))
    return pk, session_id, message_id, accepted


def test_only_a_message_with_a_recorded_use_reads_its_uses(turns, engine):
    pk, session_id, message_id, accepted = _echo_then_the_llm_fails(turns)
    first = _statements(engine, lambda: turns.run(session_id, accepted.message_pk))
    assert not [s for s in first if s.startswith("SELECT task_tool_execution.tool_name")], first

    accept_user_message(turns.factory, turns.events, session_id=session_id, user_task_execution_pk=pk,
                        text="echo it", message_id=message_id)
    turns.llm.script(QUESTION)
    retried = _statements(engine, lambda: turns.run(session_id, accepted.message_pk))
    assert len([s for s in retried if s.startswith("SELECT task_tool_execution.tool_name")]) == 1, retried
    assert '"echo": "hi"' in str(turns.llm.requests[-1]["messages"][-1])  # the retry went on from it
    assert len(retried) == len(_new_question_turn(turns, engine, session_id, pk)) + 1


def _new_question_turn(turns, engine, session_id: str, pk: int) -> list[str]:  # noqa: ANN001
    message_pk = turns.message(session_id, pk, "and now?")
    turns.llm.script(QUESTION)
    return _statements(engine, lambda: turns.run(session_id, message_pk))


def test_a_message_failed_without_its_error_message_still_goes_on_from_its_uses(turns, monkeypatch):
    # was: the retry's prompt lacked the recorded use (here the failure's last resort, mark_failed, stores no
    # error message), and a model told nothing would ask for the tool again
    pk, session_id, message_id, accepted = _echo_then_the_llm_fails(turns)

    def storing_fails(*_args, **_kwargs) -> None:  # noqa: ANN002, ANN003
        raise RuntimeError("the database hiccuped")

    with monkeypatch.context() as patched:
        patched.setattr(failures, "record_failure", storing_fails)
        turns.run(session_id, accepted.message_pk)
    failed = turns.row(Message, accepted.message_pk)
    assert (failed.status, failed.answer_message_fk) == ("failed", None)

    again = accept_user_message(turns.factory, turns.events, session_id=session_id, user_task_execution_pk=pk,
                                text="echo it", message_id=message_id)
    assert again.run and again.message_pk == accepted.message_pk
    turns.llm.script(QUESTION)
    turns.run(session_id, accepted.message_pk)
    retry = turns.llm.requests[-1]["messages"]
    assert '"echo": "hi"' in str(retry[-1]) and "turn_echo" in str(retry[-2]), retry[-3:]
    with turns.factory() as db:
        uses = db.execute(select(TaskToolExecution.tool_name, TaskToolExecution.status)
                          .where(TaskToolExecution.user_task_execution_fk == pk)).all()
    assert [tuple(u) for u in uses] == [("turn_echo", "done")]
    answered = turns.row(Message, accepted.message_pk)
    assert answered.status == "answered" and turns.row(Message, answered.answer_message_fk).text == "Who is it for?"


def test_a_message_resumed_after_a_crash_goes_on_from_the_uses_that_have_a_result(turns):
    # A crashed worker's message, pending again (start-up resume): the use that ran is told, the one cut off
    # while its tool ran (no result) is not.
    # was: the prompt lacked the use
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    message_pk = turns.message(session_id, pk, "echo twice")
    with transaction(turns.factory) as db:
        for text, status, result in (("ran", "done", {"echo": "ran"}), ("cut off", "running", None)):
            use = TaskToolExecution(user_task_execution_fk=pk, tool_name="turn_echo", status=status,
                                    explanation="Echoing.", message_fk=message_pk)
            db.add(use)
            db.flush()
            db.add(TaskToolQuery(task_tool_execution_fk=use.task_tool_execution_pk, query={"text": text},
                                 result=result))
    turns.llm.script(QUESTION)
    turns.run(session_id, message_pk)
    prompt = turns.llm.requests[-1]["messages"]
    assert prompt[-3]["content"] == "echo twice"
    assert "<tool_name>turn_echo</tool_name>" in prompt[-2]["content"] and '"text": "ran"' in prompt[-2]["content"]
    assert '"echo": "ran"' in prompt[-1]["content"] and "cut off" not in str(prompt)
    assert turns.row(Message, message_pk).status == "answered"
