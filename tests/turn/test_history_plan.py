"""The history page finds each answer by its key, whatever Postgres knows of the table."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from mojodex_core.db.models import Message
from mojodex_core.execution.history import _PAGES, _page_for
from tests.turn._harness import QUESTION


@pytest.mark.parametrize("scoped", [True, False])  # a task turn's view, the home chat's
def test_on_postgres_each_answer_is_looked_up_by_its_key(turns, engine, is_postgres, scoped):
    # A database without statistics (a new one, until autovacuum analyzes it) scanned the whole
    # session for each user message of the page: quadratic in the session.
    if not is_postgres:
        pytest.skip("the plan of Postgres")
    user = turns.user()
    pk, session_id = turns.execution(user)
    last = None
    for i in range(4):
        turns.llm.script(QUESTION)
        last = turns.message(session_id, pk, f"message {i}")
        turns.run(session_id, last)
    params = {"b_session": session_id, "b_pk": pk, "b_before": last + 1, "b_limit": 32}
    with engine.connect() as conn:
        page = _page_for(conn, scoped=scoped)  # the statement a turn reads its history with
        compiled = page.compile(dialect=engine.dialect)
        plan = "\n".join(row[0] for row in conn.exec_driver_sql("EXPLAIN " + str(compiled),
                                                                 compiled.construct_params(params)))
        answers = conn.execute(page, params).all()
    assert "Join Filter" not in plan, plan
    # The answer is found by its key alone; its session's condition in the lookup made Postgres
    # read the whole session by the session's index for each user message (seen on a new table).
    assert plan.count("Index Cond: (message_pk = user_message.answer_message_fk)") == 1, plan
    assert plan.count("Index Cond: (((session_id)") == 1, plan  # the page's own scan, no other
    assert len(answers) == 4 and all(row.answer_pk is not None for row in answers)


def test_sqlite_keeps_the_join_and_postgres_takes_the_fenced_lookup(engine):
    # SQLite reads answers by key through the join already.
    sqlite = create_engine("sqlite://")
    try:
        for bind, correlated in ((sqlite, False), (engine, engine.dialect.name == "postgresql")):
            with bind.connect() as conn, Session(bind) as session:
                for scoped in (True, False):
                    assert _page_for(conn, scoped=scoped) is _PAGES[(scoped, correlated)]
                    assert _page_for(session, scoped=scoped) is _PAGES[(scoped, correlated)]
    finally:
        sqlite.dispose()


def test_a_session_bound_per_table_gets_its_dialect_s_page(engine):
    with Session(binds={Message: engine}) as session:  # no default bind: get_bind() alone fails
        correlated = engine.dialect.name == "postgresql"
        assert _page_for(session, scoped=True) is _PAGES[(True, correlated)]
