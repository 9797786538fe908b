"""The deferred llm_call writer: batches, close, crash replay (exactly once), database outages.

On the suite's database (SQLite, or Postgres with TEST_DATABASE_URL); each test's rows carry a
label of their own.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest
from sqlalchemy import create_engine, event, func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from backend.context import build_platform
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.models import LLMCall
from mojodex_core.execution.llm_call_spool import llm_call_spool_dir
from mojodex_core.execution.llm_calls import SpooledLLMCallRecorder
from mojodex_core.llm import LLMCallRecord
from tests.support.live import live_settings
from tests.support.tcp_proxy import TcpProxy
from tests.unit._rows import execution_pk

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def label() -> str:
    return f"SPOOL_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def recorders() -> Iterator[list[SpooledLLMCallRecorder]]:
    """Recorders a test makes, closed after it whatever happens."""
    made: list[SpooledLLMCallRecorder] = []
    yield made
    for recorder in made:
        recorder.close(timeout_s=2)


def call(label: str, i: int = 0, **changes: object) -> LLMCallRecord:
    record = LLMCallRecord(
        label=label, model="gpt-4o-mini", prompt_tokens=100 + i, completion_tokens=10 + i, latency_ms=12.5 + i,
        cost=0.0001 * (i + 1), user_task_execution_pk=None, attempts=1, status="ok",
    )
    return dataclasses.replace(record, **changes)


def stored(engine: Engine, label: str) -> list[LLMCall]:
    with make_session_factory(engine)() as db:
        rows = list(db.scalars(select(LLMCall).where(LLMCall.label == label).order_by(LLMCall.llm_call_pk)))
        db.expunge_all()
        return rows


def count(engine: Engine, label: str) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(LLMCall).where(LLMCall.label == label))


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def spool_lines(spool: Path) -> list[dict]:
    paths = sorted(spool.glob("llm_call.*.jsonl"))
    return [json.loads(line) for path in paths for line in path.read_text().splitlines()]


@contextmanager
def inserts(engine: Engine) -> Iterator[list[str]]:
    """The llm_call INSERTs the engine sends during the block, each as "one" (a statement with one
    set of parameters, of one row or of several) or "many" (a DB-API executemany: a statement per row)."""
    sent: list[str] = []

    def on_execute(_conn, _cursor, statement, params, _context, _executemany) -> None:  # noqa: ANN001
        if statement.startswith("INSERT INTO llm_call"):
            sent.append("many" if isinstance(params, list) else "one")

    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)


@contextmanager
def commits(engine: Engine) -> Iterator[list[int]]:
    """Counts the engine's committed transactions during the block (in counter[0])."""
    counter = [0]

    def on_commit(_conn) -> None:  # noqa: ANN001
        counter[0] += 1

    event.listen(engine, "commit", on_commit)
    try:
        yield counter
    finally:
        event.remove(engine, "commit", on_commit)


# ------------------------------------------------------------------ batching


def test_records_cost_no_transaction_and_are_stored_in_one_batch_with_every_field(
    engine, label, tmp_path, recorders, is_postgres
):
    with transaction(make_session_factory(engine)) as db:
        execution = execution_pk(db)
    recorder = SpooledLLMCallRecorder(engine, tmp_path, start=False)
    recorders.append(recorder)
    records = [call(label, i, user_task_execution_pk=execution if i % 2 else None) for i in range(249)]
    records.append(call(label, 249, status="error", attempts=3, error="The assistant is unavailable.\n[é 500]"))
    with commits(engine) as transactions, inserts(engine) as sent:
        for record in records:
            recorder(record)
        # On the turn's side: a line in the spool and a queued row, no database at all.
        assert transactions[0] == 0 and count(engine, label) == 0
        lines = spool_lines(tmp_path)
        assert [line["prompt_tokens"] for line in lines] == [r.prompt_tokens for r in records]
        assert len({line["call_id"] for line in lines}) == 250

        recorder.start()  # 250 rows wait, more than a batch: stored at once
        wait_until(lambda: recorder.pending == 0 and count(engine, label) == 250)
        wait_until(lambda: not list(tmp_path.iterdir()))  # the flushed spool file is deleted
    # Postgres: one multi-row INSERT in autocommit; SQLite: an executemany in one transaction.
    assert (sent, transactions[0]) == ((["one"], 0) if is_postgres else (["many"], 1))
    rows = stored(engine, label)
    for record, row, line in zip(records, rows, lines, strict=True):
        assert (row.model, row.prompt_tokens, row.completion_tokens, row.status, row.attempts, row.error) == (
            record.model, record.prompt_tokens, record.completion_tokens, record.status, record.attempts,
            record.error,
        )
        assert row.latency_ms == pytest.approx(record.latency_ms) and row.cost == pytest.approx(record.cost)
        assert row.user_task_execution_fk == record.user_task_execution_pk
        assert row.call_id == line["call_id"] and row.created_at is not None
    assert rows[-1].error == "The assistant is unavailable.\n[é 500]"


