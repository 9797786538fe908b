"""The instruct prompt read with Core (one joined query, the task's part cached per version) is the
prompt the ORM code rendered, byte for byte: system prompt and conversation, for executions with
inputs, a produced text, a parent (chaining), tools, a profile, in French, in a home chat."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from sqlalchemy import event

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, ProducedText, UserTaskExecution
from mojodex_core.execution import turn as turn_module
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.tool_runs import decide
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from tests.turn._harness import PROMPT_TASK, Turns, tool_call
from tests.turn._legacy_prompt import legacy_home_chat_conversation, legacy_llm_messages

NOW = datetime(2026, 11, 27, 9, 41, 7, tzinfo=UTC)
INPUTS = {"email_content": "the weekly sync moves to Friday", "tone": "formal"}
PROFILE = {"name": "Ada L.", "job": "CTO", "about_me": "Likes short emails.", "company_name": "Acme",
           "company_description": "Anvils, mostly.", "timezone": "Europe/Paris", "language": "de"}


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch):
    monkeypatch.setattr(turn_module, "_now", lambda: NOW)


def expected_and_new(turns: Turns, session_id: str, message_pk: int) -> tuple[list[dict], list[dict]]:
    with turns.factory() as db:
        expected = legacy_llm_messages(db, turns.turn, message_pk, NOW)
    context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk))
    assert context is not None and context.setup_error is None
    return expected, context.llm_messages


def assert_same(turns: Turns, session_id: str, message_pk: int) -> list[dict]:
    expected, new = expected_and_new(turns, session_id, message_pk)
    assert new[0]["content"] == expected[0]["content"]
    assert new == expected
    return new


def test_inputs_and_a_conversation(turns):
    user = turns.user()
    pk, session_id = turns.execution(user, inputs=INPUTS)
    raw = "<ask_user_primary_info>Who?</ask_user_primary_info>"
    turns.answered(session_id, pk, "an email for the team", "Who?", raw)
    turns.answered(session_id, pk, "the team", "Which tone?")
    current = turns.message(session_id, pk, "formal please")
    turns.message(session_id, pk, "sent while the turn runs")  # after the current one: left out
    messages = assert_same(turns, session_id, current)
    assert "the weekly sync moves to Friday" in messages[0]["content"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]


def test_a_produced_text_version(turns):
    user = turns.user()
    pk, session_id = turns.execution(user, inputs=INPUTS)
    turns.version(pk, user, "First", "first body")
    turns.version(pk, user, "Second", "second body")
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "shorter"))
    assert "(version 2)" in messages[0]["content"] and "second body" in messages[0]["content"]


@pytest.mark.parametrize("language", ["en", "fr"])
def test_chaining_the_parent_result_and_prefix(turns, language):
    user = turns.user(language=language)
    parent, _ = turns.execution(user, "turn_prompt_minutes", language=None, inputs=INPUTS)
    turns.version(parent, user, "Sprint review", "Decisions: ship on Friday.")
    with transaction(turns.factory) as db:
        db.get(UserTaskExecution, parent).title = "Review"
    pk, session_id = turns.execution(user, "turn_prompt_follow_up", language=None, parent=parent, inputs=INPUTS)
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "go"))
    assert "Decisions: ship on Friday." in messages[0]["content"]
    assert ("Envoie-le :" if language == "fr" else "Send it:") in messages[0]["content"]
    assert ("Compte rendu" if language == "fr" else "Minutes") in messages[0]["content"]


def test_a_deleted_parent_or_a_parent_without_the_action(turns):
    user = turns.user()
    parent, _ = turns.execution(user, "turn_prompt_minutes", inputs=INPUTS)
    other_parent, _ = turns.execution(user, "turn_prompt_email", inputs=INPUTS)  # offers no such action
    with transaction(turns.factory) as db:
        db.get(UserTaskExecution, parent).status = "deleted"
    for parent_pk in (parent, other_parent):
        pk, session_id = turns.execution(user, "turn_prompt_follow_up", parent=parent_pk)
        assert_same(turns, session_id, turns.message(session_id, pk, "go"))


@pytest.mark.parametrize("mode", ["auto", "tags", "functions"])
def test_tools(make_turns, mode):
    from mojodex_core.execution.tool_loop import ToolSettings

    turns = make_turns(tools=ToolSettings(mode=mode))
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools", inputs=INPUTS)
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "echo it"))
    assert "turn_echo" in messages[0]["content"]
    assert ("<tool_call>" in messages[0]["content"]) is (mode != "functions")


def test_a_profile_on_mobile(turns):
    user = turns.user(profile=PROFILE)
    pk, session_id = turns.execution(user, inputs=INPUTS, platform="mobile")
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "hello"))
    assert "Anvils, mostly." in messages[0]["content"] and "Ada L." in messages[0]["content"]


def test_french(turns):
    user = turns.user(language="fr", profile={"name": "Zoé"})
    pk, session_id = turns.execution(user, language=None, inputs=INPUTS)
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "bonjour"))
    assert "Le sujet de l'e-mail" in messages[0]["content"] and '"fr"' in messages[0]["content"]


def test_a_language_without_displayed_data_falls_back(turns):
    user = turns.user(language="de")
    pk, session_id = turns.execution(user, language="pt-BR", inputs=INPUTS)
    assert_same(turns, session_id, turns.message(session_id, pk, "olá"))


def test_a_home_chat_session_shows_free_chat_but_not_other_tasks(turns):
    user = turns.user()
    pk, session_id = turns.execution(user, inputs=None)
    other, _ = turns.execution(user, session_id=session_id)
    turns.answered(session_id, None, "free chat question", "free chat answer")
    turns.answered(session_id, other, "other task question", "other task answer")
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "now this task"))
    texts = [m["content"] for m in messages[1:]]
    assert "free chat question" in texts and "other task question" not in texts


def test_a_changed_task_applies_at_the_next_turn(turns):
    user = turns.user()
    pk, session_id = turns.execution(user, inputs=INPUTS)
    assert_same(turns, session_id, turns.message(session_id, pk, "one"))
    changed = copy.deepcopy(PROMPT_TASK)
    changed["definition_for_system"] = "The user needs a CHANGED email"
    changed["task_displayed_data"][0]["json_input"][0]["description_for_system"] = "CHANGED input"
    try:
        with transaction(turns.factory) as db:
            store_spec(db, validate_spec(changed), "upsert")
        messages = assert_same(turns, session_id, turns.message(session_id, pk, "two"))
        assert "CHANGED email" in messages[0]["content"] and "CHANGED input" in messages[0]["content"]
    finally:
        with transaction(turns.factory) as db:
            store_spec(db, validate_spec(PROMPT_TASK), "upsert")


def test_the_conversation_window(make_turns):
    turns = make_turns(context_tokens=60)
    user = turns.user()
    pk, session_id = turns.execution(user)
    for n in range(6):
        turns.answered(session_id, pk, f"question {n} " + "x" * 40, f"answer {n} " + "y" * 40)
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "last"))
    assert 1 < len(messages) < 13


def test_the_turn_starts_the_execution_and_claims_the_message(turns):
    user = turns.user()
    pk, session_id = turns.execution(user)
    first = turns.message(session_id, pk, "one")
    context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=first))
    assert context.started_now
    assert turns.row(Message, first).status == "processing"
    started = turns.row(UserTaskExecution, pk)
    assert started.status == "started" and started.start_date is not None
    assert turns.turn._begin(TurnJob(session_id=session_id, message_pk=first)) is None  # never twice
    second = turns.message(session_id, pk, "two")
    assert turns.turn._begin(TurnJob(session_id=session_id, message_pk=second)).started_now is False


@pytest.mark.parametrize("exchanges", [31, 32, 33, 95, 96, 97])
def test_a_history_across_page_boundaries_is_read_whole_when_it_fits(make_turns, exchanges):
    turns = make_turns()
    user = turns.user()
    pk, session_id = turns.execution(user)
    for n in range(exchanges):
        turns.answered(session_id, pk, f"question {n}", f"answer {n}")
    messages = assert_same(turns, session_id, turns.message(session_id, pk, "last"))
    assert len(messages) == 1 + 2 * exchanges + 1


def test_a_long_interleaved_history_is_windowed_as_before(make_turns):
    turns = make_turns(context_tokens=400)
    user = turns.user()
    pk, session_id = turns.execution(user, inputs=None)
    other, _ = turns.execution(user, session_id=session_id)
    for n in range(120):
        execution = None if n % 7 == 0 else other if n % 11 == 0 else pk
        turns.answered(session_id, execution, f"question {n} " + "q" * (n % 13), f"answer {n} " + "a" * (n % 17),
                       raw=f"<tag>answer {n}</tag>" if n % 3 == 0 else None)
        if n % 29 == 0:
            turns.message(session_id, pk, f"unanswered {n}", status="failed")
    # Two messages sent before the first is answered: the answers come after both.
    first = turns.message(session_id, pk, "first of two", status="answered")
    second = turns.message(session_id, pk, "second of two", status="answered")
    for user_pk, text in ((first, "answer to the first"), (second, "answer to the second")):
        answer_pk = turns.message(session_id, pk, text, status="final", sender="assistant")
        with transaction(turns.factory) as db:
            db.get(Message, user_pk).answer_message_fk = answer_pk
    current = turns.message(session_id, pk, "now")
    turns.message(session_id, pk, "sent while the turn runs")
    messages = assert_same(turns, session_id, current)
    assert messages[-1]["content"] == "now" and messages[-3]["content"] == "second of two"
    assert 10 < len(messages) < 80


def test_a_long_history_is_read_only_as_far_as_the_window(make_turns, engine):
    turns = make_turns(context_tokens=300)
    user = turns.user()
    pk, session_id = turns.execution(user)
    for n in range(300):
        turns.answered(session_id, pk, f"question {n}", f"answer {n}")
    current = turns.message(session_id, pk, "last")
    history_reads: list[dict] = []

    def record(_conn, clause, _multi, params, _options):  # noqa: ANN001
        if "answer_message_fk" in str(clause) and "b_session" in params:  # the turn's, not the comparator's
            history_reads.append(params)

    event.listen(engine, "before_execute", record)
    try:
        messages = assert_same(turns, session_id, current)
    finally:
        event.remove(engine, "before_execute", record)
    assert 20 < len(messages) < 60
    assert history_reads and all("b_limit" in params for params in history_reads)
    assert sum(params["b_limit"] for params in history_reads) <= 96  # a page or two, of 300 exchanges


def test_a_tool_follow_up_reads_the_prompt_of_its_message(turns):
    # The follow-up after an approval reads its context with a plain read (its message was answered
    # with the approval request, so the claiming read does not apply) and claims it after, then
    # reads its conversation again, up to its own message.
    user = turns.user()
    pk, session_id = turns.execution(user, "turn_prompt_tools")
    for n in range(3):
        turns.answered(session_id, pk, f"question {n}", f"answer {n}")
    message_pk = turns.message(session_id, pk, "echo it")
    turns.llm.script(tool_call("turn_guarded", "hi"))
    turns.run(session_id, message_pk)
    tool_pk = turns.sent.named("mojo_message")[-1]["task_tool_execution_pk"]
    turns.answered(session_id, pk, "sent while it waited", "its answer")  # after the message: left out
    with transaction(turns.factory) as db:
        decide(db, user, tool_pk, True)
    with turns.factory() as db:
        expected = legacy_llm_messages(db, turns.turn, message_pk, NOW)
    assert turns.row(Message, message_pk).status == "answered"
    context = turns.turn._begin(TurnJob(session_id=session_id, message_pk=message_pk, task_tool_execution_pk=tool_pk))
    assert context is not None and context.llm_messages == expected
    assert turns.row(Message, message_pk).status == "processing"
    assert [m["content"] for m in expected[1:]][-3:] == ["question 2", "answer 2", "echo it"]


@pytest.mark.parametrize("scoped", [True, False])
def test_sqlite_reads_a_page_of_history_from_the_session_index_without_sorting(scoped):
    from mojodex_core.execution.history import _PAGES
    from tests.support.sqlite_plan import sqlite_plan

    plan = sqlite_plan(_PAGES[(scoped, False)], {"b_session": "s", "b_pk": 1, "b_before": 10, "b_limit": 32})
    assert "ix_message_session_pk" in plan and "TEMP B-TREE" not in plan, plan


@pytest.mark.parametrize("budget", [150, 400, 100_000])
def test_the_home_chat_view_of_a_long_session_is_the_one_read_whole(turns, engine, budget):
    from mojodex_core.execution.history import read_home_chat_conversation
    from mojodex_core.home_chat.turn import HomeChatTurn

    user = turns.user()
    pk, session_id = turns.execution(user, inputs=None)
    other, _ = turns.execution(user, session_id=session_id)
    for n in range(150):
        execution = None if n % 3 == 0 else other if n % 5 == 0 else pk  # every message is shown here
        answer = "" if n % 19 == 0 else f"answer {n} " + "a" * (n % 17)  # an answer with nothing visible
        turns.answered(session_id, execution, "" if n % 23 == 0 else f"question {n}", answer,
                       raw=f"<tag>{answer}</tag>" if n % 2 == 0 else None)
    current = turns.message(session_id, None, "now")
    turns.message(session_id, None, "sent while the turn runs")
    with turns.factory() as db:
        new = read_home_chat_conversation(db, session_id, current, budget)
        assert new == legacy_home_chat_conversation(db, session_id, current, budget)
    assert new[-1].content == "now" and all("<tag>" not in m.content for m in new)
    if budget != 150:
        return
    # The home chat turn's own prompt reads its history with a LIMIT, one page of it here.
    turn = HomeChatTurn(turns.factory, turns.events, None, lambda *_: None, context_tokens=budget)
    reads: list[str] = []

    def record(_conn, _cursor, statement, *_):  # noqa: ANN001
        if "answer_message_fk" in statement:
            reads.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        with turns.factory() as db:
            messages, _tasks, _user, _language = turn._prompt(db, session_id, current)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert [m["content"] for m in messages[1:]] == [m.content for m in new]
    assert len(reads) == 1 and "LIMIT" in reads[0]


def test_the_fenced_context_read_is_the_joined_one(turns, engine, is_postgres):
    # Postgres reads a turn's context through two fenced lateral subqueries (cheaper to plan); it
    # must return what the nine-table join returns, column for column, in every case it meets.
    if not is_postgres:
        pytest.skip("LATERAL: the fenced form is Postgres's (SQLite reads the joined one)")
    plain = turn_module._CONTEXT
    fenced = turn_module._CONTEXT_FENCED
    user = turns.user(profile=PROFILE)
    pk, session_id = turns.execution(user, inputs=INPUTS)
    bare, bare_session = turns.execution(turns.user(), language=None)
    turns.version(pk, user, "First", "first body")
    turns.version(pk, user, "Second", "second body")
    unversioned, unversioned_session = turns.execution(user)
    with transaction(turns.factory) as db:
        db.add(ProducedText(user_task_execution_fk=unversioned, user_id=user))
    messages = [
        turns.message(session_id, pk, "with a profile and two versions"),
        turns.message(bare_session, bare, "no profile, no version, no session language"),
        turns.message(unversioned_session, unversioned, "a produced text with no version yet"),
        turns.message(session_id, None, "no execution"),
        turns.message(session_id, pk, "answered already", status="answered"),
        987654321,  # no such message
    ]
    with transaction(turns.factory) as db:
        db.execute(UserTaskExecution.__table__.update()
                   .where(UserTaskExecution.user_task_execution_pk == bare).values(status="deleted"))
    with engine.connect() as conn:
        assert list(conn.execute(fenced, {"b_pk": 1}).keys()) == list(conn.execute(plain, {"b_pk": 1}).keys())
        for message_pk in messages:
            expected = conn.execute(plain, {"b_pk": message_pk}).all()
            assert conn.execute(fenced, {"b_pk": message_pk}).all() == expected, message_pk
        assert conn.execute(fenced, {"b_pk": messages[0]}).one().version_title == "Second"
