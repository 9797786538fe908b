"""Migrations on a fresh machine."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect

from mojodex_core.db.migrate import upgrade


def test_upgrade_creates_the_sqlite_folder_of_a_fresh_clone(tmp_path):
    # `make run` on a fresh clone migrates var/mojodex.db before var/ exists.
    url = f"sqlite:///{tmp_path / 'var' / 'nested' / 'mojodex.db'}"
    upgrade(url)
    tables = set(inspect(create_engine(url)).get_table_names())
    assert {"md_user", "task", "user_task_execution", "message", "produced_text_version", "session_event"} <= tables
