"""Shared fixtures: a migrated database (SQLite, or Postgres when TEST_DATABASE_URL is set),
the scripted OpenAI-compatible server, and a live platform server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from sqlalchemy import create_engine, text

from mojodex_core.config import normalise_database_url
from mojodex_core.db.migrate import upgrade

pytest_plugins = ["tests.support.llm_fixtures", "tests.support.live", "tests.support.refusals"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"


def reset_postgres(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The suite's database, migrated to head once per run."""
    configured = os.environ.get("TEST_DATABASE_URL")
    if configured:
        url = normalise_database_url(configured)
        reset_postgres(url)
    else:
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    upgrade(url)
    yield url


@pytest.fixture(scope="session")
def is_postgres(database_url: str) -> bool:
    return database_url.startswith("postgresql")