def test_a_stored_batch_holds_no_lock_on_the_executions_it_names(engine, label, tmp_path, recorders, is_postgres):
    # was: an executemany in one transaction, one round trip per row; under gevent each round trip
    # let every other ready greenlet run first, so with 50 turns streaming a batch stayed open for
    # seconds, and its foreign-key locks held up the final statement (FOR UPDATE of the execution)
    # of every turn it named, up to 3.3 s in the bench, until its COMMIT
    if not is_postgres:
        pytest.skip("row locks: SQLite writes hold the whole database, in-process, without a wait")
    with transaction(make_session_factory(engine)) as db:
        execution = execution_pk(db)
    recorder = SpooledLLMCallRecorder(engine, tmp_path, start=False)
    recorders.append(recorder)
    seen: list[str] = []

    def answer_meanwhile(_conn, _cursor, statement, *_rest) -> None:  # noqa: ANN001
        if not statement.startswith("INSERT INTO llm_call"):
            return
        with engine.connect() as other:  # a turn's final statement, once the rows are sent
            try:
                other.execute(text("SELECT 1 FROM user_task_execution WHERE user_task_execution_pk = :pk "
                                   "FOR UPDATE NOWAIT"), {"pk": execution})
                seen.append("free")
            except OperationalError:
                seen.append("locked")
            other.rollback()

    event.listen(engine, "after_cursor_execute", answer_meanwhile)
    try:
        for i in range(3):
            recorder(call(label, i, user_task_execution_pk=execution))
        assert recorder.flush()
    finally:
        event.remove(engine, "after_cursor_execute", answer_meanwhile)
    assert seen == ["free"] and count(engine, label) == 3


def test_a_few_rows_are_stored_within_the_flush_interval(engine, label, tmp_path, recorders):
    recorder = SpooledLLMCallRecorder(engine, tmp_path, flush_interval_s=0.2)
    recorders.append(recorder)
    started = time.monotonic()
    for i in range(3):
        recorder(call(label, i))
    wait_until(lambda: count(engine, label) == 3, timeout=5)
    assert time.monotonic() - started < 2.0
    wait_until(lambda: not list(tmp_path.glob("llm_call.*")))


def test_flush_stores_the_queued_rows_at_once_and_costs_nothing_when_none_wait(engine, label, tmp_path, recorders):
    recorder = SpooledLLMCallRecorder(engine, tmp_path, flush_interval_s=3600)
    recorders.append(recorder)
    with inserts(engine) as sent:
        assert recorder.flush() is True and sent == []
        recorder(call(label))
        assert recorder.flush() is True
        assert len(sent) == 1
    assert count(engine, label) == 1


# ------------------------------------------------------------------ shutdown


def test_close_stores_every_queued_row_and_leaves_no_spool(engine, label, tmp_path):
    recorder = SpooledLLMCallRecorder(engine, tmp_path, flush_interval_s=3600)
    for i in range(40):
        recorder(call(label, i))
    assert count(engine, label) == 0
    recorder.close()
    assert count(engine, label) == 40
    assert list(tmp_path.iterdir()) == []
    recorder(call(label, 99))  # a turn still running at shutdown: a spool file of its own
    late = SpooledLLMCallRecorder(engine, tmp_path)  # the next start stores it
    try:
        wait_until(lambda: count(engine, label) == 41)
    finally:
        late.close()
    assert list(tmp_path.iterdir()) == []


