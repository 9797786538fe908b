"""The result of an execution: one produced_text, an append-only list of versions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import ProducedText, ProducedTextVersion, UserTaskExecution, utcnow
from mojodex_core.timestamps import iso_utc

MAX_ATTEMPTS = 5

# Task types whose produced text users may not edit (a manual edit or a text edit action), and why.
FROZEN_BY_TASK_TYPE = {
    "order": "an order's produced text is its ticket, frozen when the order was placed: it cannot be edited",
}


class ProducedTextFrozen(Exception):
    """The produced text of this execution cannot be edited by its user."""


def check_editable(task_type: str) -> None:
    reason = FROZEN_BY_TASK_TYPE.get(task_type)
    if reason is not None:
        raise ProducedTextFrozen(reason)


class VersionConflict(Exception):
    """A manual edit made on a version that is no longer the latest."""

    def __init__(self, base_produced_text_version_index: int, latest_produced_text_version_index: int) -> None:
        super().__init__(
            f"this edit is based on version {base_produced_text_version_index}, but the latest version is "
            f"{latest_produced_text_version_index}: read it again before editing"
        )
        self.base_produced_text_version_index = base_produced_text_version_index
        self.latest_produced_text_version_index = latest_produced_text_version_index


class UnknownBaseVersion(ValueError):
    """A manual edit said to be made on a version beyond the latest: one that never existed."""

    def __init__(self, base_produced_text_version_index: int, latest_produced_text_version_index: int) -> None:
        super().__init__(
            f"there is no version {base_produced_text_version_index} "
            f"(the latest version is {latest_produced_text_version_index})"
        )


def latest_version(db: DbSession, user_task_execution_pk: int) -> ProducedTextVersion | None:
    return db.scalar(
        select(ProducedTextVersion)
        .join(ProducedText)
        .where(ProducedText.user_task_execution_fk == user_task_execution_pk)
        .order_by(ProducedTextVersion.version_index.desc())
        .limit(1)
    )


_version = ProducedTextVersion.__table__
_produced = ProducedText.__table__
# The columns a prompt shows of the latest version (Core: no ORM rows on the turn's path).
_LATEST_VERSION = (
    select(_version.c.version_index, _version.c.title, _version.c.production)
    .select_from(_version.join(_produced, _produced.c.produced_text_pk == _version.c.produced_text_fk))
    .where(_produced.c.user_task_execution_fk == bindparam("b_pk"))
    .order_by(_version.c.version_index.desc())
    .limit(1)
)


def latest_version_row(db: DbSession | Connection, user_task_execution_pk: int) -> Row | None:
    """``version_index``, ``title`` and ``production`` of the latest version, or None."""
    return db.execute(_LATEST_VERSION, {"b_pk": user_task_execution_pk}).first()


def get_or_create_produced_text(db: DbSession, execution: UserTaskExecution, user_id: str) -> ProducedText:
    for _ in range(MAX_ATTEMPTS):
        found = db.scalar(
            select(ProducedText)
            .where(ProducedText.user_task_execution_fk == execution.user_task_execution_pk)
            .with_for_update()
        )
        if found is not None:
            return found
        try:
            with db.begin_nested():
                produced = ProducedText(user_task_execution_fk=execution.user_task_execution_pk, user_id=user_id)
                db.add(produced)
            return produced
        except IntegrityError:
            continue  # another turn or an edit created it first: use theirs
    raise RuntimeError(f"could not create produced_text for execution {execution.user_task_execution_pk}")


def lock_execution(db: DbSession, user_task_execution_pk: int) -> None:
    """Writes to the execution row: it serialises appends to one execution (a row lock on
    Postgres, the write lock on SQLite) until the transaction ends. Taking it twice is harmless."""
    db.execute(
        update(UserTaskExecution)
        .where(UserTaskExecution.user_task_execution_pk == user_task_execution_pk)
        .values(user_task_execution_pk=UserTaskExecution.user_task_execution_pk)
    )


def append_manual_edit(
    db: DbSession,
    execution: UserTaskExecution,
    user_id: str,
    *,
    production: str,
    title: str | None = None,
    base_produced_text_version_index: int | None = None,
) -> ProducedTextVersion:
    """The user's edit as the next version, with the latest version's title (when none is given)
    and text type. That latest version is read under the execution's lock, so no other writer
    appends between the read and the edit. ``base_produced_text_version_index``, the version the
    edit was made on (0: no version yet), raises VersionConflict when it is older than the latest,
    UnknownBaseVersion when it is beyond it."""
    lock_execution(db, execution.user_task_execution_pk)
    previous = latest_version(db, execution.user_task_execution_pk)
    latest_index = previous.version_index if previous is not None else 0
    if base_produced_text_version_index is not None and base_produced_text_version_index > latest_index:
        raise UnknownBaseVersion(base_produced_text_version_index, latest_index)
    if base_produced_text_version_index is not None and base_produced_text_version_index < latest_index:
        raise VersionConflict(base_produced_text_version_index, latest_index)
    return append_version(
        db,
        execution,
        user_id,
        title=title if title is not None else (previous.title if previous else ""),
        production=production,
        origin="manual_edit",
        text_type_fk=previous.text_type_fk if previous else None,
    )


def append_version(
    db: DbSession,
    execution: UserTaskExecution,
    user_id: str,
    *,
    title: str,
    production: str,
    origin: str,
    text_type_fk: int | None = None,
    message_pk: int | None = None,
) -> ProducedTextVersion:
    """Adds the next version; concurrent writers get distinct, gap-free indexes."""
    lock_execution(db, execution.user_task_execution_pk)
    produced = get_or_create_produced_text(db, execution, user_id)
    for _ in range(MAX_ATTEMPTS):
        last = db.scalar(
            select(func.max(ProducedTextVersion.version_index)).where(
                ProducedTextVersion.produced_text_fk == produced.produced_text_pk
            )
        )
        try:
            with db.begin_nested():
                version = ProducedTextVersion(
                    produced_text_fk=produced.produced_text_pk,
                    version_index=(last or 0) + 1,
                    title=title,
                    production=production,
                    origin=origin,
                    text_type_fk=text_type_fk,
                    message_fk=message_pk,
                )
                db.add(version)
            return version
        except IntegrityError:
            continue
    raise RuntimeError(f"could not append a version to produced_text {produced.produced_text_pk}")


def version_payload(version: ProducedTextVersion, produced: ProducedText, text_type: str | None) -> dict:
    return _payload(
        produced.produced_text_pk, version.produced_text_version_pk, version.version_index, version.title,
        version.production, text_type, version.origin, produced.user_task_execution_fk, version.created_at,
    )


def _payload(
    produced_text_pk: int, version_pk: int, index: int, title: str | None, production: str | None,
    text_type: str | None, origin: str | None, user_task_execution_pk: int, created_at: datetime | None,
) -> dict:
    """A version as events and routes show it."""
    return {
        "produced_text_pk": produced_text_pk,
        "produced_text_version_pk": version_pk,
        "produced_text_version_index": index,
        "produced_text_title": title,
        "produced_text": production,
        "text_type": text_type,
        "origin": origin,
        "user_task_execution_pk": user_task_execution_pk,
        "created_at": iso_utc(created_at),
    }


def oversized(
    *, title: str | None = None, production: str | None = None, max_title_chars: int, max_production_chars: int
) -> tuple[str, int] | None:
    """The first of a user-written title or text longer than its limit: (field, limit), or None.

    The limits are settings (MOJODEX_MAX_TITLE_CHARS, MOJODEX_MAX_PRODUCED_TEXT_CHARS): every
    version is kept, so an unbounded edit would grow the database by its size each time.
    """
    if title is not None and len(title) > max_title_chars:
        return "title", max_title_chars
    if production is not None and len(production) > max_production_chars:
        return "production", max_production_chars
    return None


# --- The assistant's draft, in Core (the instruct turn's completion; see execution/turn_completion.py).
# Every other writer appends through append_version above (ORM). Both serialise on the execution
# row: append_version's first statement is an UPDATE of it, the turn holds it FOR NO KEY UPDATE (and on
# SQLite the database write lock) before these statements run, so the index read below cannot be
# raced by another appender and needs neither a savepoint nor a retry.
_PRODUCED_AND_LAST = (
    select(
        _produced.c.produced_text_pk,
        select(func.max(_version.c.version_index))
        .where(_version.c.produced_text_fk == _produced.c.produced_text_pk)
        .scalar_subquery()
        .label("last_index"),
    )
    .where(_produced.c.user_task_execution_fk == bindparam("b_pk"))
)
_INSERT_PRODUCED = insert(_produced).returning(_produced.c.produced_text_pk)
_INSERT_VERSION = insert(_version).returning(_version.c.produced_text_version_pk)


def append_draft_version(
    db: DbSession | Connection,
    user_task_execution_pk: int,
    user_id: str,
    *,
    title: str,
    production: str,
    text_type_fk: int | None,
    text_type: str | None,
    message_pk: int,
    now: datetime | None = None,
) -> dict:
    """The assistant's next version of an execution's text (its produced_text created with the
    first), as Core statements; returns version_payload's dict for it. The caller holds the
    execution row (see above)."""
    now = now or utcnow()
    found = db.execute(_PRODUCED_AND_LAST, {"b_pk": user_task_execution_pk}).first()
    if found is None:
        produced_pk = db.execute(_INSERT_PRODUCED, {
            "user_task_execution_fk": user_task_execution_pk, "user_id": user_id, "created_at": now,
        }).scalar_one()
        index = 1
    else:
        produced_pk = found.produced_text_pk
        index = (found.last_index or 0) + 1
    version_pk = db.execute(_INSERT_VERSION, {
        "produced_text_fk": produced_pk, "version_index": index, "title": title, "production": production,
        "origin": "assistant", "text_type_fk": text_type_fk, "message_fk": message_pk, "created_at": now,
    }).scalar_one()
    return _payload(produced_pk, version_pk, index, title, production, text_type, "assistant",
                    user_task_execution_pk, now)
