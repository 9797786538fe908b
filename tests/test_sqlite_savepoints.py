"""Savepoints on SQLite stay inside their transaction."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.migrate import upgrade
from mojodex_core.db.models import ProducedTextVersion, Session, Task, User, UserTask, UserTaskExecution
from mojodex_core.execution.produced_text import append_version


def test_a_rolled_back_edit_leaves_no_version_behind(tmp_path):
    # Before the fix, pysqlite sent no BEGIN before the first SAVEPOINT, so releasing it
    # committed the new version even though the surrounding transaction was rolled back.
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url)
    factory = make_session_factory(make_engine(url))
    with transaction(factory) as db:
        db.add(User(user_id="u", name="U", email="u@example.com"))
        db.add(Task(name_for_system="t", type="instruct", spec={}))
        db.flush()
        db.add(UserTask(user_id="u", task_fk=db.scalar(select(Task.task_pk))))
        db.add(Session(session_id="s", user_id="u"))
        db.flush()
        db.add(UserTaskExecution(user_task_fk=db.scalar(select(UserTask.user_task_pk)), session_id="s"))
    with pytest.raises(RuntimeError), transaction(factory) as db:
        execution = db.scalar(select(UserTaskExecution))
        append_version(db, execution, "u", title="T", production="text", origin="manual_edit")
        raise RuntimeError("the request failed after the edit")
    with factory() as db:
        assert db.scalar(select(func.count(ProducedTextVersion.produced_text_version_pk))) == 0


@pytest.fixture
def table_factory(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'sp.db'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (k INTEGER PRIMARY KEY)"))
    yield make_session_factory(engine)
    engine.dispose()


def _keys(factory) -> list[int]:  # noqa: ANN001
    with factory() as db:
        return list(db.scalars(text("SELECT k FROM t ORDER BY k")))


@pytest.mark.parametrize("read_first", [False, True], ids=["savepoint-first", "read-then-savepoint"])
def test_a_savepoint_that_opens_the_transaction_is_rolled_back_with_it(table_factory, read_first):
    # pysqlite sends BEGIN before INSERT/UPDATE/DELETE only: a SAVEPOINT before any of them opened
    # SQLite's transaction itself, and its RELEASE committed it, so the workflow runner's step claim
    # was committed alone, whatever the rest of its transaction became.
    with pytest.raises(RuntimeError), transaction(table_factory) as db:
        if read_first:
            db.execute(text("SELECT count(*) FROM t"))
        with db.begin_nested():
            db.execute(text("INSERT INTO t (k) VALUES (1)"))
        db.execute(text("INSERT INTO t (k) VALUES (2)"))
        raise RuntimeError("the transaction failed after the savepoint")
    assert _keys(table_factory) == []


def test_a_savepoint_that_opens_the_transaction_commits_with_it_and_rolls_back_alone(table_factory):
    with transaction(table_factory) as db:
        with db.begin_nested():
            db.execute(text("INSERT INTO t (k) VALUES (1)"))
        with pytest.raises(IntegrityError), db.begin_nested():
            db.execute(text("INSERT INTO t (k) VALUES (1)"))
        db.execute(text("INSERT INTO t (k) VALUES (2)"))
    assert _keys(table_factory) == [1, 2]
    with transaction(table_factory) as db:  # the gate was handed back at the commit
        db.execute(text("INSERT INTO t (k) VALUES (3)"))
    assert _keys(table_factory) == [1, 2, 3]


def test_a_core_savepoint_that_opens_the_transaction_is_rolled_back_with_it(table_factory):
    engine = table_factory.kw["bind"]
    with engine.connect() as conn:
        outer = conn.begin()
        with conn.begin_nested():
            conn.execute(text("INSERT INTO t (k) VALUES (1)"))
        outer.rollback()
    assert _keys(table_factory) == []
