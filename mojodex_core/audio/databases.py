"""Which databases' platforms have started with an audio folder: the sweep runs only in a folder of one.

The uploads folder (``var/audio``) is flat: a file does not say whose row names it. A var dir shared by
platforms of several databases (the llm_call spool allows it) would see one database's start-up sweep
delete another's recordings, since no row of its own names them. So the folder keeps a registry,
``.databases``, one ``database_key`` (``mojodex_core.db``) a line, of every database whose platform has
started with it: each platform adds its key at start-up, before it serves (``register``), and the sweep
(``mojodex_core.audio.orphans``) deletes only when the registry lists this database's key and no other
(``sweep_refusal``). A folder that is or was shared is never swept again, and the file a message names
is never deleted; one whose registry cannot be read or written is not swept either.

A registry created in a folder that already holds uploads (a var dir used before the registry existed,
perhaps by several databases: the first platform to start would otherwise sweep the others' files) starts
with an ``unknown`` line, and the folder is not swept until an operator who knows it is one database's
removes that line.

The registry is read and appended under an advisory lock on itself (``flock``), so platforms starting
together never lose a key. A dot name: the store never reads it nor does the sweep look at it.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from mojodex_core.audio.orphans import SWEEPABLE, messages_naming, sweep_orphans
from mojodex_core.audio.store import AudioStore
from mojodex_core.concurrency import run_blocking

log = logging.getLogger("mojodex.audio")

REGISTRY = ".databases"
UNKNOWN = "unknown"  # the folder held uploads before its registry: whose, nobody can tell


def _keys(text: str) -> list[str]:
    return list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))


def register(directory: Path, key: str) -> bool:
    """Adds ``key`` to the folder's registry if it is not there (creating both); whether it is now listed.
    Never raises: a failure is logged (and the folder is then not swept: ``sweep_refusal``)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / REGISTRY, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        with os.fdopen(fd, "r+", encoding="utf-8") as registry:
            fcntl.flock(registry, fcntl.LOCK_EX)
            registry.seek(0)
            text = registry.read()
            if not text and _holds_uploads(directory):
                text = UNKNOWN + "\n"
                registry.write(text)
            if key not in _keys(text):
                registry.write(("" if not text or text.endswith("\n") else "\n") + key + "\n")
                registry.flush()
                os.fsync(registry.fileno())
        return True
    except (OSError, ValueError) as exc:  # ValueError: a registry that is not text
        log.error("audio folder %s: could not add this database to %s (%s); its orphans will not be swept",
                  directory, REGISTRY, exc)
        return False


def _holds_uploads(directory: Path) -> bool:
    """Whether the folder has a file the store makes for an upload (``orphans.SWEEPABLE``)."""
    return any(SWEEPABLE.fullmatch(entry.name) for entry in os.scandir(directory) if entry.is_file())


def registered(directory: Path) -> list[str]:
    """The keys the folder's registry lists (none when it has none). OSError: it could not be read."""
    try:
        with open(directory / REGISTRY, encoding="utf-8") as registry:
            fcntl.flock(registry, fcntl.LOCK_SH)
            return _keys(registry.read())
    except FileNotFoundError:
        return []


def sweep_refusal(keys: list[str], key: str) -> str | None:
    """Why the folder must not be swept for database ``key`` when its registry lists ``keys``; None: it may."""
    if keys == [key]:
        return None
    if UNKNOWN in keys:
        return (f"it held uploads before its {REGISTRY} existed, maybe another database's: once it is known to be "
                f"this database's alone, remove the '{UNKNOWN}' line")
    if key not in keys:
        return f"this database is not in its {REGISTRY}"
    return (f"{len(keys)} databases use this folder (its {REGISTRY}): set a var dir per database "
            "to have orphans swept")


def may_sweep(directory: Path, key: str) -> bool:
    """Whether the folder is this database's alone; when not (or unknown), logs one line saying why."""
    try:
        reason = sweep_refusal(registered(directory), key)
    except (OSError, ValueError) as exc:
        reason = f"could not read its {REGISTRY} ({exc})"
    if reason is None:
        return True
    log.warning("audio orphans in %s: nothing deleted, %s", directory, reason)
    return False


def sweep_if_alone(store: AudioStore, factory: sessionmaker[Session], key: str, grace_s: float) -> int:
    """The orphans deleted (``orphans.sweep_orphans``) when the folder is database ``key``'s alone (``may_sweep``).
    Never raises: a failure is logged. On a native thread under the gevent server (``run_blocking``): its SQLite
    scan and folder listing would otherwise hold every request."""
    def sweep():  # noqa: ANN202
        if not may_sweep(store.directory, key):
            return None
        return sweep_orphans(store, messages_naming(factory), grace_s)

    try:
        result = run_blocking(sweep)
    except Exception:  # noqa: BLE001 - an orphan file is harmless; a server that does not start is not
        log.exception("could not sweep the audio files no message names")
        return 0
    return result.deleted if result else 0
