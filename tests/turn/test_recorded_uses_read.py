"""The set-up reads the tool uses of its message only when the message was answered or failed before (a retry, a
decision's follow-up): a new message's turn, the hot path, runs the statements it ran before they were replayed."""

from __future__ import annotations

import uuid

from sqlalchemy import event

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


def test_only_a_message_answered_before_reads_its_tool_uses(turns, engine):
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    message_id = uuid.uuid4().hex
    accepted = accept_user_message(turns.factory, turns.events, session_id=session_id, user_task_execution_pk=pk,
                                   text="echo it", message_id=message_id)
    turns.llm.script(tool_call("turn_echo", "hi"), Step(LLMError("the LLM is down")))
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
