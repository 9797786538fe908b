"""Stores one llm_call row per provider call (label, model, tokens, latency, cost).

``SpooledLLMCallRecorder`` (the platform's) keeps the row off the turn's path: ``record`` appends
it, as one JSON line, to this process's spool file and to an in-memory queue, and returns. A
background thread inserts the queued rows in batches (one transaction each, an executemany)
every ``flush_interval_s`` or as soon as ``batch_size`` rows wait, then deletes the spool files
whose rows are all stored. Each row carries a unique ``call_id``; inserts skip ids already stored
(ON CONFLICT DO NOTHING), so a row read twice is stored once.

Crash survival: every spool file is held under an exclusive ``flock`` by its process while it
lives; the kernel drops the lock when the process dies, SIGKILL included. A recorder starting
(and every ``rescan_s`` after) replays the spool files it can lock, i.e. those whose process is
gone, then deletes them. A file is written with O_APPEND, one ``write`` per line, no fsync: it
survives the death of the process, not of the machine.

A failed flush (database down) keeps the rows queued and spooled, logs one line, and retries
with a backoff; ``close`` flushes what is left, and a row it cannot store stays in the spool for
the next start. ``DbLLMCallRecorder`` is the synchronous variant: one transaction per call.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import itertools
import json
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import LLMCall, UserTaskExecution, utcnow

log = logging.getLogger("mojodex.llm_calls")
_TABLE = LLMCall.__table__
_INSERT_CALL = insert(_TABLE)
_COLUMNS = frozenset(c.name for c in _TABLE.columns) - {"llm_call_pk"}
_PREFIX = "llm_call."
_SUFFIX = ".jsonl"


def call_row(record: Any, call_id: str | None = None) -> dict[str, Any]:
    """The llm_call row of an ``LLMCallRecord`` (its time is now)."""
    return {
        "call_id": call_id or uuid.uuid4().hex,
        "label": record.label,
        "model": record.model,
        "prompt_tokens": record.prompt_tokens or 0,
        "completion_tokens": record.completion_tokens or 0,
        "latency_ms": record.latency_ms or 0.0,
        "cost": record.cost or 0.0,
        "attempts": getattr(record, "attempts", 1) or 1,
        "status": record.status,
        "error": record.error,
        "user_task_execution_fk": record.user_task_execution_pk,
        "created_at": utcnow(),
    }


class DbLLMCallRecorder:
    """One transaction per call, on the caller's thread (scripts and tools without a platform)."""

    def __init__(self, session_factory: sessionmaker[DbSession]) -> None:
        self._factory = session_factory

    def __call__(self, record) -> None:  # noqa: ANN001 - an LLMCallRecord
        # One Core INSERT on the table: no ORM object and unit of work for a row nobody reads back.
        with transaction(self._factory) as db:
            db.execute(_INSERT_CALL, call_row(record))


def llm_call_spool_dir(var_dir: Path, database_url: str) -> Path:
    """Where a platform spools its llm_call rows: one folder per database (password left out), so
    a var/ shared by platforms of several databases never replays a row into the wrong one."""
    key = make_url(database_url).render_as_string(hide_password=True)
    return Path(var_dir) / "spool" / f"llm_call-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _json_default(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _encode(row: dict[str, Any]) -> bytes:
    return (json.dumps(row, default=_json_default, separators=(",", ":")) + "\n").encode()


def _decode(line: bytes) -> dict[str, Any]:
    data = json.loads(line)
    row = {k: v for k, v in data.items() if k in _COLUMNS}
    if not isinstance(row.get("call_id"), str) or not row.get("label"):
        raise ValueError("not an llm_call row")
    row["created_at"] = datetime.fromisoformat(row["created_at"])
    return row


