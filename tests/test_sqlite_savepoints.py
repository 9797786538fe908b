"""A produced text version's savepoints on SQLite stay inside their transaction (the gated
connection's own savepoint tests are in test_sqlite_write_gate.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.migrate import upgrade
from mojodex_core.db.models import ProducedTextVersion, UserTaskExecution
from mojodex_core.execution.produced_text import append_version
from tests.unit._rows import execution_pk


def test_a_rolled_back_edit_leaves_no_version_behind(tmp_path):
    # Before the fix, pysqlite sent no BEGIN before the first SAVEPOINT, so releasing it
    # committed the new version even though the surrounding transaction was rolled back.
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url)
    factory = make_session_factory(make_engine(url))
    with transaction(factory) as db:
        pk = execution_pk(db, user_id="u")
    with pytest.raises(RuntimeError), transaction(factory) as db:
        execution = db.get(UserTaskExecution, pk)
        append_version(db, execution, "u", title="T", production="text", origin="manual_edit")
        raise RuntimeError("the request failed after the edit")
    with factory() as db:
        assert db.scalar(select(func.count(ProducedTextVersion.produced_text_version_pk))) == 0
