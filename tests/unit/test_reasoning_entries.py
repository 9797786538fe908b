"""trace_entry / extract_reasoning / append_trace: the pure helpers order turns share."""

from __future__ import annotations

from sqlalchemy import create_engine, select
from sqlalchemy.orm import sessionmaker

from mojodex_core.db.models import Base, ReasoningTraceEntry
from mojodex_core.execution.reasoning import append_trace, entry_kind, extract_reasoning, trace_entry
from mojodex_core.execution.tool_requests import ToolRequest


def test_direct_with_reasoning():
    assert trace_entry("  The user\n asked a question. ", [], "Hello") == "[DIRECT] The user asked a question."


def test_direct_fallback_is_the_first_80_characters():
    reply = "x" * 100
    assert trace_entry(None, [], reply) == "[DIRECT] " + "x" * 80
    assert trace_entry("", [], "  short  ") == "[DIRECT] short"


def test_tool_calls_list_every_tool():
    calls = [
        {"id": "1", "function": {"name": "lookup", "arguments": '{"item": "bagel"}'}},
        {"name": "add_item", "arguments": {"qty": 2}},
    ]
    assert trace_entry("Need both.", calls, "") == "[TOOL_CALL] lookup, add_item: Need both."


def test_tool_call_fallback_names_the_arguments():
    calls = [{"function": {"name": "lookup", "arguments": '{"item": "bagel"}'}},
             ToolRequest(name="echo", query={"text": "hi"})]
    assert trace_entry(None, calls, "ignored") == "[TOOL_CALL] lookup, echo: lookup(item='bagel'); echo(text='hi')"


def test_extract_reasoning_strips_the_tag():
    assert extract_reasoning("<reasoning>why</reasoning> Hi") == ("why", "Hi")
    assert extract_reasoning("Hi") == (None, "Hi")
    assert extract_reasoning("<reasoning>cut off") == ("cut off", "")


def test_entry_kind():
    assert [entry_kind(e) for e in ("[RULE] menu", "[TOOL_CALL] a: b", "[DIRECT] x", "[WHAT] y", "z")] == [
        "RULE", "TOOL_CALL", "DIRECT", "DIRECT", "DIRECT"]


def test_append_trace_keeps_order_across_calls(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 't.db'}")
    Base.metadata.create_all(engine)
    factory = sessionmaker(engine)
    with factory.begin() as db:
        from tests.unit._rows import execution_pk  # noqa: PLC0415

        pk = execution_pk(db)
        append_trace(db, pk, ["[RULE] item on menu", "[DIRECT] confirm"], "ORDER")
        append_trace(db, pk, ["", "[TOOL_CALL] lookup: check"], "ORDER_PARSE")
    with factory() as db:
        rows = db.scalars(select(ReasoningTraceEntry).order_by(ReasoningTraceEntry.position)).all()
        assert [(r.position, r.kind, r.source) for r in rows] == [
            (1, "RULE", "ORDER"), (2, "DIRECT", "ORDER"), (3, "TOOL_CALL", "ORDER_PARSE")]
    engine.dispose()


def test_the_shared_instruction_asks_for_the_tag_the_extractor_reads():
    from mojodex_core.execution.reasoning import REASONING_INSTRUCTION  # noqa: PLC0415

    assert "<reasoning>" in REASONING_INSTRUCTION and "</reasoning>" in REASONING_INSTRUCTION
    assert extract_reasoning("<reasoning>because</reasoning>{\"a\": 1}") == ("because", '{"a": 1}')


def test_entries_go_in_with_one_statement_after_the_last_position(database_url):
    # was: a SELECT of the last position, then the INSERT (two round trips per turn on Postgres)
    from sqlalchemy import event  # noqa: PLC0415

    from mojodex_core.db import make_engine  # noqa: PLC0415
    from tests.unit._rows import execution_pk  # noqa: PLC0415

    engine = make_engine(database_url)
    factory = sessionmaker(engine)
    statements: list[str] = []
    with factory.begin() as db:
        pk = execution_pk(db)
        append_trace(db, pk, ["[RULE] first"], "ORDER")
        event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        append_trace(db, pk, ["[DIRECT] one"], "INSTRUCT_TASK")
        append_trace(db, pk, ["[RULE] two", "", "[TOOL_CALL] x: three"], "ORDER_PARSE")
    assert len(statements) == 2 and all(s.lstrip().startswith("INSERT") for s in statements), statements
    with factory() as db:
        rows = db.execute(select(ReasoningTraceEntry.position, ReasoningTraceEntry.text, ReasoningTraceEntry.source)
                          .where(ReasoningTraceEntry.user_task_execution_fk == pk)
                          .order_by(ReasoningTraceEntry.position)).all()
    assert [tuple(r) for r in rows] == [(1, "[RULE] first", "ORDER"), (2, "[DIRECT] one", "INSTRUCT_TASK"),
                                        (3, "[RULE] two", "ORDER_PARSE"), (4, "[TOOL_CALL] x: three", "ORDER_PARSE")]
    engine.dispose()


def test_a_long_list_of_entries_goes_in_whole_and_in_order(database_url):
    # was: one compound SELECT for all entries, which SQLite refuses past 500 terms
    from mojodex_core.db import make_engine  # noqa: PLC0415
    from tests.unit._rows import execution_pk  # noqa: PLC0415

    engine = make_engine(database_url)
    factory = sessionmaker(engine)
    with factory.begin() as db:
        pk = execution_pk(db)
        append_trace(db, pk, [f"[RULE] step {i}" for i in range(1, 502)], "ORDER")
    with factory() as db:
        rows = db.execute(select(ReasoningTraceEntry.position, ReasoningTraceEntry.text)
                          .where(ReasoningTraceEntry.user_task_execution_fk == pk)
                          .order_by(ReasoningTraceEntry.position)).all()
    assert [tuple(r) for r in rows] == [(i, f"[RULE] step {i}") for i in range(1, 502)]
    engine.dispose()
