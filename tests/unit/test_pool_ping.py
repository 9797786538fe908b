"""Postgres pool: connections are pinged at checkout only after being idle, and a dead one is replaced.

SQLAlchemy's pool_pre_ping cost a round trip at every checkout (five per instruct turn); a
connection used within the last second is taken as alive instead (mojodex_core.db.ping_when_idle).
"""

from __future__ import annotations

import os
import secrets
import time

import pytest
from sqlalchemy import event, text

from mojodex_core.config import normalise_database_url
from mojodex_core.db import make_engine

URL = os.environ.get("TEST_DATABASE_URL")
pytestmark = pytest.mark.skipif(not (URL or "").startswith("postgres"), reason="needs TEST_DATABASE_URL (Postgres)")


@pytest.fixture
def engine(monkeypatch):
    monkeypatch.setattr("mojodex_core.db.IDLE_PING_S", 0.3)
    engine = make_engine(normalise_database_url(URL), pool_size=2, max_overflow=0)
    pings = []
    real = engine.dialect.do_ping
    monkeypatch.setattr(engine.dialect, "do_ping", lambda conn: pings.append(1) or real(conn))
    engine.pings = pings
    yield engine
    engine.dispose()


def backend_pid(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT pg_backend_pid()")).scalar()


def test_a_connection_used_just_now_is_not_pinged(engine):
    first = backend_pid(engine)
    for _ in range(20):
        assert backend_pid(engine) == first
    assert engine.pings == []


def test_an_idle_connection_is_pinged_once_then_taken_as_alive(engine):
    backend_pid(engine)
    time.sleep(0.4)
    backend_pid(engine)
    backend_pid(engine)
    assert len(engine.pings) == 1


def test_an_idle_connection_killed_by_the_server_is_replaced_before_the_caller_sees_it(engine):
    dead = backend_pid(engine)
    killer = make_engine(normalise_database_url(URL), pool_size=1, max_overflow=0)
    try:
        with killer.connect() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": dead}).scalar()
    finally:
        killer.dispose()
    time.sleep(0.4)
    assert backend_pid(engine) != dead  # no error: the ping found it dead and the pool reconnected


def test_a_load_peak_leaves_its_connections_pooled():
    # With the default settings, connections opened during a peak are kept for the next one:
    # overflow ones (the old default, 20 + 40) were closed when returned to the full pool, and
    # a load going above the pool's size and back opened and closed connections all along.
    from mojodex_core.config import load_settings

    settings = load_settings({"DATABASE_URL": normalise_database_url(URL),
                              "MOJODEX_ADMIN_SECRET": secrets.token_urlsafe(32),
                              "MOJODEX_SECRET_KEY": secrets.token_urlsafe(32)})
    engine = make_engine(settings.database_url, pool_size=settings.db_pool_size,
                         max_overflow=settings.db_max_overflow)
    opened: list[int] = []
    event.listen(engine, "connect", lambda *_: opened.append(1))
    try:
        for _peak in range(2):
            held = [engine.connect() for _ in range(30)]
            for conn in held:
                conn.execute(text("SELECT 1"))
            for conn in held:
                conn.close()
        assert len(opened) == 30  # the second peak reused the first one's connections
    finally:
        engine.dispose()
