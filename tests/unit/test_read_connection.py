"""read_connection: a request's one-shot reads cost their SELECT only (no BEGIN/ROLLBACK on Postgres)."""

from __future__ import annotations

import pytest
from sqlalchemy import event, text

from mojodex_core.db import make_engine, read_connection


@pytest.fixture
def engine(database_url: str):  # noqa: ANN201
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def test_a_read_sees_committed_rows_and_leaves_the_pooled_connection_as_it_was(engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS read_probe (n INTEGER)"))
        conn.execute(text("DELETE FROM read_probe"))
        conn.execute(text("INSERT INTO read_probe (n) VALUES (7)"))
    with read_connection(engine) as conn:
        assert conn.execute(text("SELECT n FROM read_probe")).scalar() == 7
    with engine.begin() as conn:  # the same pooled connection, back in its usual mode: a rollback undoes
        conn.execute(text("INSERT INTO read_probe (n) VALUES (8)"))
        conn.rollback()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM read_probe")).scalar() == 1
        conn.execute(text("DROP TABLE read_probe"))
        conn.commit()


def test_on_postgres_a_read_opens_no_transaction(engine, is_postgres) -> None:
    if not is_postgres:
        pytest.skip("SQLite sends no BEGIN for a read anyway")
    import psycopg

    sent: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: sent.append(args[2]))
    with read_connection(engine) as conn:
        assert conn.execute(text("SELECT 1")).scalar() == 1
        status = conn.connection.dbapi_connection.info.transaction_status
    assert status == psycopg.pq.TransactionStatus.IDLE  # not INTRANS: no BEGIN went before the SELECT
    assert sent == ["SELECT 1"]
    with engine.connect() as conn:  # a plain connection of the same pool still runs in a transaction
        conn.execute(text("SELECT 1"))
        assert conn.connection.dbapi_connection.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS


def test_on_postgres_statements_stay_prepared_across_requests(engine, is_postgres) -> None:
    # psycopg prepares a statement on its 5th execution on a connection and forgets all it prepared
    # at every ROLLBACK. A request's reads (autocommit: no ROLLBACK) on the most recently used
    # pooled connection (LIFO) therefore reach the threshold and keep their server-side plans:
    # the instruct turn's 9-table context read was planned anew at every turn (~2 ms of planning).
    if not is_postgres:
        pytest.skip("Postgres server-side prepared statements")
    held = [engine.connect() for _ in range(3)]  # several idle connections in the pool, as under load
    for conn in held:
        conn.execute(text("SELECT 1"))
        conn.close()
    probe = text("SELECT count(*) FROM pg_class WHERE relname = :name")
    for _ in range(6):  # six requests, one read each
        with read_connection(engine) as conn:
            conn.execute(probe, {"name": "message"}).scalar()
    with read_connection(engine) as conn:
        prepared = conn.execute(text("SELECT statement FROM pg_prepared_statements")).scalars().all()
    assert any("pg_class" in statement for statement in prepared), prepared