def _one_line(exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc
    text = (str(cause).strip().splitlines() or [""])[0][:200]
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


def _insert_statement(dialect: str):  # noqa: ANN202
    """INSERT that skips rows whose call_id is stored already (None: the dialect has no such clause)."""
    if dialect == "postgresql":
        return postgresql.insert(_TABLE).on_conflict_do_nothing(index_elements=["call_id"])
    if dialect == "sqlite":
        return sqlite.insert(_TABLE).on_conflict_do_nothing(index_elements=["call_id"])
    return None


class _Segment:
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


_OPEN: weakref.WeakSet[SpooledLLMCallRecorder] = weakref.WeakSet()


@atexit.register
def _close_open_recorders() -> None:
    """A normal exit (gunicorn's worker after SIGTERM, a Celery solo worker) flushes first."""
    for recorder in list(_OPEN):
        try:
            recorder.close(timeout_s=5.0)
        except Exception:  # noqa: BLE001 - exiting anyway; the spool keeps the rows
            log.exception("llm_call recorder: flush at exit failed")


class SpooledLLMCallRecorder:
    """Deferred, batched llm_call writer whose rows survive a crash (module docstring). Thread-safe."""

    def __init__(
        self,
        engine: Engine,
        spool_dir: Path,
        *,
        flush_interval_s: float = 0.2,
        batch_size: int = 100,
        max_rows_per_transaction: int = 1000,
        retry_max_s: float = 30.0,
        rescan_s: float = 60.0,
        start: bool = True,
    ) -> None:
        self._engine = engine
        self.spool_dir = Path(spool_dir)
        self.flush_interval_s = flush_interval_s
        self.batch_size = batch_size
        self.max_rows_per_transaction = max_rows_per_transaction
        self.retry_max_s = retry_max_s
        self.rescan_s = rescan_s
        self._insert = _insert_statement(engine.dialect.name)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._flush_lock = threading.Lock()  # one flush at a time: the thread's or a reader's
        self._pending: deque[tuple[_Segment | None, dict[str, Any]]] = deque()
        self._first_pending_at = 0.0
        self._segment: _Segment | None = None  # the file new rows are appended to
        self._segments: set[_Segment] = set()  # every file of ours still open (and locked)
        self._name = f"{_PREFIX}{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        self._seq = itertools.count(1)
        self._spool_failed = False
        self._failures = 0
        self._retry_at = 0.0
        self._stopping = False
        self._closed = False
        self._thread: threading.Thread | None = None
        try:
            self.spool_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.error("llm_call spool %s cannot be created (%s)", self.spool_dir, _one_line(exc))
        if start:
            self.start()

    # ------------------------------------------------------------------ the turn's side

    def __call__(self, record) -> None:  # noqa: ANN001 - an LLMCallRecord
        self.record_row(call_row(record))

    def record_row(self, row: dict[str, Any]) -> None:
        """Spools and queues one row (never raises: the LLM call is not to fail for its record)."""
        line = _encode(row)
        with self._lock:
            if self._closed:
                late = True
            else:
                late = False
                segment = self._append(line)
                if segment is not None:
                    segment.outstanding += 1
                self._pending.append((segment, row))
                waiting = len(self._pending)
                if waiting == 1:
                    self._first_pending_at = time.monotonic()
                    self._wake.notify()
                elif waiting == self.batch_size:
                    self._wake.notify()
        if late:  # after close (a turn still running at shutdown): a file of its own, for the next start
            self._spool_late(line)

    def _append(self, line: bytes) -> _Segment | None:
        """Writes the line to the current spool file (under the lock); None when spooling fails."""
        try:
            segment = self._segment
            if segment is None:
                path, fd = _create_locked(self.spool_dir, f"{self._name}.{next(self._seq)}{_SUFFIX}")
                segment = self._segment = _Segment(path, fd)
                self._segments.add(segment)
            if os.write(segment.fd, line) != len(line):
                raise OSError("short write (disk full?)")
        except OSError as exc:
            self._segment = None  # a line may be cut short: the next row starts a new file
            if not self._spool_failed:
                self._spool_failed = True
                log.error("llm_call spool %s not writable (%s): rows are kept in memory only until stored",
                          self.spool_dir, _one_line(exc))
            return None
        if self._spool_failed:
            self._spool_failed = False
            log.info("llm_call spool %s writable again", self.spool_dir)
        return segment

    def _spool_late(self, line: bytes) -> None:
        try:
            path, fd = _create_locked(self.spool_dir, f"{self._name}.late{next(self._seq)}{_SUFFIX}")
            try:
                os.write(fd, line)
            finally:
                os.close(fd)  # unlocked: the next recorder to start stores it
        except OSError as exc:
            log.error("llm_call row recorded after close lost (spool %s: %s)", self.spool_dir, _one_line(exc))

    # ------------------------------------------------------------------ writing

    @property
    def pending(self) -> int:
        """Rows recorded but not stored yet."""
        with self._lock:
            return len(self._pending)

    def flush(self) -> bool:
        """Stores every queued row now, waiting for a flush under way; True when none is left.
        Cheap when nothing waits. Readers that need this process's latest rows call it first."""
        with self._flush_lock:
            return self._flush_queued()

    def _flush_queued(self) -> bool:
        with self._lock:
            if not self._pending:
                return True
            taken = list(self._pending)
            self._pending.clear()
            self._segment = None  # new rows go to a new file; these files go once their rows are stored
        stored = 0
        try:
            for start in range(0, len(taken), self.max_rows_per_transaction):
                chunk = taken[start:start + self.max_rows_per_transaction]
                self._store([row for _segment, row in chunk])
                self._release(chunk)
                stored = start + len(chunk)
        except Exception as exc:  # noqa: BLE001 - any failure: the rows wait in the spool
            left = taken[stored:]
            with self._lock:
                self._pending.extendleft(reversed(left))
                delay = min(self.flush_interval_s * 5 * 2 ** min(self._failures, 10), self.retry_max_s)
                self._retry_at = time.monotonic() + delay
                self._wake.notify()  # the thread may be asleep on an empty queue: the retry is its job
            self._failures += 1
            if self._failures == 1:
                log.warning("llm_call rows not stored (%s): %d kept in spool %s, retrying in the background",
                            _one_line(exc), len(left), self.spool_dir)
            else:
                log.debug("llm_call flush failed again (%s), attempt %d", _one_line(exc), self._failures)
            return False
        if self._failures:
            log.info("llm_call rows stored again after %d failed flush(es)", self._failures)
            self._failures = 0
        return True

    def _release(self, chunk: list[tuple[_Segment | None, dict[str, Any]]]) -> None:
        """The chunk is committed: spool files with no row left to store are deleted (then unlocked)."""
        done: list[_Segment] = []
        with self._lock:
            for segment, _row in chunk:
                if segment is None:
                    continue
                segment.outstanding -= 1
                if segment.outstanding == 0 and segment is not self._segment and segment in self._segments:
                    self._segments.discard(segment)
                    done.append(segment)
        for segment in done:
            _unlink(segment.path)
            os.close(segment.fd)

    def _store(self, rows: list[dict[str, Any]]) -> None:
        """Inserts the rows in one transaction, skipping call_ids stored already."""
        try:
            self._insert_rows(rows)
        except IntegrityError:
            self._store_one_by_one(rows)

    def _insert_rows(self, rows: list[dict[str, Any]]) -> None:
        with self._engine.begin() as conn:
            if self._insert is not None:
                conn.execute(self._insert, rows)
                return
            ids = [r["call_id"] for r in rows]
            known = set(conn.scalars(select(_TABLE.c.call_id).where(_TABLE.c.call_id.in_(ids))))
            fresh = [r for r in rows if r["call_id"] not in known]
            if fresh:
                conn.execute(_INSERT_CALL, fresh)

    def _store_one_by_one(self, rows: list[dict[str, Any]]) -> None:
        """A batch broke a constraint: each row alone, so one bad row does not hold the others
        back forever. A row naming an execution deleted since is stored without it (as the
        foreign key's ON DELETE SET NULL would have done); a row still refused is dropped, logged."""
        for row in rows:
            try:
                self._insert_rows([row])
                continue
            except IntegrityError as exc:
                error = exc
            if row.get("user_task_execution_fk") is not None:
                with self._engine.connect() as conn:
                    exists = conn.scalar(select(UserTaskExecution.user_task_execution_pk).where(
                        UserTaskExecution.user_task_execution_pk == row["user_task_execution_fk"]))
                if exists is None:
                    try:
                        self._insert_rows([{**row, "user_task_execution_fk": None}])
                        continue
                    except IntegrityError as exc:
                        error = exc
            log.error("llm_call row dropped, refused by the database (%s): %s", _one_line(error),
                      _encode(row).decode().strip())

    # ------------------------------------------------------------------ replay

    def replay_orphans(self) -> int | None:
        """Stores the rows of the spool files whose process is gone, then deletes those files.
        Returns the rows read (stored now or before), or None when the database failed (the
        files stay for the next try)."""
        try:
            names = sorted(os.listdir(self.spool_dir))
        except FileNotFoundError:
            return 0
        except OSError as exc:
            log.error("llm_call spool %s unreadable (%s)", self.spool_dir, _one_line(exc))
            return 0
        total = 0
        for name in names:
            if self._stopping:
                break
            path = self.spool_dir / name
            if name.startswith(".") and name.endswith(".tmp"):
                self._drop_abandoned_tmp(path)
                continue
            if not (name.startswith(_PREFIX) and name.endswith(_SUFFIX)):
                continue
            try:
                read = self._replay_file(path)
            except Exception as exc:  # noqa: BLE001 - the database or the file: try again later
                log.warning("llm_call spool %s not replayed (%s); trying again later", path.name, _one_line(exc))
                return None
            if read is not None:
                total += read
        return total

    def _replay_file(self, path: Path) -> int | None:
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
            for start in range(0, len(rows), self.max_rows_per_transaction):
                self._store(rows[start:start + self.max_rows_per_transaction])
            _unlink(path)
            log.info("llm_call spool %s of a stopped process replayed: %d row(s)%s", path.name, len(rows),
                     f", {bad} unreadable line(s) skipped" if bad else "")
            return len(rows)
        finally:
            os.close(fd)

    def _drop_abandoned_tmp(self, path: Path) -> None:
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

    # ------------------------------------------------------------------ the background thread

    def start(self) -> None:
        """Starts the writer thread; its first act replays the spool files of stopped processes."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="llm-call-writer", daemon=True)
        self._thread.start()
        _OPEN.add(self)

    def _run(self) -> None:
        next_scan = 0.0
        while True:
            with self._wake:
                while not self._stopping:
                    now = time.monotonic()
                    if now >= next_scan or self._flush_due(now):
                        break
                    deadline = next_scan
                    if self._pending:
                        deadline = min(deadline, max(self._retry_at, self._first_pending_at + self.flush_interval_s))
                    self._wake.wait(max(0.0, deadline - now))
                if self._stopping:
                    return
            if time.monotonic() >= next_scan:
                replayed = self.replay_orphans()
                delay = self.rescan_s if replayed is not None else min(self.retry_max_s, self.rescan_s)
                next_scan = time.monotonic() + delay
            with self._lock:
                due = self._flush_due(time.monotonic())
            if due:
                self.flush()

    def _flush_due(self, now: float) -> bool:
        """Under the lock: rows wait, no retry pause, and the batch is full or the oldest is old enough."""
        if not self._pending or now < self._retry_at:
            return False
        return len(self._pending) >= self.batch_size or now - self._first_pending_at >= self.flush_interval_s

    def close(self, timeout_s: float = 10.0) -> None:
        """Stops the thread and stores what is queued; rows it cannot store stay in the spool
        (their files unlocked), for the next start. Rows recorded later get files of their own."""
        with self._wake:
            if self._closed or self._stopping:
                return
            self._stopping = True
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)
        self.flush()
        with self._lock:
            self._closed = True
            left = len(self._pending)
            self._pending.clear()
            segments, self._segments, self._segment = self._segments, set(), None
        for segment in segments:
            if segment.outstanding == 0:
                _unlink(segment.path)
            os.close(segment.fd)
        _OPEN.discard(self)
        if left:
            log.warning("%d llm_call row(s) not stored at shutdown: kept in spool %s, stored at the next start",
                        left, self.spool_dir)