def test_a_database_keeps_the_name_of_its_spool_folder():
    # The folders earlier releases wrote must still be replayed: the key (mojodex_core.db.database_key,
    # shared with the audio uploads' folder) is the URL without its password.
    url = "postgresql+psycopg://mojodex:secret@postgres:5432/mojodex"
    assert llm_call_spool_dir(Path("var"), url) == Path("var/spool/llm_call-db20b0523f5a")
    assert llm_call_spool_dir(Path("var"), url.replace("secret", "other")) == Path("var/spool/llm_call-db20b0523f5a")


def test_platform_close_stores_queued_rows_and_start_up_replays_a_stopped_process_spool(
    database_url, engine, label, tmp_path
):
    settings = dataclasses.replace(live_settings(database_url, None), var_dir=tmp_path)
    spool = llm_call_spool_dir(tmp_path, database_url)
    platform = build_platform(settings)
    assert platform.llm_calls is not None and platform.llm_calls.spool_dir == spool
    platform.llm_calls.flush_interval_s = 3600
    platform.llm_calls(call(label, 1))
    platform.close()
    assert count(engine, label) == 1

    # A spool file left by a process killed before its flush, in this database's folder.
    row = {"call_id": uuid.uuid4().hex, "label": label, "model": "m", "prompt_tokens": 5, "completion_tokens": 6,
           "latency_ms": 7.0, "cost": 0.5, "attempts": 2, "status": "error", "error": "boom",
           "user_task_execution_fk": None, "created_at": "2026-01-02T03:04:05.123456+00:00"}
    (spool / "llm_call.otherhost.4242.deadbeef.1.jsonl").write_text(json.dumps(row) + "\n")
    platform = build_platform(settings)
    try:
        wait_until(lambda: count(engine, label) == 2)
    finally:
        platform.close()
    replayed = stored(engine, label)[1]
    assert (replayed.call_id, replayed.attempts, replayed.status, replayed.error, replayed.cost) == (
        row["call_id"], 2, "error", "boom", 0.5)
    assert replayed.created_at.replace(tzinfo=None).isoformat() == "2026-01-02T03:04:05.123456"
    assert list(spool.iterdir()) == []


