"""SQLite's query plan for a statement, on an empty in-memory database built from the models."""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.sql import Executable

from mojodex_core.db.models import Base


def sqlite_plan(statement: Executable, params: dict[str, Any]) -> str:
    """The ``EXPLAIN QUERY PLAN`` lines of ``statement`` with these bound values, joined by " | "."""
    engine = create_engine("sqlite://")
    try:
        Base.metadata.create_all(engine)
        with engine.connect() as conn:
            compiled = statement.compile(conn)
            values = compiled.construct_params(params)
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}",
                                        tuple(values[name] for name in compiled.positiontup))
            return " | ".join(row[-1] for row in rows)
    finally:
        engine.dispose()
