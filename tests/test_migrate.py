"""Migrations on a fresh machine."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from sqlalchemy import DateTime, bindparam, create_engine, inspect, select, text
from sqlalchemy.orm import Session as DbSession

from mojodex_core.config import normalise_database_url
from mojodex_core.db.migrate import alembic_config, upgrade
from mojodex_core.db.models import ApiToken
from mojodex_core.users import ended_tokens


def test_upgrade_creates_the_sqlite_folder_of_a_fresh_clone(tmp_path):
    # `make run` on a fresh clone migrates var/mojodex.db before var/ exists.
    url = f"sqlite:///{tmp_path / 'var' / 'nested' / 'mojodex.db'}"
    upgrade(url)
    tables = set(inspect(create_engine(url)).get_table_names())
    assert {"md_user", "task", "user_task_execution", "message", "produced_text_version", "session_event"} <= tables


def _tokens_before_expiry(url: str) -> dict[str, datetime]:
    """At 0010: a user with a sign-in token of 40 days ago, one of a day ago and a CLI token."""
    upgrade(url, "0010_message_session_indexes")
    now = datetime.now(UTC)
    created = {"old_login": now - timedelta(days=40), "new_login": now - timedelta(days=1), "cli": now}
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO md_user (user_id, name, email, language_code, timezone_offset_minutes, "
                          "created_at) VALUES ('u1', 'Ada', 'ada@example.com', 'en', 0, :c)")
                     .bindparams(bindparam("c", type_=DateTime(timezone=True))), {"c": now})
        for name, at in created.items():
            conn.execute(
                text("INSERT INTO api_token (user_id, token_hash, label, created_at) VALUES ('u1', :h, :l, :c)")
                .bindparams(bindparam("c", type_=DateTime(timezone=True))),
                {"h": name, "l": "default" if name == "cli" else "login", "c": at})
    engine.dispose()
    return created


def _expiries(url: str) -> dict[str, datetime | None]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(select(ApiToken.token_hash, ApiToken.expires_at)).all()
    engine.dispose()
    return {h: (at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at) for h, at in rows}


@pytest.fixture(params=["sqlite", "postgresql"])
def scratch_url(request, tmp_path) -> Iterator[str]:
    """A new, empty database: a SQLite file, or a Postgres database next to TEST_DATABASE_URL's."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'scratch.db'}"
        return
    configured = os.environ.get("TEST_DATABASE_URL")
    if not configured:
        pytest.skip("needs TEST_DATABASE_URL (a Postgres server to create a database on)")
    admin_url = normalise_database_url(configured)
    name = f"mojodex_migrate_{uuid.uuid4().hex[:8]}"
    admin_engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin_engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin_engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin_engine.dispose()


def test_0011_gives_stored_sign_in_tokens_the_default_lifetime(scratch_url):
    url = scratch_url
    created = _tokens_before_expiry(url)
    upgrade(url)
    expiries = _expiries(url)
    assert expiries["cli"] is None
    for name in ("old_login", "new_login"):
        assert expiries[name] == created[name] + timedelta(hours=720), name
    # the old sign-in token no longer authenticates, the recent one and the CLI's still do
    engine = create_engine(url)
    with DbSession(engine) as db:
        assert ended_tokens(db, created) == {"old_login": True}
    engine.dispose()


def test_downgrading_0011_revokes_the_expired_sign_in_tokens(scratch_url):
    # Older code checks only revoked_at: dropping expires_at alone would bring an expired sign-in
    # token back to life. The expired one is revoked at its expiry; the others are left as they were.
    url = scratch_url
    _tokens_before_expiry(url)
    upgrade(url)
    command.downgrade(alembic_config(url), "0010_message_session_indexes")
    engine = create_engine(url)
    with engine.connect() as conn:
        assert "expires_at" not in {c["name"] for c in inspect(conn).get_columns("api_token")}
        rows = conn.execute(text("SELECT token_hash, created_at, revoked_at FROM api_token")
                            .columns(created_at=DateTime(timezone=True), revoked_at=DateTime(timezone=True))).all()
    engine.dispose()
    revoked = {h: (r.replace(tzinfo=UTC) if r is not None and r.tzinfo is None else r) for h, _c, r in rows}
    created = {h: (c.replace(tzinfo=UTC) if c.tzinfo is None else c) for h, c, _r in rows}
    assert revoked["new_login"] is None and revoked["cli"] is None
    assert revoked["old_login"] is not None, "the expired sign-in token authenticates again"
    assert abs(revoked["old_login"] - (created["old_login"] + timedelta(days=30))) < timedelta(milliseconds=2)


def test_0011_s_lifetime_is_exactly_720_hours_across_a_daylight_saving_change(scratch_url, monkeypatch):
    # Postgres adds "30 days" as calendar days in the session's time zone: across the change to
    # summer time in Paris that was 719 hours. SQLite's %f kept milliseconds only.
    monkeypatch.setenv("PGTZ", "Europe/Paris")  # libpq: the session time zone of the migration
    url = scratch_url
    upgrade(url, "0010_message_session_indexes")
    created = datetime(2026, 3, 10, 12, 0, 0, 123456, tzinfo=UTC)  # Paris moves on 2026-03-29
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO md_user (user_id, name, email, language_code, timezone_offset_minutes, "
                          "created_at) VALUES ('u1', 'Ada', 'ada@example.com', 'en', 0, :c)")
                     .bindparams(bindparam("c", type_=DateTime(timezone=True))), {"c": created})
        conn.execute(text("INSERT INTO api_token (user_id, token_hash, label, created_at) "
                          "VALUES ('u1', 'dst', 'login', :c)")
                     .bindparams(bindparam("c", type_=DateTime(timezone=True))), {"c": created})
    engine.dispose()
    upgrade(url)
    assert _expiries(url)["dst"] == created + timedelta(hours=720)
