"""The on-disk spool of llm_call rows: one JSON line per row, in files of this process, replayed
into the database by the next process when this one dies before storing them.

``LLMCallSpool`` is one process's side of a spool folder (``llm_call_spool_dir``): it appends each
row, as one line, to the current spool file (``SpoolSegment``), counts the rows of each file not
stored yet, deletes a file once none is left, and replays the files of stopped processes.
Storing rows is the caller's: the recorder (``llm_calls.SpooledLLMCallRecorder``) passes its
store to ``replay_orphans``, and calls the other methods under its own lock.

Crash survival: every spool file is held under an exclusive ``flock`` by its process while it
lives; the kernel drops the lock when the process dies, SIGKILL included. A recorder starting
(and every ``rescan_s`` after) replays the spool files it can lock, i.e. those whose process is
gone, then deletes them. A file is written with O_APPEND, one ``write`` per line, no fsync: it
survives the death of the process, not of the machine.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from mojodex_core.db import database_key
from mojodex_core.db.models import LLMCall

log = logging.getLogger("mojodex.llm_calls")
_COLUMNS = frozenset(c.name for c in LLMCall.__table__.columns) - {"llm_call_pk"}
# Every row carries every column: a batch takes its columns from its first row, so a line of a
# release that had not some column yet takes its default (a scalar one, or NULL).
_DEFAULTS = {
    c.name: c.default.arg if c.default is not None and c.default.is_scalar else None
    for c in LLMCall.__table__.columns if c.name in _COLUMNS
}
_PREFIX = "llm_call."
_SUFFIX = ".jsonl"


def llm_call_spool_dir(var_dir: Path, database_url: str) -> Path:
    """Where a platform spools its llm_call rows: one folder per database (password left out), so
    a var/ shared by platforms of several databases never replays a row into the wrong one."""
    return Path(var_dir) / "spool" / f"llm_call-{database_key(database_url)}"


def _json_default(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def encode_row(row: dict[str, Any]) -> bytes:
    """An llm_call row as its spool line."""
    return (json.dumps(row, default=_json_default, separators=(",", ":")) + "\n").encode()


def _decode(line: bytes) -> dict[str, Any]:
    data = json.loads(line)
    row = {**_DEFAULTS, **{k: v for k, v in data.items() if k in _COLUMNS}}
    if not isinstance(row.get("call_id"), str) or not row.get("label"):
        raise ValueError("not an llm_call row")
    row["created_at"] = datetime.fromisoformat(row["created_at"])
    return row


def one_line(exc: BaseException) -> str:
    """An exception as a short log line (the database driver's error when there is one)."""
    cause = getattr(exc, "orig", None) or exc
    text = (str(cause).strip().splitlines() or [""])[0][:200]
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


class SpoolSegment:
    """One spool file: open and flock-ed by this process until its rows are stored."""

    __slots__ = ("path", "fd", "outstanding")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.outstanding = 0


def _create_locked(directory: Path, name: str) -> tuple[Path, int]:
    """A new spool file, already locked when it appears under its name (a replayer scanning the
    folder never sees it unlocked): created under a temporary name, locked, then renamed."""
    path = directory / name
    tmp = directory / f".{name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(tmp, path)
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    return path, fd


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class LLMCallSpool:
    """This process's spool files in one folder (module docstring). Not thread-safe: ``append``,
    ``seal``, ``settle`` and ``detach`` are called under the recorder's lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._name = f"{_PREFIX}{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        self._seq = itertools.count(1)
        self._segment: SpoolSegment | None = None  # the file new rows are appended to
        self._segments: set[SpoolSegment] = set()  # every file of ours still open (and locked)
        self._failed = False
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.error("llm_call spool %s cannot be created (%s)", self.directory, one_line(exc))

    # ------------------------------------------------------------------ writing

    def append(self, line: bytes) -> SpoolSegment | None:
        """Writes the line to the current spool file and counts it there as not stored; None when
        spooling fails (the row is then kept in memory only)."""
        try:
            segment = self._segment
            if segment is None:
                path, fd = _create_locked(self.directory, f"{self._name}.{next(self._seq)}{_SUFFIX}")
                segment = self._segment = SpoolSegment(path, fd)
                self._segments.add(segment)
            if os.write(segment.fd, line) != len(line):
                raise OSError("short write (disk full?)")
        except OSError as exc:
            self._segment = None  # a line may be cut short: the next row starts a new file
            if not self._failed:
                self._failed = True
                log.error("llm_call spool %s not writable (%s): rows are kept in memory only until stored",
                          self.directory, one_line(exc))
            return None
        if self._failed:
            self._failed = False
            log.info("llm_call spool %s writable again", self.directory)
        segment.outstanding += 1
        return segment

    def write_late(self, line: bytes) -> None:
        """A row recorded after close: a file of its own, unlocked at once for the next start."""
        try:
            path, fd = _create_locked(self.directory, f"{self._name}.late{next(self._seq)}{_SUFFIX}")
            try:
                os.write(fd, line)
            finally:
                os.close(fd)  # unlocked: the next recorder to start stores it
        except OSError as exc:
            log.error("llm_call row recorded after close lost (spool %s: %s)", self.directory, one_line(exc))

    def seal(self) -> None:
        """New rows go to a new file; the current one goes once its rows are stored."""
        self._segment = None

    # ------------------------------------------------------------------ rows stored

    def settle(self, segment: SpoolSegment) -> bool:
        """One row of the segment is stored; True when the segment is done (sealed, no row left):
        it is then no longer ours, and the caller deletes it with ``delete`` (outside its lock)."""
        segment.outstanding -= 1
        if segment.outstanding == 0 and segment is not self._segment and segment in self._segments:
            self._segments.discard(segment)
            return True
        return False

    @staticmethod
    def delete(segment: SpoolSegment) -> None:
        """Deletes a done segment's file, then unlocks it."""
        _unlink(segment.path)
        os.close(segment.fd)

    def detach(self) -> set[SpoolSegment]:
        """Every file of ours still open, which this spool forgets (at close): see ``release``."""
        segments, self._segments, self._segment = self._segments, set(), None
        return segments

    @staticmethod
    def release(segments: set[SpoolSegment]) -> None:
        """Closes (unlocks) the detached files, deleting those with no row left to store: the others
        stay for the next start."""
        for segment in segments:
            if segment.outstanding == 0:
                _unlink(segment.path)
            os.close(segment.fd)

    # ------------------------------------------------------------------ replay

    def replay_orphans(self, store: Callable[[list[dict[str, Any]]], None],
                       stopping: Callable[[], bool]) -> int | None:
        """Stores (through ``store``, which raises when it cannot) the rows of the spool files whose
        process is gone, then deletes those files; stops early once ``stopping()``. Returns the rows
        read (stored now or before), or None when the database failed (the files stay for the next
        try)."""
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return 0
        except OSError as exc:
            log.error("llm_call spool %s unreadable (%s)", self.directory, one_line(exc))
            return 0
        total = 0
        for name in names:
            if stopping():
                break
            path = self.directory / name
            if name.startswith(".") and name.endswith(".tmp"):
                self._drop_abandoned_tmp(path)
                continue
            if not (name.startswith(_PREFIX) and name.endswith(_SUFFIX)):
                continue
            try:
                read = self._replay_file(path, store)
            except Exception as exc:  # noqa: BLE001 - the database or the file: try again later
                log.warning("llm_call spool %s not replayed (%s); trying again later", path.name, one_line(exc))
                return None
            if read is not None:
                total += read
        return total

    @staticmethod
    def _replay_file(path: Path, store: Callable[[list[dict[str, Any]]], None]) -> int | None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None  # replayed by another process meanwhile
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # its process lives (or another process is replaying it)
            if os.fstat(fd).st_nlink == 0:
                return None  # replayed and deleted between our listing and our lock
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
            rows, bad = [], 0
            for line in data.splitlines():
                if not line.strip():
                    continue
                try:
                    rows.append(_decode(line))
                except (ValueError, TypeError, KeyError):
                    bad += 1  # a line cut short by the crash
            store(rows)
            _unlink(path)
            log.info("llm_call spool %s of a stopped process replayed: %d row(s)%s", path.name, len(rows),
                     f", {bad} unreadable line(s) skipped" if bad else "")
            return len(rows)
        finally:
            os.close(fd)

    @staticmethod
    def _drop_abandoned_tmp(path: Path) -> None:
        """A spool file its process died creating (before its first row): empty, deleted once unlocked."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _unlink(path)
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