def test_a_process_stopped_by_sigterm_stores_its_rows_on_the_way_out(database_url, engine, label, tmp_path):
    """SIGTERM as gunicorn's worker takes it (a normal exit): the rows are stored before the process
    ends, through the recorder's atexit hook, and no spool is left for a replay."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.support.llm_call_spool_child", database_url, str(tmp_path), label, "6",
         "exit-on-sigterm"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout.readline().strip() == "RECORDED"
        assert count(engine, label) == 0
        child.send_signal(signal.SIGTERM)
        assert child.wait(30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()
    assert count(engine, label) == 6
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ crash


def test_rows_of_a_killed_process_are_replayed_once_and_a_live_process_spool_is_left_alone(
    database_url, engine, label, tmp_path
):
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.support.llm_call_spool_child", database_url, str(tmp_path), label, "7"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout.readline().strip() == "RECORDED"
        [child_spool] = tmp_path.glob("llm_call.*.jsonl")
        assert f".{child.pid}." in child_spool.name

        # The child lives: its spool is its own, whoever starts meanwhile.
        neighbour = SpooledLLMCallRecorder(engine, tmp_path, start=False)
        assert neighbour.replay_orphans() == 0
        neighbour.close()
        assert child_spool.exists() and len(child_spool.read_text().splitlines()) == 7
        assert count(engine, label) == 0

        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()
    assert child_spool.exists() and count(engine, label) == 0, "killed before any flush"
    saved = child_spool.read_bytes()

    restarted = SpooledLLMCallRecorder(engine, tmp_path)  # a new process starts: replays at once
    try:
        wait_until(lambda: count(engine, label) == 7)
        wait_until(lambda: not child_spool.exists())
        assert restarted.replay_orphans() == 0  # nothing left to replay
    finally:
        restarted.close()
    assert sorted(r.prompt_tokens for r in stored(engine, label)) == list(range(7))

    # The same file read again (a crash after the commit, before the delete): nothing is added.
    child_spool.write_bytes(saved)
    again = SpooledLLMCallRecorder(engine, tmp_path, start=False)
    try:
        assert again.replay_orphans() == 7
    finally:
        again.close()
    assert count(engine, label) == 7
    assert not child_spool.exists()


def test_a_live_recorder_of_the_same_process_keeps_its_spool(engine, label, tmp_path):
    """Two platforms of one process on one database (tests, tools) share the folder, not the files."""
    first = SpooledLLMCallRecorder(engine, tmp_path, start=False)
    second = SpooledLLMCallRecorder(engine, tmp_path, start=False)
    try:
        first(call(label, 0))
        assert second.replay_orphans() == 0
        assert count(engine, label) == 0 and first.pending == 1
    finally:
        second.close()
        first.close()
    assert count(engine, label) == 1


def test_a_line_cut_short_by_the_crash_is_skipped_and_the_rest_stored(engine, label, tmp_path):
    lines = [json.dumps({"call_id": uuid.uuid4().hex, "label": label, "model": "m", "prompt_tokens": i,
                         "completion_tokens": 0, "latency_ms": 1.0, "cost": 0.0, "attempts": 1, "status": "ok",
                         "error": None, "user_task_execution_fk": None,
                         "created_at": "2026-01-02T03:04:05+00:00"}) for i in range(3)]
    (tmp_path / "llm_call.h.1.x.1.jsonl").write_text("\n".join(lines) + "\n" + lines[0][:40])
    (tmp_path / ".llm_call.h.1.x.2.jsonl.tmp").write_text("")  # died creating its next file
    recorder = SpooledLLMCallRecorder(engine, tmp_path, start=False)
    try:
        assert recorder.replay_orphans() == 3
    finally:
        recorder.close()
    assert count(engine, label) == 3
    assert list(tmp_path.iterdir()) == []


def test_a_line_of_another_release_lacking_a_column_is_stored_with_its_default(engine, label, tmp_path):
    # was: a batch takes its columns from its first row, so a line without one of them (written by a
    # release before that column existed) failed the whole batch, at every retry, forever
    full = {"call_id": uuid.uuid4().hex, "label": label, "model": "m", "prompt_tokens": 1, "completion_tokens": 0,
            "latency_ms": 1.0, "cost": 0.0, "attempts": 2, "status": "error", "error": "boom",
            "user_task_execution_fk": None, "created_at": "2026-01-02T03:04:05+00:00"}
    older = {k: v for k, v in full.items() if k not in ("attempts", "status", "error")}
    older["call_id"] = uuid.uuid4().hex
    (tmp_path / "llm_call.h.1.x.1.jsonl").write_text(json.dumps(full) + "\n" + json.dumps(older) + "\n")
    recorder = SpooledLLMCallRecorder(engine, tmp_path, start=False)
    try:
        assert recorder.replay_orphans() == 2
    finally:
        recorder.close()
    rows = {row.call_id: row for row in stored(engine, label)}
    assert (rows[full["call_id"]].attempts, rows[full["call_id"]].status) == (2, "error")
    assert (rows[older["call_id"]].attempts, rows[older["call_id"]].status, rows[older["call_id"]].error) == (
        1, "ok", None)
    assert list(tmp_path.iterdir()) == []


def test_a_row_naming_a_deleted_execution_is_stored_without_it_and_holds_no_other_back(
    engine, label, tmp_path
):
    recorder = SpooledLLMCallRecorder(engine, tmp_path, flush_interval_s=3600)
    try:
        recorder(call(label, 0))
        recorder(call(label, 1, user_task_execution_pk=2_000_000_000))  # no such execution
        recorder(call(label, 2))
        assert recorder.flush() is True
    finally:
        recorder.close()
    rows = stored(engine, label)
    assert [r.prompt_tokens for r in rows] == [100, 101, 102]
    assert all(r.user_task_execution_fk is None for r in rows)


# ------------------------------------------------------------------ database down


@contextmanager
def outage(database_url: str) -> Iterator[tuple[Engine, Callable[[], None], Callable[[], None]]]:
    """An engine on the suite's database, and cut()/restore() making it unusable and back.

    Postgres: through a TCP proxy that drops and refuses connections. SQLite: another connection
    holds the write lock (a backup, the CLI) and the engine's busy timeout is short."""
    if database_url.startswith("postgresql"):
        proxy, url = TcpProxy.for_url(database_url, 5432)
        proxy.start()
        engine = make_engine(url)
        try:
            yield engine, proxy.cut, proxy.restore
        finally:
            engine.dispose()
            proxy.close()
        return
    path = database_url.split("///", 1)[1]
    engine = create_engine(database_url, connect_args={"timeout": 0.1, "check_same_thread": False})
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def cut() -> None:
        holder.execute("BEGIN EXCLUSIVE")

    def restore() -> None:
        holder.execute("COMMIT")

    try:
        yield engine, cut, restore
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
        engine.dispose()


