"""Unit tests run no server, so a message they leave `pending` is an orphan: the next server the
suite starts would answer it at start-up (`resume_unfinished_turns`), with the scripted LLM's
replies queued for another test. Each unit module's pending messages are failed when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select, update

from mojodex_core.db import make_engine
from mojodex_core.db.models import Message

_message = Message.__table__


@pytest.fixture(scope="module", autouse=True)
def _no_pending_message_left(request: pytest.FixtureRequest) -> Iterator[None]:
    uses_db = any("database_url" in getattr(item, "fixturenames", ())
                  for item in request.session.items if getattr(item, "module", None) is request.module)
    if not uses_db:
        yield
        return
    engine = make_engine(request.getfixturevalue("database_url"))
    try:
        with engine.connect() as conn:
            before = conn.scalar(select(func.coalesce(func.max(_message.c.message_pk), 0)))
        yield
        with engine.begin() as conn:
            conn.execute(update(_message).where(_message.c.message_pk > before, _message.c.status == "pending")
                         .values(status="failed"))
    finally:
        engine.dispose()
