"""Audio files no message names, deleted at start-up once older than a grace period.

An upload's file is written before its message's row is committed (``mojodex_core.audio.store``): a
process killed between the two (or while staging the file) leaves a file no row names
(``data.audio.file``), which nothing would ever read or remove. At start-up (embedded:
``backend.app.resume_unfinished_turns``; distributed: the beat's ``mojodex.resume``) the sweep
deletes those older than the grace (``MOJODEX_AUDIO_ORPHAN_GRACE_S``, 1 h by default), so an upload
in flight is never touched.

* ``orphans``: which files are orphans, given their names and ages and the names rows hold (pure);
* ``messages_naming``: which of some names message rows hold, read from the database in one statement;
* ``sweep_orphans``: reads the folder, asks once which of the old candidates rows name (not at all when
  there is none), deletes the others and logs one line. A failure (no folder, the database down) is
  logged, never raised.

Only names the store makes are candidates: an upload's (``<digest>_<random>.<ext>``, and
``<digest>.<ext>`` from before names had their random part) and a staged file (``.<random>.part``,
and ``<name>.part`` from before staged files had names of their own). Voice replies
(``voice_<digest>.mp3``) are named by no row but are kept to be read again; any other file is left
alone.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from mojodex_core.audio.store import AudioStore
from mojodex_core.db import transaction
from mojodex_core.db.models import Message

log = logging.getLogger("mojodex.audio")

DEFAULT_GRACE_S = 3600.0
ROWS_PER_FETCH = 5000  # the named files are streamed, never all held at once
_UPLOAD = r"[0-9a-f]{40}(?:_[0-9a-f]{32})?\.[a-z0-9]{1,8}"
SWEEPABLE = re.compile(rf"{_UPLOAD}|\.[0-9a-f]{{32}}\.part|(?:voice_)?{_UPLOAD}\.part")

NamesLookup = Callable[[Collection[str]], set[str]]


@dataclass(frozen=True)
class StoredFile:
    name: str
    age_s: float


@dataclass(frozen=True)
class SweepResult:
    looked_at: int
    deleted: int

    @property
    def kept(self) -> int:
        return self.looked_at - self.deleted


def candidates(files: Iterable[StoredFile], grace_s: float) -> list[str]:
    """Files the store made for an upload (or staged) older than the grace: orphans unless a row names them."""
    return [f.name for f in files if f.age_s > grace_s and SWEEPABLE.fullmatch(f.name)]


def orphans(files: Iterable[StoredFile], named: set[str], grace_s: float) -> list[str]:
    """The files to delete: candidates (``candidates``) no message row names."""
    return [name for name in candidates(files, grace_s) if name not in named]


def messages_naming(session_factory: sessionmaker[Session]) -> NamesLookup:
    """Which of the given names a message's ``data.audio.file`` holds (SQLite's JSON_EXTRACT, Postgres' #>>).

    One statement reads the file every message that has one names, streamed, and keeps those asked
    about: no index serves a look-up by name, so each statement scans the message table, and asking
    by batches of names scanned it once a batch (a start-up of a long-lived deployment waited seconds)."""
    file = Message.data[("audio", "file")].as_string()

    def lookup(names: Collection[str]) -> set[str]:
        wanted = set(names)
        with transaction(session_factory) as db:
            named = db.scalars(select(file).where(file.is_not(None)).execution_options(yield_per=ROWS_PER_FETCH))
            return {name for name in named if name in wanted}

    return lookup


def sweep_orphans(store: AudioStore, named_among: NamesLookup, grace_s: float = DEFAULT_GRACE_S) -> SweepResult | None:
    """Deletes the folder's orphans (``orphans``); None when it could not tell which they are."""
    try:
        now = time.time()
        files = [StoredFile(name, now - written) for name, written in store.files()]
    except FileNotFoundError:
        log.info("audio orphans: no folder %s yet, nothing to look at", store.directory)
        return SweepResult(0, 0)
    except OSError as exc:
        log.error("audio orphans: could not list %s (%s); nothing deleted", store.directory, exc)
        return None
    old = candidates(files, grace_s)
    try:
        named = named_among(old) if old else set()
    except (SQLAlchemyError, OSError) as exc:  # the database down: no file can be told an orphan
        log.error("audio orphans: could not read which files messages name (%s: %s); nothing deleted",
                  type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        return None
    deleted = 0
    for name in orphans(files, named, grace_s):
        try:
            deleted += store.remove_orphan(name)
        except OSError as exc:
            log.warning("audio orphans: could not delete %s (%s)", name, exc)
    result = SweepResult(len(files), deleted)
    log.info("audio orphans in %s: %d file(s) looked at, %d orphan(s) deleted, %d kept (grace %g s)",
             store.directory, result.looked_at, result.deleted, result.kept, grace_s)
    return result
