"""What a long conversation costs a turn: first token and server CPU, short session against long.

    .venv/bin/python bench/long_session.py [--history 3000] [--turns 60] [--database-url URL]
                                           [--distributed --redis-url URL]

The platform runs as production runs it (`mojodex serve`, bench/_production.py) against the
scripted LLM answering at once, as in bench/turn_overhead.py. Two sessions of the same user
task: a new one, and one whose execution already holds --history answered exchanges (a user
message and its answer each, written straight to the database as earlier turns leave them).
Their question turns alternate, in blocks of 10, through REST and Socket.IO; every streamed
text is checked against the stored one (exit code 1 otherwise). `--distributed` runs one
backend and one Celery worker instead (Postgres and Redis; the Redis database is flushed).

The prompt keeps the newest messages that fit the context budget (12,000 tokens): a long
session's prompt is larger than a short one's, whatever the history, but what the turn reads
to build it should not grow with the history beyond that budget.

The last line printed is machine readable:
    history_exchanges=... short_first_token_p50_ms=... long_first_token_p50_ms=...
    short_cpu_ms_per_turn=... long_cpu_ms_per_turn=... long_prompt_messages=...
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._clients import BenchSession, TurnResult, new_session, run_turn  # noqa: E402
from bench._hosts import QUESTION_TEXT, Remote, masked, prepare_database, quiet_logs  # noqa: E402
from bench._measure import percentile  # noqa: E402
from bench._production import ProductionServer  # noqa: E402

BLOCK = 10
USER_TEXT = "answer: the whole team, and a friendly tone, but keep it short please"


def seed_history(factory, session: BenchSession, exchanges: int) -> None:  # noqa: ANN001
    """``exchanges`` answered user messages in the session's execution, each followed by its answer,
    as earlier turns leave them: one multi-row INSERT, then one executemany UPDATE of the links."""
    from sqlalchemy import bindparam, insert, update

    from mojodex_core.db import transaction
    from mojodex_core.db.models import Message

    table = Message.__table__
    common = {"session_id": session.session_id, "user_task_execution_fk": session.pk, "data": {},
              "text_with_tags": None}
    answer_raw = f"<user_language>en</user_language><ask_user_primary_info>{QUESTION_TEXT}</ask_user_primary_info>"
    rows = []
    for i in range(exchanges):
        rows.append({**common, "sender": "user", "message_id": uuid.uuid4().hex, "event_name": "user_message",
                     "text": f"{USER_TEXT} ({i})", "status": "answered"})
        rows.append({**common, "sender": "assistant", "message_id": None, "event_name": "mojo_message",
                     "text": QUESTION_TEXT, "text_with_tags": answer_raw, "status": "final"})
    with transaction(factory) as db:
        returning = insert(table).returning(table.c.message_pk, sort_by_parameter_order=True)
        pks = db.execute(returning, rows).scalars().all()
        link = update(table).where(table.c.message_pk == bindparam("b_user")).values(
            answer_message_fk=bindparam("b_answer"))
        pairs = zip(pks[::2], pks[1::2], strict=True)  # each user message, then its answer
        db.execute(link, [{"b_user": user, "b_answer": answer} for user, answer in pairs])
    if factory.kw["bind"].dialect.name == "postgresql":
        # A history grows over days, and autovacuum analyzes the table on the way: without fresh
        # statistics, Postgres would plan for the empty table it saw last.
        with factory.kw["bind"].connect() as conn:
            conn.exec_driver_sql("ANALYZE message")
            conn.commit()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=3000, help="answered exchanges in the long session")
    parser.add_argument("--turns", type=int, default=60, help="measured turns per session (blocks of 10)")
    parser.add_argument("--database-url", default=None,
                        help="Postgres URL (its public schema is DROPPED and recreated); default a temp SQLite file")
    parser.add_argument("--turn-timeout", type=float, default=60.0)
    parser.add_argument("--distributed", action="store_true", help="1 backend + 1 Celery worker (Postgres, Redis)")
    parser.add_argument("--redis-url", default=os.environ.get("TEST_REDIS_URL"),
                        help="with --distributed: its database is FLUSHED (default TEST_REDIS_URL)")
    args = parser.parse_args(argv)
    if args.distributed and not ((args.database_url or "").startswith("postgres") and args.redis_url):
        parser.error("--distributed needs a Postgres --database-url and --redis-url")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_logs()
    database_url, tmpdir = prepare_database(args.database_url)
    var_dir = Path(tempfile.mkdtemp(prefix="mojodex-bench-var-"))
    db_kind = "postgres" if database_url.startswith("postgresql") else "sqlite"
    mode = "distributed (1 backend + 1 worker)" if args.distributed else "embedded (mojodex serve)"
    print(f"bench: database {db_kind} ({masked(database_url)}), {mode}, {args.history} exchanges of history")

    from mojodex_core.db import make_engine, make_session_factory, transaction
    from mojodex_core.task_loader import store_spec
    from mojodex_core.task_spec import validate_spec
    from tests.support.live import TEST_TASK

    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    with transaction(factory) as db:
        store_spec(db, validate_spec(TEST_TASK), "upsert")
    if args.distributed:
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()
    llm = Remote("llm", 10)
    server = ProductionServer(database_url, llm.base_url, var_dir, distributed=args.distributed,
                              redis_url=args.redis_url)
    failed: list[TurnResult] = []
    try:
        short, long = (new_session(i, factory, server.base_url) for i in range(2))
        started = time.perf_counter()
        seed_history(factory, long, args.history)
        print(f"bench: history written in {time.perf_counter() - started:.1f} s")
        engine.dispose()
        for session in (short, long):  # warm-up (the first input starts the title job)
            failed += [r for r in (run_turn(session, "question", QUESTION_TEXT, args.turn_timeout) for _ in range(3))
                       if not r.ok or not r.content_ok]
        time.sleep(1.0)
        first: dict[str, list[float]] = {"short": [], "long": []}
        cpu_s: dict[str, float] = {"short": 0.0, "long": 0.0}
        prompt_messages = 0
        for _block in range(max(args.turns // BLOCK, 1)):
            for name, session in (("short", short), ("long", long)):
                before = sum(server.cpu_s().values())
                results = [run_turn(session, "question", QUESTION_TEXT, args.turn_timeout) for _ in range(BLOCK)]
                cpu_s[name] += sum(server.cpu_s().values()) - before
                failed += [r for r in results if not r.ok or not r.content_ok]
                first[name] += [r.ms(r.t_first) for r in results if r.ok and r.t_first is not None]
                if name == "long":
                    prompt_messages = len((llm.call("platform_request") or {}).get("messages") or [])
    finally:
        server.stop()
        llm.stop()
        shutil.rmtree(var_dir, ignore_errors=True)
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    for r in failed[:3]:
        print(f"   failed turn: {r.error or r.mismatch}")
    turns = {name: max(len(values), 1) for name, values in first.items()}
    figures = {
        "history_exchanges": args.history,
        "short_first_token_p50_ms": round(percentile(first["short"], 50), 2),
        "long_first_token_p50_ms": round(percentile(first["long"], 50), 2),
        "short_cpu_ms_per_turn": round(cpu_s["short"] * 1000 / turns["short"], 2),
        "long_cpu_ms_per_turn": round(cpu_s["long"] * 1000 / turns["long"], 2),
        "long_prompt_messages": prompt_messages,
    }
    print(f"bench: {sum(turns.values())} turns, {len(failed)} failed or differing")
    print(" ".join(f"{key}={value}" for key, value in figures.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
