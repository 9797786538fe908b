"""SQLite writers of one process queue on the write gate, the gate is always handed back, and a
savepoint that opens its transaction stays inside it."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.sqlite_writes import WriteGate, gated_connection_class


@pytest.fixture
def factory(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)"))
    yield make_session_factory(engine)
    engine.dispose()


def _count(factory) -> int:  # noqa: ANN001
    with factory() as db:
        return db.scalar(text("SELECT count(*) FROM t"))


def test_concurrent_write_transactions_all_commit_without_lock_errors(factory):
    # Before the gate, 20 writers polled SQLite's busy handler (sleeps up to 100 ms each).
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            for j in range(20):
                with transaction(factory) as db:
                    db.execute(text("INSERT INTO t (k, v) VALUES (:k, 'x')"), {"k": i * 1000 + j})
                    db.execute(text("SELECT count(*) FROM t")).scalar()  # a read inside the write
                    db.execute(text("UPDATE t SET v = 'y' WHERE k = :k"), {"k": i * 1000 + j})
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert _count(factory) == 400


def test_the_gate_is_handed_back_after_a_failed_statement_and_a_rollback(factory):
    with transaction(factory) as db:
        db.execute(text("INSERT INTO t (k, v) VALUES (1, 'a')"))
    with pytest.raises(IntegrityError), transaction(factory) as db:
        db.execute(text("INSERT INTO t (k, v) VALUES (1, 'again')"))
    with pytest.raises(RuntimeError), transaction(factory) as db:
        db.execute(text("INSERT INTO t (k, v) VALUES (2, 'b')"))
        raise RuntimeError("the turn failed after its first write")
    done = threading.Event()

    def other_thread_writes() -> None:
        with transaction(factory) as db:
            db.execute(text("INSERT INTO t (k, v) VALUES (3, 'c')"))
        done.set()

    threading.Thread(target=other_thread_writes, daemon=True).start()
    assert done.wait(5), "the gate was not released"
    assert _count(factory) == 2


def test_a_connection_closed_mid_transaction_hands_the_gate_back(factory):
    session = factory()
    session.execute(text("INSERT INTO t (k, v) VALUES (1, 'a')"))
    session.close()  # returned to the pool: rolled back
    with transaction(factory) as db:
        db.execute(text("INSERT INTO t (k, v) VALUES (2, 'b')"))
    assert _count(factory) == 1


def test_reads_do_not_take_the_gate(tmp_path):
    gate = WriteGate(timeout_s=5)

    conn = sqlite3.connect(str(tmp_path / "r.db"), factory=gated_connection_class(gate), check_same_thread=False)
    conn.execute("CREATE TABLE t (k INTEGER)")
    conn.commit()
    conn.execute("SELECT count(*) FROM t").fetchall()
    assert gate.acquire(), "a read kept the gate"
    gate.release()
    conn.execute("INSERT INTO t VALUES (1)")
    assert not gate._lock.acquire(blocking=False), "a write did not take the gate"
    conn.commit()
    assert gate.acquire(), "the commit did not hand the gate back"
    gate.release()
    conn.close()


def test_a_second_writer_in_the_same_thread_gets_sqlites_answer_instead_of_hanging(tmp_path):
    # A write on another connection while this thread holds the gate would wait forever on the
    # lock: after the timeout it goes on without it and SQLite answers "database is locked".

    gate = WriteGate(timeout_s=0.2)
    path = str(tmp_path / "n.db")
    first = sqlite3.connect(path, factory=gated_connection_class(gate), timeout=0.1)
    first.execute("PRAGMA journal_mode=WAL").fetchall()
    first.execute("CREATE TABLE t (k INTEGER)")
    first.commit()
    second = sqlite3.connect(path, factory=gated_connection_class(gate), timeout=0.1)
    first.execute("INSERT INTO t VALUES (1)")
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        second.execute("INSERT INTO t VALUES (2)")
    assert time.monotonic() - started < 5
    first.commit()
    second.rollback()
    second.execute("INSERT INTO t VALUES (3)")
    second.commit()
    assert [r[0] for r in first.execute("SELECT k FROM t ORDER BY k")] == [1, 3]
    first.close()
    second.close()


def test_the_engine_connects_through_the_gate(factory):
    with factory() as db:
        assert type(db.connection().connection.dbapi_connection).__name__ == "GatedConnection"


def test_a_savepoint_that_opens_the_transaction_passes_the_gate_before_its_first_read(factory):
    # A SAVEPOINT with no transaction open starts one in SQLite (pysqlite sends no BEGIN for it).
    # Its first read fixes a snapshot; had another writer of this process committed before the
    # savepoint's INSERT, SQLite would refuse the upgrade at once ("database is locked", no busy
    # wait): the workflow runner's step claim met that under load. The SAVEPOINT now takes the gate.
    other_done = threading.Event()
    errors: list[BaseException] = []

    def other_writer() -> None:
        try:
            with transaction(factory) as db:
                db.execute(text("INSERT INTO t (k, v) VALUES (2, 'other')"))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            other_done.set()

    with transaction(factory) as db:
        with db.begin_nested():
            assert db.execute(text("SELECT count(*) FROM t")).scalar() == 0  # the snapshot
            thread = threading.Thread(target=other_writer)
            thread.start()
            other_done.wait(0.5)  # it waits for the gate now; before, it committed here
            db.execute(text("INSERT INTO t (k, v) VALUES (1, 'savepoint')"))
    thread.join(10)
    assert errors == []
    assert _count(factory) == 2


def _keys(factory) -> list[int]:  # noqa: ANN001
    with factory() as db:
        return list(db.scalars(text("SELECT k FROM t ORDER BY k")))


@pytest.mark.parametrize("read_first", [False, True], ids=["savepoint-first", "read-then-savepoint"])
def test_a_savepoint_that_opens_the_transaction_is_rolled_back_with_it(factory, read_first):
    # pysqlite sends BEGIN before INSERT/UPDATE/DELETE only: a SAVEPOINT before any of them opened
    # SQLite's transaction itself, and its RELEASE committed it, so the workflow runner's step claim
    # was committed alone, whatever the rest of its transaction became.
    with pytest.raises(RuntimeError), transaction(factory) as db:
        if read_first:
            db.execute(text("SELECT count(*) FROM t"))
        with db.begin_nested():
            db.execute(text("INSERT INTO t (k) VALUES (1)"))
        db.execute(text("INSERT INTO t (k) VALUES (2)"))
        raise RuntimeError("the transaction failed after the savepoint")
    assert _keys(factory) == []


def test_a_savepoint_that_opens_the_transaction_commits_with_it_and_rolls_back_alone(factory):
    with transaction(factory) as db:
        with db.begin_nested():
            db.execute(text("INSERT INTO t (k) VALUES (1)"))
        with pytest.raises(IntegrityError), db.begin_nested():
            db.execute(text("INSERT INTO t (k) VALUES (1)"))
        db.execute(text("INSERT INTO t (k) VALUES (2)"))
    assert _keys(factory) == [1, 2]
    with transaction(factory) as db:  # the gate was handed back at the commit
        db.execute(text("INSERT INTO t (k) VALUES (3)"))
    assert _keys(factory) == [1, 2, 3]


def test_a_core_savepoint_that_opens_the_transaction_is_rolled_back_with_it(factory):
    engine = factory.kw["bind"]
    with engine.connect() as conn:
        outer = conn.begin()
        with conn.begin_nested():
            conn.execute(text("INSERT INTO t (k) VALUES (1)"))
        outer.rollback()
    assert _keys(factory) == []
