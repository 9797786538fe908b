"""Alembic builds the schema on SQLite and Postgres, matching the models; unique constraints hold."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect
from sqlalchemy.exc import IntegrityError

from mojodex_core.db import make_engine, make_session_factory
from mojodex_core.db.migrate import upgrade
from mojodex_core.db.models import (
    Base,
    Message,
    ProducedText,
    Session,
    SessionEvent,
    Task,
    User,
    UserTask,
    UserTaskExecution,
)
from tests.foundation.conftest import REPO_ROOT, VENV_BIN, clean_env

TABLES = set(Base.metadata.tables)


def _diff(url: str) -> list:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_alembic_upgrade_head_builds_the_schema_on_a_fresh_sqlite_file(tmp_path):
    """The real `alembic upgrade head` command, DATABASE_URL from the environment."""
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    proc = subprocess.run(
        [str(VENV_BIN / "alembic"), "upgrade", "head"],
        cwd=REPO_ROOT,
        env=clean_env(DATABASE_URL=url),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert TABLES <= _tables(url)
    assert _diff(url) == []


def test_sqlite_migrations_match_the_models(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(url)
    assert _diff(url) == []


@pytest.mark.postgres
@pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs TEST_DATABASE_URL (Postgres)")
def test_postgres_migrations_match_the_models(database_url):
    # database_url is the suite's Postgres database: schema dropped, then `upgrade head`, at session start.
    assert database_url.startswith("postgresql")
    assert TABLES <= _tables(database_url)
    assert _diff(database_url) == []


def test_downgrade_to_base_and_upgrade_again(tmp_path):
    from alembic import command

    from mojodex_core.db.migrate import alembic_config

    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(url)
    command.downgrade(alembic_config(url), "base")
    assert _tables(url) <= {"alembic_version"}
    upgrade(url)
    assert _diff(url) == []


# --- unique constraints, by behaviour


@pytest.fixture(scope="module")
def factory(database_url):
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.fixture
def graph(factory):
    """A user, a task, a user_task, a session and an execution, committed."""
    suffix = uuid.uuid4().hex[:10]
    with factory() as db:
        user = User(user_id=f"u{suffix}", name="U", email=f"{suffix}@example.com", language_code="en")
        task = Task(name_for_system=f"uniq_{suffix}", type="instruct", spec={})
        db.add_all([user, task])
        db.flush()
        user_task = UserTask(user_id=user.user_id, task_fk=task.task_pk)
        session = Session(session_id=f"s{suffix}", user_id=user.user_id)
        db.add_all([user_task, session])
        db.flush()
        execution = UserTaskExecution(user_task_fk=user_task.user_task_pk, session_id=session.session_id)
        db.add(execution)
        db.commit()
        return {
            "user_id": user.user_id,
            "task_pk": task.task_pk,
            "session_id": session.session_id,
            "execution_pk": execution.user_task_execution_pk,
        }


def _insert_twice(factory, make) -> None:
    with factory() as db:
        db.add(make())
        db.commit()
        db.add(make())
        with pytest.raises(IntegrityError):
            db.commit()
        db.rollback()


def test_one_produced_text_per_execution(factory, graph):
    _insert_twice(
        factory, lambda: ProducedText(user_task_execution_fk=graph["execution_pk"], user_id=graph["user_id"])
    )


def test_one_user_task_per_user_and_task(factory, graph):
    with factory() as db:
        db.add(UserTask(user_id=graph["user_id"], task_fk=graph["task_pk"]))
        with pytest.raises(IntegrityError):
            db.commit()


def test_message_id_is_unique_per_session(factory, graph):
    def message() -> Message:
        return Message(
            session_id=graph["session_id"],
            sender="user",
            message_id="m1",
            event_name="user_message",
            status="pending",
            text="hi",
        )

    _insert_twice(factory, message)
    # The same client message_id in another session is fine.
    with factory() as db:
        other = Session(session_id=f"o{uuid.uuid4().hex[:10]}", user_id=graph["user_id"])
        db.add(other)
        db.flush()
        db.add(
            Message(
                session_id=other.session_id,
                sender="user",
                message_id="m1",
                event_name="user_message",
                status="pending",
                text="hi",
            )
        )
        db.commit()


def test_event_seq_is_unique_per_session(factory, graph):
    _insert_twice(
        factory,
        lambda: SessionEvent(session_id=graph["session_id"], seq=1, event_name="mojo_message", payload={}),
    )


def test_email_is_unique(factory, graph):
    with factory() as db:
        email = db.get(User, graph["user_id"]).email
        db.add(User(user_id=uuid.uuid4().hex, name="Twin", email=email))
        with pytest.raises(IntegrityError):
            db.commit()
