"""One text for every timestamp a client sees: ISO 8601 in UTC, with its offset.

Rows are written with aware UTC datetimes (``models.utcnow``), but what comes back from the
database differs: SQLite drops the offset (a naive datetime, which is UTC), Postgres gives the
instant in the connection's time zone. Every REST answer and Socket.IO payload goes through
``iso_utc`` so a timestamp reads the same just written and read back, and a browser's
``new Date(...)`` does not take it for local time.
"""

from __future__ import annotations

from datetime import UTC, datetime


def as_utc(value: datetime) -> datetime:
    """The instant as an aware UTC datetime: a naive one (SQLite's, as stored) is taken as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def iso_utc(value: datetime | str | None) -> str | None:
    """``2026-01-02T03:04:05.123456+00:00`` (None stays None). A naive datetime is taken as UTC,
    as the platform stores; a string (a raw SQLite value from a Core union) is parsed first."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value  # not a timestamp after all: shown as it is
    return as_utc(value).isoformat()
