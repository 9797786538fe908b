"""mojodex_core.timestamps.iso_utc: every input it accepts gives ISO 8601 in UTC with its offset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from mojodex_core.timestamps import iso_utc

PLUS_2 = timezone(timedelta(hours=2))

@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        # naive: taken as UTC, as the platform stores it (SQLite gives it back without its offset)
        (datetime(2026, 1, 2, 3, 4, 5, 123456), "2026-01-02T03:04:05.123456+00:00"),
        (datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC), "2026-01-02T03:04:05.123456+00:00"),
        # aware in another offset or zone (Postgres in the connection's time zone): the same instant in UTC
        (datetime(2026, 1, 2, 5, 4, 5, 123456, tzinfo=PLUS_2), "2026-01-02T03:04:05.123456+00:00"),
        (datetime(2026, 1, 1, 22, 4, 5, tzinfo=timezone(timedelta(hours=-5))), "2026-01-02T03:04:05+00:00"),
        (datetime(2026, 7, 2, 5, 4, 5, 1, tzinfo=ZoneInfo("Europe/Paris")), "2026-07-02T03:04:05.000001+00:00"),
        # no microseconds: none shown, as isoformat does
        (datetime(2026, 1, 2, 3, 4, 5), "2026-01-02T03:04:05+00:00"),
        # a string (a raw SQLite value from a Core union): parsed first
        ("2026-01-02 03:04:05.123456", "2026-01-02T03:04:05.123456+00:00"),
        ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05+00:00"),
        ("2026-01-02T05:04:05+02:00", "2026-01-02T03:04:05+00:00"),
        # not a timestamp after all: shown as it is
        ("yesterday", "yesterday"),
        ("", ""),
    ],
)
def test_iso_utc(value, expected):
    assert iso_utc(value) == expected