def test_rows_wait_in_the_spool_while_the_database_is_down_and_are_stored_once_it_is_back(
    database_url, engine, label, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG, logger="mojodex.llm_calls")
    with outage(database_url) as (down_engine, cut, restore):
        recorder = SpooledLLMCallRecorder(down_engine, tmp_path, flush_interval_s=0.05, retry_max_s=0.3)
        try:
            wait_until(lambda: recorder._thread is not None)  # noqa: SLF001 - started
            cut()
            for i in range(5):
                recorder(call(label, i))
            assert recorder.flush() is False  # a reader's flush: no exception either
            time.sleep(1.0)  # several background attempts
            assert recorder.pending == 5
            assert len(spool_lines(tmp_path)) == 5
            for i in range(5, 8):
                recorder(call(label, i))  # recording goes on meanwhile
            warnings = [r for r in caplog.records if r.name == "mojodex.llm_calls" and r.levelno >= logging.WARNING]
            assert len(warnings) == 1, [r.getMessage() for r in warnings]
            line = warnings[0].getMessage()
            assert "\n" not in line and warnings[0].exc_info is None
            assert "llm_call rows not stored" in line and str(tmp_path) in line
            restore()
            wait_until(lambda: count(engine, label) == 8, timeout=15)
            wait_until(lambda: recorder.pending == 0 and not list(tmp_path.glob("llm_call.*")))
        finally:
            recorder.close(timeout_s=2)
    assert sorted(r.prompt_tokens for r in stored(engine, label)) == list(range(100, 108))
    assert any("stored again" in r.getMessage() for r in caplog.records)


def test_close_while_the_database_is_down_keeps_the_rows_for_the_next_start(
    database_url, engine, label, tmp_path
):
    with outage(database_url) as (down_engine, cut, restore):
        recorder = SpooledLLMCallRecorder(down_engine, tmp_path, flush_interval_s=3600)
        cut()
        for i in range(4):
            recorder(call(label, i))
        recorder.close(timeout_s=2)
        restore()
    assert count(engine, label) == 0 and len(spool_lines(tmp_path)) == 4
    restarted = SpooledLLMCallRecorder(engine, tmp_path)
    try:
        wait_until(lambda: count(engine, label) == 4)
    finally:
        restarted.close()
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_spool_keeps_rows_in_memory_and_the_call_never_fails(engine, label, tmp_path, caplog):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")  # a file where the folder should be
    recorder = SpooledLLMCallRecorder(engine, blocked / "spool", flush_interval_s=3600)
    try:
        recorder(call(label, 0))
        recorder(call(label, 1))
        assert recorder.flush() is True
    finally:
        recorder.close()
    assert count(engine, label) == 2
    assert os.path.isfile(blocked)
