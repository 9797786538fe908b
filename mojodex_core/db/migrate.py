"""Run Alembic migrations from code (CLI `mojodex db upgrade`, tests, `make run`)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from mojodex_core.config import PROJECT_ROOT


def alembic_config(database_url: str) -> Config:
    cfg = Config(str(PROJECT_ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    cfg.attributes["configure_logging"] = False
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    if database_url.startswith("sqlite:///"):
        # SQLite creates the file but not its folder (var/ on a fresh clone).
        Path(database_url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(database_url), revision)
