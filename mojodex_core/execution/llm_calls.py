"""Stores one llm_call row per provider call (label, model, tokens, latency, cost).

``SpooledLLMCallRecorder`` (the platform's) keeps the row off the turn's path: ``record`` appends
it, as one JSON line, to this process's spool file (``llm_call_spool``: the files, their locks and
the replay of a crashed process's rows) and to an in-memory queue, and returns. A background thread
inserts the queued rows in batches every ``flush_interval_s`` or as soon as ``batch_size`` rows
wait (on Postgres one multi-row statement in autocommit; elsewhere one transaction, an
executemany), then deletes the spool files whose rows are all stored. Each row carries a unique
``call_id``; inserts skip ids already stored (ON CONFLICT DO NOTHING), so a row read twice is
stored once. The thread's first act, and every ``rescan_s`` after, replays the spool files of
stopped processes.

A failed flush (database down) keeps the rows queued and spooled, logs one line, and retries with a
backoff; ``close`` flushes what is left, and a row it cannot store stays in the spool for the next
start. ``DbLLMCallRecorder`` is the synchronous variant: one transaction per call.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import uuid
import weakref
from collections import deque
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import autocommit_connection, transaction
from mojodex_core.db.models import LLMCall, UserTaskExecution, utcnow
from mojodex_core.execution.llm_call_spool import LLMCallSpool, SpoolSegment, encode_row, one_line

log = logging.getLogger("mojodex.llm_calls")
_TABLE = LLMCall.__table__
_INSERT_CALL = insert(_TABLE)


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


def _insert_statement(dialect: str):  # noqa: ANN202
    """INSERT that skips rows whose call_id is stored already (None: the dialect has no such clause)."""
    if dialect == "postgresql":
        return postgresql.insert(_TABLE).on_conflict_do_nothing(index_elements=["call_id"])
    if dialect == "sqlite":
        return sqlite.insert(_TABLE).on_conflict_do_nothing(index_elements=["call_id"])
    return None


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
        # Postgres: the batch as one statement that commits itself. An executemany in a transaction
        # (psycopg's pipeline) waited once per row, then sent its COMMIT apart, and under gevent each
        # wait let every other ready greenlet run first: with 50 turns streaming, a batch of 40 rows
        # stayed open for seconds, and its foreign-key locks on the executions held up every turn's
        # final statement (its FOR UPDATE of the execution) until the COMMIT. Its locks now last as
        # long as the statement, and a turn's completion locks the execution FOR NO KEY UPDATE, which
        # neither waits for them nor makes the batch wait. With RETURNING, SQLAlchemy sends an
        # executemany as multi-row INSERTs ("insertmanyvalues", up to 1,000 rows each: a batch).
        self._insert_many = (
            self._insert.returning(_TABLE.c.call_id) if engine.dialect.name == "postgresql" else None
        )
        # Also guards the spool's files (LLMCallSpool is not thread-safe). Re-entrant for the
        # Condition: on a plain Lock its notify yields under gevent, with the lock held (see runner).
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._flush_lock = threading.Lock()  # one flush at a time: the thread's or a reader's
        self._pending: deque[tuple[SpoolSegment | None, dict[str, Any]]] = deque()
        self._first_pending_at = 0.0
        self._failures = 0
        self._retry_at = 0.0
        self._stopping = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._spool = LLMCallSpool(self.spool_dir)
        if start:
            self.start()

    # ------------------------------------------------------------------ the turn's side

    def __call__(self, record) -> None:  # noqa: ANN001 - an LLMCallRecord
        self.record_row(call_row(record))

    def record_row(self, row: dict[str, Any]) -> None:
        """Spools and queues one row (never raises: the LLM call is not to fail for its record)."""
        line = encode_row(row)
        with self._lock:
            if self._closed:
                late = True
            else:
                late = False
                segment = self._spool.append(line)
                self._pending.append((segment, row))
                waiting = len(self._pending)
                if waiting == 1:
                    self._first_pending_at = time.monotonic()
                    self._wake.notify()
                elif waiting == self.batch_size:
                    self._wake.notify()
        if late:  # after close (a turn still running at shutdown): a file of its own, for the next start
            self._spool.write_late(line)

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
            self._spool.seal()  # new rows go to a new file; these files go once their rows are stored
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
                            one_line(exc), len(left), self.spool_dir)
            else:
                log.debug("llm_call flush failed again (%s), attempt %d", one_line(exc), self._failures)
            return False
        if self._failures:
            log.info("llm_call rows stored again after %d failed flush(es)", self._failures)
            self._failures = 0
        return True

    def _release(self, chunk: list[tuple[SpoolSegment | None, dict[str, Any]]]) -> None:
        """The chunk is committed: spool files with no row left to store are deleted (then unlocked)."""
        done: list[SpoolSegment] = []
        with self._lock:
            for segment, _row in chunk:
                if segment is not None and self._spool.settle(segment):
                    done.append(segment)
        for segment in done:
            self._spool.delete(segment)

    def _store(self, rows: list[dict[str, Any]]) -> None:
        """Inserts the rows (on Postgres one statement, elsewhere one transaction), skipping call_ids
        stored already."""
        try:
            self._insert_rows(rows)
        except IntegrityError:
            self._store_one_by_one(rows)

    def _insert_rows(self, rows: list[dict[str, Any]]) -> None:
        if self._insert_many is not None:
            with autocommit_connection(self._engine) as conn:
                conn.execute(self._insert_many, rows).close()  # the stored call_ids are not needed
            return
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
            log.error("llm_call row dropped, refused by the database (%s): %s", one_line(error),
                      encode_row(row).decode().strip())

    # ------------------------------------------------------------------ replay

    def replay_orphans(self) -> int | None:
        """Stores the rows of the spool files whose process is gone, then deletes those files.
        Returns the rows read (stored now or before), or None when the database failed (the
        files stay for the next try)."""
        return self._spool.replay_orphans(self._store_in_chunks, lambda: self._stopping)

    def _store_in_chunks(self, rows: list[dict[str, Any]]) -> None:
        for start in range(0, len(rows), self.max_rows_per_transaction):
            self._store(rows[start:start + self.max_rows_per_transaction])

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
            segments = self._spool.detach()
        self._spool.release(segments)
        _OPEN.discard(self)
        if left:
            log.warning("%d llm_call row(s) not stored at shutdown: kept in spool %s, stored at the next start",
                        left, self.spool_dir)
