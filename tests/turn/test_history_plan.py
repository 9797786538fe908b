"""The history page finds each answer by its key, whatever Postgres knows of the table."""

from __future__ import annotations

import pytest

from mojodex_core.execution.history import _page_for
from tests.turn._harness import QUESTION


def test_on_postgres_each_answer_is_looked_up_by_its_key(turns, engine, is_postgres):
    # Joined, a database without statistics (a new one, until autovacuum analyzes it) scanned the
    # whole session for each user message of the page (a join filter): quadratic in the session.
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
        page = _page_for(conn, scoped=True)  # the statement a task turn reads its history with
        compiled = page.compile(dialect=engine.dialect)
        plan = "\n".join(row[0] for row in conn.exec_driver_sql("EXPLAIN " + str(compiled),
                                                                 compiled.construct_params(params)))
        answers = conn.execute(page, params).all()
    assert "Join Filter" not in plan, plan
    assert plan.count("message_pk = user_message.answer_message_fk") == 3, plan  # an index lookup per column
    assert len(answers) == 4 and all(row.answer_pk is not None for row in answers)
