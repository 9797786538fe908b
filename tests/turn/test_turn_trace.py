"""An instruct turn's reasoning trace: collected during the calls, written in the answer's
transaction, and still written (on its own) when the turn ends without an answer."""

from __future__ import annotations

import threading

from sqlalchemy import update

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, UserTaskExecution
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.tool_loop import ReplyGenerator, ToolSettings, TurnRequest
from mojodex_core.llm import LLMError
from tests.turn._harness import DRAFT, QUESTION, Step, Transactions, tool_call

EMPTY = "<reasoning>WHY-EMPTY</reasoning><user_language>en</user_language>"
INSERT_TRACE = "INSERT INTO reasoning_trace_entry"
INSERT_MESSAGE = "INSERT INTO message"
CLAIM = "UPDATE message SET status"


def test_the_entries_are_written_with_the_answer_in_one_transaction(turns, engine):
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    message_pk = turns.message(session_id, pk, "echo it")
    turns.llm.script(tool_call("turn_echo", "hi", why="WHY-TOOL"), QUESTION)
    with Transactions(engine) as transactions:
        turns.run(session_id, message_pk)
    (written,) = transactions.with_statement(INSERT_TRACE)
    # In a transaction, or (Postgres, a plain answer) as CTEs of the one statement that stores it.
    assert any(INSERT_MESSAGE in s for s in written), written
    assert any(CLAIM in s for s in written), written
    assert turns.trace(pk) == [(1, "[TOOL_CALL] turn_echo: WHY-TOOL", "INSTRUCT_TASK"),
                               (2, "[DIRECT] WHY-Q", "TOOL_FOLLOW_UP")]
    assert turns.row(Message, message_pk).status == "answered"


def test_a_draft_turn_writes_its_entry_with_the_draft(turns, engine):
    user = turns.user()
    pk, session_id = turns.execution(user)
    turns.llm.script(DRAFT)
    with Transactions(engine) as transactions:
        turns.run(session_id, turns.message(session_id, pk, "write it"))
    (written,) = transactions.with_statement(INSERT_TRACE)
    assert any("INSERT INTO produced_text_version" in s for s in written), written
    assert turns.trace(pk) == [(1, "[DIRECT] WHY-D", "INSTRUCT_TASK")]


def test_an_empty_answer_still_leaves_its_entry(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    message_pk = turns.message(session_id, pk, "hello")
    turns.llm.script(EMPTY)
    turns.run(session_id, message_pk)
    assert turns.row(Message, message_pk).status == "failed"
    assert "empty answer" in turns.sent.named("error")[0]["error"]
    assert turns.trace(pk) == [(1, "[DIRECT] WHY-EMPTY", "INSTRUCT_TASK")]


def test_an_llm_error_on_the_follow_up_keeps_the_first_calls_entry(turns):
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    turns.llm.script(tool_call("turn_echo", "hi", why="WHY-TOOL"), Step(LLMError("the LLM went away")))
    message_pk = turns.message(session_id, pk, "echo it")
    turns.run(session_id, message_pk)
    assert turns.row(Message, message_pk).status == "failed"
    assert turns.sent.named("error")[0]["error"] == "the LLM went away"
    assert turns.trace(pk) == [(1, "[TOOL_CALL] turn_echo: WHY-TOOL", "INSTRUCT_TASK")]
    # The retried turn's entries follow.
    with transaction(turns.factory) as db:
        db.execute(update(Message).where(Message.message_pk == message_pk).values(status="pending"))
    turns.llm.script(QUESTION)
    turns.run(session_id, message_pk)
    assert [p for p, _t, _s in turns.trace(pk)] == [1, 2]


def test_a_superseded_or_deleted_turn_keeps_its_entries(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    first = turns.message(session_id, pk, "one")

    def answered_elsewhere() -> None:
        with transaction(turns.factory) as db:
            db.execute(update(Message).where(Message.message_pk == first).values(status="answered"))

    turns.llm.script(Step(QUESTION, during=answered_elsewhere))
    turns.run(session_id, first)
    assert turns.trace(pk) == [(1, "[DIRECT] WHY-Q", "INSTRUCT_TASK")]
    second = turns.message(session_id, pk, "two")

    def deleted() -> None:
        with transaction(turns.factory) as db:
            db.execute(update(UserTaskExecution).where(UserTaskExecution.user_task_execution_pk == pk)
                       .values(status="deleted"))

    turns.llm.script(Step(DRAFT, during=deleted))
    turns.run(session_id, second)
    assert turns.row(Message, second).status == "failed"
    assert turns.trace(pk) == [(1, "[DIRECT] WHY-Q", "INSTRUCT_TASK"), (2, "[DIRECT] WHY-D", "INSTRUCT_TASK")]


def test_a_generator_without_a_list_writes_each_entry_at_once(turns, engine):
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    generator = ReplyGenerator(turns.factory, SessionEventLog(turns.factory), turns.llm, ToolSettings(),
                               coalesce_ms=0, grammar=None, max_tokens=None)
    tools = [{"name": "turn_echo", "usage_description": "Echo a text."}]
    message_pk = turns.message(session_id, pk, "hi")
    request = TurnRequest(session_id=session_id, user_task_execution_pk=pk, user_id=user, message_pk=message_pk,
                          llm_messages=[{"role": "user", "content": "hi"}], tools=tools)
    turns.llm.script(tool_call("turn_echo", "hi", why="WHY-TOOL"), QUESTION)
    collected: list[tuple[str, str]] = []
    generator.generate(request, threading.Event(), trace=collected)
    assert collected == [("[TOOL_CALL] turn_echo: WHY-TOOL", "INSTRUCT_TASK"), ("[DIRECT] WHY-Q", "TOOL_FOLLOW_UP")]
    assert turns.trace(pk) == []
    turns.llm.script(QUESTION)
    with Transactions(engine) as transactions:
        generator.generate(request, threading.Event())
    assert turns.trace(pk) == [(1, "[DIRECT] WHY-Q", "INSTRUCT_TASK")]
    assert len(transactions.with_statement(INSERT_TRACE)) == 1
