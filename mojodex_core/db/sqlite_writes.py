"""SQLite writers of one process take turns on a lock instead of SQLite's busy handler.

SQLite has one writer at a time. A connection that finds the write lock taken sleeps in the
busy handler (1, 2, 5, 10 ... up to 100 ms between tries) and is not woken when the lock is
freed, so under a few concurrent turns the lock goes idle while writers sleep, and whoever
polls at the right moment wins: the p99 of a 20-session order bench was seconds.

The writers of this process queue on a Python lock instead, taken just before the first
statement that makes pysqlite open its transaction (INSERT/UPDATE/DELETE/REPLACE, which
is when SQLite's write lock is taken too) and released right after that transaction's
commit or rollback. A woken writer then finds SQLite's lock free. Readers never take it
(WAL lets them read beside the writer). Other processes (the CLI) still meet the busy
handler, as before; a writer that waits longer than the busy timeout goes on without the
lock and gets SQLite's own answer (so a nested write on another connection of the same
thread behaves as it did, instead of hanging).

The same connection class sends the BEGIN that pysqlite leaves out before a SAVEPOINT, so that a
savepoint opened before any write of its transaction stays inside it (see ``_enter_write``).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any

log = logging.getLogger("mojodex.db")

# SAVEPOINT too: with no transaction open it opens one (after the BEGIN sent for it, below), whose
# first read fixes a snapshot; a writer of this process committing before the savepoint's first
# write would make SQLite refuse that write at once ("database is locked", no busy wait).
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "SAVEPOINT")


def _is_write(sql: str) -> bool:
    return sql.lstrip()[:9].upper().startswith(_WRITES)


def _is_savepoint(sql: str) -> bool:
    return sql.lstrip()[:9].upper() == "SAVEPOINT"


class WriteGate:
    def __init__(self, timeout_s: float) -> None:
        self._lock = threading.Lock()
        self.timeout_s = timeout_s

    def acquire(self) -> bool:
        if self._lock.acquire(timeout=self.timeout_s):
            return True
        log.warning("sqlite write gate not free after %.0f s: writing without it", self.timeout_s)
        return False

    def release(self) -> None:
        self._lock.release()


def gated_connection_class(gate: WriteGate) -> type[sqlite3.Connection]:
    """A pysqlite Connection class (the `factory` connect argument) whose writes pass the gate and
    whose savepoints stay inside a transaction."""

    class GatedCursor(sqlite3.Cursor):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
            self.connection._enter_write(sql)  # type: ignore[attr-defined]
            return super().execute(sql, parameters)

        def executemany(self, sql: str, seq_of_parameters: Any, /) -> sqlite3.Cursor:  # type: ignore[override]
            self.connection._enter_write(sql)  # type: ignore[attr-defined]
            return super().executemany(sql, seq_of_parameters)

    class GatedConnection(sqlite3.Connection):
        _gated = False

        def _enter_write(self, sql: str) -> None:
            if not _is_write(sql):
                return
            if not self._gated:
                self._gated = gate.acquire()
            if not self.in_transaction and _is_savepoint(sql):
                # pysqlite sends BEGIN before INSERT/UPDATE/DELETE/REPLACE only. A SAVEPOINT with no
                # transaction open would open SQLite's transaction itself, and its RELEASE would
                # COMMIT it: what the savepoint wrote would outlive a rollback of its transaction.
                # After this BEGIN, pysqlite's commit() and rollback() end the transaction.
                super().execute("BEGIN")

        def _leave(self) -> None:
            if self._gated:
                self._gated = False
                gate.release()

        def cursor(self, factory: Any = GatedCursor) -> sqlite3.Cursor:  # type: ignore[override]
            return super().cursor(factory)

        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
            return self.cursor().execute(sql, parameters)

        def executemany(self, sql: str, seq_of_parameters: Any, /) -> sqlite3.Cursor:  # type: ignore[override]
            return self.cursor().executemany(sql, seq_of_parameters)

        def commit(self) -> None:
            try:
                super().commit()
            finally:
                self._leave()

        def rollback(self) -> None:
            try:
                super().rollback()
            finally:
                self._leave()

        def close(self) -> None:
            try:
                super().close()
            finally:
                self._leave()

    return GatedConnection
