"""Savepoints on SQLite stay inside their transaction."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

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
