"""Database engine and session factory, one per process."""

from __future__ import annotations

import hashlib
import time
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Iterator

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from mojodex_core.db.sqlite_writes import WriteGate, gated_connection_class

# The lock a writer of a user_task_execution row takes on it before deciding (Postgres; SQLite
# ignores it, its writes hold the database): FOR NO KEY UPDATE. Every UPDATE that leaves the
# row's key alone takes that lock too, so the row's writers (a completion, a deletion, a rename,
# append_version's touch) are serialised; the rows that only name the execution (the spool's
# llm_call rows, messages, trace entries, tool runs) take FOR KEY SHARE for their foreign key,
# which FOR UPDATE waited for until their commit, and made wait. A writer of such rows that
# counts on the execution's lock to order them (the trace's positions) takes it first.
# `Select.with_for_update(**EXECUTION_LOCK)`, `Session.get(..., with_for_update=EXECUTION_LOCK)`.
EXECUTION_LOCK = MappingProxyType({"key_share": True})


def database_key(database_url: str) -> str:
    """A short name of the database (its URL, password left out) for the folders of var/ that hold one
    database's files (the llm_call spool, the audio uploads): a var/ shared by platforms of several
    databases never mixes them up. Every process of a deployment uses the same DATABASE_URL."""
    key = make_url(database_url).render_as_string(hide_password=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def make_engine(database_url: str, *, pool_size: int = 60, max_overflow: int = 0) -> Engine:
    if database_url.startswith("sqlite"):
        path = database_url.split("///", 1)[1] if "///" in database_url else ""
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # Writers of this process queue on one lock rather than in SQLite's busy handler.
        gate = WriteGate(timeout_s=30)
        engine = create_engine(
            database_url,
            connect_args={"check_same_thread": False, "timeout": 30, "factory": gated_connection_class(gate)},
            pool_size=pool_size,
            max_overflow=max_overflow,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001
            cursor = dbapi_conn.cursor()
            # WAL lets readers proceed while the runner writes; FKs are off by default in SQLite.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    # A bounded connect: a database host that drops packets must not hang /health for minutes.
    # LIFO: the most recently used connection is reused, so its server-side prepared statements
    # (psycopg prepares a statement at its 6th execution on a connection) serve the next request,
    # instead of the pool rotating through every connection; idle ones age at the bottom.
    engine = create_engine(
        database_url, pool_size=pool_size, max_overflow=max_overflow, pool_use_lifo=True,
        connect_args={"connect_timeout": 5},
    )
    ping_when_idle(engine)
    return engine


# A pooled connection used this recently is taken as alive: pinging it at every checkout (SQLAlchemy's
# pool_pre_ping) cost a round trip per transaction, five per instruct turn on Postgres.
IDLE_PING_S = 1.0


def ping_when_idle(engine: Engine, idle_s: float | None = None) -> None:
    """Pessimistic disconnect handling for connections idle longer than ``idle_s``.

    A connection back in the pool for longer is pinged at checkout, and one found dead is
    replaced before the caller sees it (the pool retries on DisconnectionError), as with
    pool_pre_ping. A connection that died within the last ``idle_s`` fails its first statement
    instead; SQLAlchemy then invalidates the whole pool, so only that transaction fails.
    """
    dialect = engine.dialect

    def threshold() -> float:
        return IDLE_PING_S if idle_s is None else idle_s

    @event.listens_for(engine, "connect")
    def _fresh(_dbapi_conn, record) -> None:  # noqa: ANN001
        record.info["mojodex_used_at"] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _used(_dbapi_conn, record) -> None:  # noqa: ANN001
        if record is not None:
            record.info["mojodex_used_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_conn, record, _proxy) -> None:  # noqa: ANN001
        if time.monotonic() - record.info.get("mojodex_used_at", 0.0) <= threshold():
            return
        try:
            dialect.do_ping(dbapi_conn)
        except Exception as exc:
            if dialect.is_disconnect(exc, dbapi_conn, None):
                raise DisconnectionError(f"pooled connection found dead: {exc}") from exc
            raise
        record.info["mojodex_used_at"] = time.monotonic()


def autocommit_connection(engine: Engine) -> Connection:
    """A pooled Postgres connection in autocommit: each statement commits itself, with no BEGIN
    and COMMIT of its own (two round trips). For statements that stand alone: one-shot reads, a
    write guarded by its own WHERE, one statement that writes several rows atomically."""
    return engine.connect().execution_options(isolation_level="AUTOCOMMIT")


def read_connection(engine: Engine) -> Connection:
    """A pooled connection for one-shot reads (a request's token lookup, its checks).

    On Postgres it is in autocommit: SQLAlchemy's autobegin would wrap the read in BEGIN ... ROLLBACK,
    two more round trips than the SELECT itself (four per message sent: the token's and the
    route's reads). Each statement still reads one consistent snapshot. SQLite sends no BEGIN for
    a read (pysqlite begins at the first write), so its connections are used as they are."""
    if engine.dialect.name == "sqlite":
        return engine.connect()
    return autocommit_connection(engine)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


def factory_engine(factory: sessionmaker[Session]) -> Engine:
    """The Engine a session factory is bound to (the Core helpers below need one)."""
    bind = factory.kw.get("bind")
    if not isinstance(bind, Engine):
        raise TypeError(f"a Core connection needs a session factory bound to an Engine, not {type(bind).__name__}")
    return bind


def core_transaction(factory: sessionmaker[Session]) -> AbstractContextManager[Connection]:
    """``transaction``'s Core counterpart, for hot paths made only of Core statements (a turn's
    claim and completion): a Connection on the factory's engine in a transaction, committed on
    success and rolled back on any error. No ORM Session around it: ~15 µs less per statement on
    SQLite (37 against 20 µs for a one-row SELECT), and no unit of work to flush at commit."""
    return factory_engine(factory).begin()


def guarded_statements(factory: sessionmaker[Session]) -> AbstractContextManager[Connection]:
    """A Core connection for reads followed by writes that are each guarded by their own WHERE
    (a turn's set-up: its reads, then the claim ``status = 'pending'``), so nothing needs them to
    commit together.

    On Postgres it is in autocommit (``autocommit_connection``): a transaction would only add its
    BEGIN and COMMIT, two round trips before the LLM request. READ COMMITTED gives each statement
    its own snapshot either way, and a guarded UPDATE is atomic on its own; a statement failing
    after the claim leaves the claim committed, so its caller marks the message failed. On SQLite
    (no network, and pysqlite sends no BEGIN for a read) it is ``core_transaction``'s, committed
    on success and rolled back on an error."""
    engine = factory_engine(factory)
    return core_transaction(factory) if engine.dialect.name == "sqlite" else autocommit_connection(engine)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session committed on success and rolled back on any error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def ping(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
