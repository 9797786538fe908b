"""Time zone names: the one check for every place that takes a user's time zone.

A zone is a real IANA name ("Europe/Paris", "America/Argentina/Buenos_Aires", "UTC"), as
``zoneinfo.available_timezones()`` lists them, without ``localtime`` (the server's own zone, a
link to one of the others) and ``Factory`` (the "zone not set" placeholder), which it lists when
the system's zone folder has them. ``zoneinfo.ZoneInfo`` loads those and more (``posixrules``,
the ``posix/`` and ``right/`` copies of the database), which is why it is not the check.
CPython's ``available_timezones()`` already leaves out ``posixrules``, ``posix/`` and ``right/``:
they are filtered here too only in defence, should another implementation list them.

The ``tzdata`` package is a dependency: ``available_timezones()`` lists its zones beside the
system folder's, so every name of the package is accepted on every host (Debian 13 moves
``US/Eastern`` and the other old names to tzdata-legacy; a slim image has no folder at all), and
``ZoneInfo`` finds a zone in the package when the folder lacks it. The process's search path is
left as it is (``PYTHONTZPATH`` stays the operator's). ``pip install -U tzdata`` updates the zones.
"""

from __future__ import annotations

import logging
import zoneinfo
from functools import cache

NOT_ZONES = frozenset({"localtime", "Factory", "posixrules"})  # posixrules: defensive, see above
_NOT_ZONE_PREFIXES = ("posix/", "right/")  # defensive, see above
EXAMPLE = "Europe/Paris"
log = logging.getLogger("mojodex.timezones")


@cache
def iana_zone_names() -> frozenset[str]:
    """Every zone name the time zone database of this machine (or the ``tzdata`` package) has."""
    return frozenset(
        name for name in zoneinfo.available_timezones()
        if name not in NOT_ZONES and not name.startswith(_NOT_ZONE_PREFIXES)
    )


def is_iana_zone(name: object) -> bool:
    return isinstance(name, str) and name in iana_zone_names()


def check_time_zone(name: str) -> str:
    """``name`` when it is an IANA zone; else ValueError saying what is expected."""
    if not is_iana_zone(name):
        raise ValueError(f"unknown time zone {name!r}: use an IANA zone name like '{EXAMPLE}'")
    return name


def warm_zone_names() -> int:
    """Reads the zone list now, at start-up: it scans the zone files (about 0.1 s, blocking, which
    under gevent stalls every request) and is cached. Warns when there are no zones at all, as
    every profile time zone would then be refused as unknown. The number of zones."""
    count = len(iana_zone_names())
    if not count:
        log.warning("no time zone data (neither the tzdata package nor a zone folder): every profile "
                    "time zone will be refused; install the tzdata package (pip install tzdata)")
    return count
