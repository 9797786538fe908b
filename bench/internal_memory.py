"""How long internal_memory takes for one user with a given history, on SQLite (FTS5 built at
query time) or Postgres (to_tsvector at query time). Ends with one machine-readable line.

    .venv/bin/python bench/internal_memory.py --texts 2000 --messages 4000
    .venv/bin/python bench/internal_memory.py --database-url postgresql://postgres@127.0.0.1:5432/bench
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.orm import sessionmaker  # noqa: E402

from mojodex_core.db.models import (  # noqa: E402
    Base,
    Message,
    ProducedText,
    ProducedTextVersion,
    Session,
    UserTaskExecution,
)
from mojodex_core.tools import ToolContext, get_tool  # noqa: E402
from tests.unit._rows import execution_pk  # noqa: E402

WORDS = ("budget meeting client invoice roadmap hiring launch quarter design review customer email "
         "contract renewal pricing feature support outage report").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url")
    parser.add_argument("--texts", type=int, default=2000, help="produced text versions of the user")
    parser.add_argument("--messages", type=int, default=4000, help="messages of the user")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    url = args.database_url or f"sqlite:///{tempfile.mkdtemp()}/bench_memory.db"
    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_engine(url)
    if url.startswith("postgresql"):
        with engine.begin() as conn:
            conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
    Base.metadata.create_all(engine)
    factory = sessionmaker(engine)
    rng = random.Random(7)
    user_id = uuid.uuid4().hex
    with factory.begin() as db:
        current = execution_pk(db, user_id)
        earlier = execution_pk(db, user_id)  # holds the history (the tool skips the current execution)
        stranger = execution_pk(db)  # another user's matching texts, never returned
        session_of = {pk: db.get(UserTaskExecution, pk).session_id for pk in (earlier, stranger)}
        for pk in (earlier, stranger):
            owner = db.get(Session, session_of[pk]).user_id
            produced = ProducedText(user_task_execution_fk=pk, user_id=owner)
            db.add(produced)
            db.flush()
            db.add_all(ProducedTextVersion(produced_text_fk=produced.produced_text_pk, version_index=i + 1,
                                           title=sentence(rng, 5), production=sentence(rng, 150))
                       for i in range(args.texts))
            db.add_all(Message(session_id=session_of[pk], user_task_execution_fk=pk, sender="user",
                               event_name="user_message", text=sentence(rng, 30), status="answered")
                       for _ in range(args.messages))
    tool = get_tool("internal_memory")
    context = ToolContext(user_id, current, factory, {}, timeout_s=60)
    timings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        result = tool.run({"query": "budget renewal outage", "limit": 5}, context)
        timings.append((time.perf_counter() - started) * 1000)
    assert result["count"] == 5, result
    assert {m["user_task_execution_pk"] for m in result["matches"]} == {earlier}, result
    timings.sort()
    p50 = statistics.median(timings)
    p95 = timings[min(len(timings) - 1, int(len(timings) * 0.95))]
    dialect = engine.dialect.name
    engine.dispose()
    print(f"internal_memory on {dialect}: {args.texts} texts + {args.messages} messages of one user, "
          f"{args.runs} searches: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    print(f"dialect={dialect} texts={args.texts} messages={args.messages} p50_ms={p50:.1f} p95_ms={p95:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
