"""Turns per second: embedded (one process, threads) vs distributed (Celery workers), same load.

    .venv/bin/python bench/distributed_throughput.py [--sessions 30] [--messages 5]
        [--database-url postgresql://...] [--redis-url redis://127.0.0.1:6379/N]

Defaults come from TEST_DATABASE_URL and TEST_REDIS_URL. THE DATABASE'S `public` SCHEMA IS DROPPED
AND RECREATED, and the Redis database is flushed. All on loopback:

- the scripted OpenAI-compatible server (tests/support/scripted_llm.py), in this process, answering
  every chat at once with "Answer to <text>." streamed word by word;
- embedded: one `mojodex serve` process (MOJODEX_RUNNER=thread) on Postgres;
- distributed: `backend/cluster.py` with 1 backend + 1 worker (the per-process comparison), then
  2 backends + 2 workers, all MOJODEX_RUNNER=celery;
- clients in this process: one Socket.IO client per session on one backend, messages sent through
  the other (distributed, 2+2), each message waiting for its answer before the next.

Figures: turns/s over the wall time from the first PUT to the last answer; p50/p99 of
send-to-answer. The machine's cores are shared by every process, so the 2+2 figure shows
distribution overhead, not scaling. The last line is machine readable:
    embedded_turns_per_s=... distributed_1x1_turns_per_s=... distributed_2x2_turns_per_s=... ...
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
from sqlalchemy import create_engine, text

from backend.cluster import Cluster, free_port
from mojodex_core.config import normalise_database_url
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.db.migrate import upgrade
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from mojodex_core.users import create_user, grant, issue_token
from tests.support.live import ADMIN_SECRET, TEST_TASK, Client
from tests.support.scripted_llm import Reply, ScriptedLLMServer, asks_structured


def responder(body: dict) -> Reply:
    if asks_structured(body):  # the title/summary job's call
        return Reply(json={"title": "A title", "summary": "A summary"})
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = str(user[-1]["content"]) if user else ""
    return Reply(chunks=re.findall(r"\S+\s*", f"Answer to {content}."))


def users(factory, count: int) -> list[tuple[str, str]]:  # noqa: ANN001
    out = []
    with transaction(factory) as db:
        for _ in range(count):
            user = create_user(db, name="Bench", email=f"b{uuid.uuid4().hex[:12]}@example.com")
            out.append((issue_token(db, user), user.user_id))
            grant(db, user, ["test_email"])
    return out


def chat(home: str, other: str, token: str, user_id: str, messages: int) -> list[float]:
    client = Client(home, token, user_id)
    execution = client.new_execution()
    pk, session_id = execution["user_task_execution_pk"], execution["session_id"]
    sender = Client(other, token, user_id)
    socket = client.socket(session_id)
    latencies = []
    try:
        for n in range(messages):
            started = time.monotonic()
            body = {"session_id": session_id, "user_task_execution_pk": pk, "text": f"bench {n}",
                    "message_id": f"m{n}"}
            try:
                sender.ok("PUT", "/user_message", json=body)
            except Exception:  # a keep-alive connection closed as it was reused: idempotent resend
                sender.ok("PUT", "/user_message", json=body)
            socket.wait_event("mojo_message", count=n + 1, timeout=120)
            latencies.append(time.monotonic() - started)
    finally:
        socket.close()
    return latencies


def load(urls: list[str], accounts: list[tuple[str, str]], messages: int) -> dict[str, float]:
    started = time.monotonic()
    with ThreadPoolExecutor(len(accounts)) as pool:
        results = list(pool.map(
            lambda i: chat(urls[i % len(urls)], urls[(i + 1) % len(urls)], *accounts[i], messages),
            range(len(accounts))))
    elapsed = time.monotonic() - started
    latencies = sorted(x for r in results for x in r)
    return {"turns_per_s": len(latencies) / elapsed, "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
            "turns": len(latencies), "elapsed_s": elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--database-url", default=os.environ.get("TEST_DATABASE_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("TEST_REDIS_URL"))
    args = parser.parse_args()
    if not (args.database_url and args.redis_url):
        print("needs --database-url (Postgres) and --redis-url (or TEST_DATABASE_URL, TEST_REDIS_URL)")
        return 2
    url = normalise_database_url(args.database_url)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    upgrade(url)
    factory = make_session_factory(make_engine(url))
    with transaction(factory) as db:
        store_spec(db, validate_spec(TEST_TASK), "upsert")
    redis.Redis.from_url(args.redis_url).flushdb()
    llm = ScriptedLLMServer().start()
    llm.responder = responder
    env = {"DATABASE_URL": args.database_url, "REDIS_URL": args.redis_url, "MOJODEX_LLM_BASE_URL": llm.base_url,
           "MOJODEX_LLM_API_KEY": "bench", "MOJODEX_ADMIN_SECRET": ADMIN_SECRET,
           "MOJODEX_SECRET_KEY": "bench-secret-key-0123456789", "MOJODEX_LOG_LEVEL": "WARNING",
           "MOJODEX_DB_POOL_SIZE": "16", "MOJODEX_DB_MAX_OVERFLOW": "0"}  # overflow: closed at return
    figures: dict[str, dict[str, float]] = {}
    logs = Path(tempfile.mkdtemp(prefix="bench-dist-"))
    try:
        # Embedded: one process, in-process runner, same database.
        port = free_port()
        embedded = subprocess.Popen(
            [sys.executable, "-m", "backend.cli", "serve"],
            env={**os.environ, **env, "MOJODEX_RUNNER": "thread", "MOJODEX_PORT": str(port)},
            stdout=open(logs / "embedded.log", "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
        try:
            probe = Cluster(env={}, log_dir=logs)
            from backend.cluster import Role

            role = Role("embedded", embedded, logs / "embedded.log", port)
            probe.wait_serving(role)
            figures["embedded"] = load([role.url], users(factory, args.sessions), args.messages)
        finally:
            embedded.terminate()
            embedded.wait(20)
        for name, (backends, workers) in {"distributed_1x1": (1, 1), "distributed_2x2": (2, 2)}.items():
            cluster = Cluster(env=env, log_dir=logs / name, backends=backends, workers=workers,
                              worker_concurrency=8)
            try:
                roles = cluster.start(timeout=90)
                figures[name] = load([r.url for r in roles], users(factory, args.sessions), args.messages)
            finally:
                cluster.stop()
    finally:
        llm.stop()
    for name, f in figures.items():
        print(f"{name:16s} {f['turns']:.0f} turns in {f['elapsed_s']:.1f} s: {f['turns_per_s']:.1f} turns/s, "
              f"p50 {f['p50_ms']:.0f} ms, p99 {f['p99_ms']:.0f} ms")
    print(" ".join(f"{name}_turns_per_s={f['turns_per_s']:.1f} {name}_p50_ms={f['p50_ms']:.0f} "
                   f"{name}_p99_ms={f['p99_ms']:.0f}" for name, f in figures.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
