"""core_transaction: the Core counterpart of transaction() that the turn's claim and completion use."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select, update

from mojodex_core.db import core_transaction, make_engine, make_session_factory, transaction
from mojodex_core.db.models import UserTaskExecution
from tests.unit._rows import execution_pk

_execution = UserTaskExecution.__table__


def _title(factory, pk: int) -> str | None:  # noqa: ANN001
    with factory() as db:
        return db.scalar(select(_execution.c.title).where(_execution.c.user_task_execution_pk == pk))


def test_it_commits_on_success_and_rolls_back_on_error(database_url):  # noqa: ANN001
    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    with transaction(factory) as db:
        pk = execution_pk(db)
    rename = update(_execution).where(_execution.c.user_task_execution_pk == pk)
    with core_transaction(factory) as conn:
        conn.execute(rename.values(title="kept"))
    assert _title(factory, pk) == "kept"
    with pytest.raises(RuntimeError), core_transaction(factory) as conn:
        conn.execute(rename.values(title="dropped"))
        raise RuntimeError("the turn failed after its write")
    assert _title(factory, pk) == "kept"
    # Nothing left checked out or locked: another writer goes on at once. A write gate left held
    # (SQLite) would make it wait out the gate's 30 s timeout before writing anyway.
    started = time.monotonic()
    with transaction(factory) as db:
        db.execute(rename.values(title="next"))
    assert time.monotonic() - started < 5
    assert _title(factory, pk) == "next"
    assert engine.pool.checkedout() == 0
    with factory() as db:
        assert db.scalar(select(func.count()).select_from(_execution).where(
            _execution.c.user_task_execution_pk == pk)) == 1
    engine.dispose()


def test_a_factory_not_bound_to_an_engine_is_refused_clearly(database_url):  # noqa: ANN001
    engine = make_engine(database_url)
    with engine.connect() as conn:
        with pytest.raises(TypeError, match="bound to an Engine, not Connection"):
            core_transaction(make_session_factory(conn))  # type: ignore[arg-type]
    engine.dispose()
