"""How long the sweep of the audio files no message names takes, and how long it holds an embedded start-up.

    .venv/bin/python bench/audio_sweep.py [--messages 500000] [--uploads 50000] [--orphans 500]
                                          [--database-url URL]

Stores --messages messages (--uploads of them audio messages, each naming its file), writes their files
and --orphans files no row names into the uploads' folder of a fresh var dir, all older than the grace,
then measures:
  * startup_blocked_s: how long the embedded start-up's resume step (backend.app.resume_unfinished_turns,
    called in create_app before the server listens) takes;
  * sweep_s: one sweep (mojodex_core/audio/orphans.py), its statements on the message table, and what it
    deleted (the orphans; the first sweep, the start-up's, deletes them: this one finds none left).

The database is a fresh temporary SQLite file by default; a Postgres URL may be given instead:
ITS `public` SCHEMA IS DROPPED AND RECREATED, then migrated to head.

The last line is machine readable:
    messages=... uploads=... orphans_deleted=... startup_blocked_s=... sweep_s=... sweep_statements=...
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._hosts import masked, prepare_database, quiet_logs  # noqa: E402

ROWS_PER_INSERT = 10_000


def store_messages(url: str, folder: Path, messages: int, uploads: int, orphans: int) -> None:
    from sqlalchemy import insert

    from mojodex_core.audio.store import AudioStore
    from mojodex_core.db import make_engine, make_session_factory, transaction
    from mojodex_core.db.models import Message
    from tests.unit._rows import session_row

    engine = make_engine(url)
    with transaction(make_session_factory(engine)) as db:
        session_id = session_row(db)
    folder.mkdir(parents=True, exist_ok=True)
    old = time.time() - 2 * 3600  # older than the default grace (1 h)

    def upload(message_id: str) -> str:
        name = AudioStore.new_name(session_id, message_id, "m4a")
        (folder / name).write_bytes(b"x")
        os.utime(folder / name, (old, old))
        return name

    rows = []
    for i in range(messages):
        message_id = uuid.uuid4().hex
        data = ({"audio": {"file": upload(message_id), "mime": "audio/mp4", "transcription": "done", "bytes": 1}}
                if i < uploads else {"tokens": 123, "model": "gpt-4o-mini"})
        rows.append({"session_id": session_id, "sender": "user", "message_id": message_id,
                     "event_name": "user_message", "text": "hello there", "status": "answered", "data": data})
    for _ in range(orphans):
        upload(uuid.uuid4().hex)
    with engine.begin() as conn:
        for start in range(0, len(rows), ROWS_PER_INSERT):
            conn.execute(insert(Message), rows[start:start + ROWS_PER_INSERT])
    engine.dispose()


def _uploads(folder: Path) -> int:
    """The folder's files but its registry of databases (mojodex_core/audio/databases.py)."""
    return sum(not name.startswith(".") for name in os.listdir(folder))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--uploads", type=int, default=50_000)
    parser.add_argument("--orphans", type=int, default=500)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    quiet_logs()

    from sqlalchemy import event

    from backend.app import resume_unfinished_turns
    from backend.context import build_platform
    from mojodex_core.audio.orphans import messages_naming, sweep_orphans
    from tests.support.live import live_settings

    url, tmpdir = prepare_database(args.database_url)
    var = Path(tempfile.mkdtemp(prefix="mojodex-bench-var-"))
    platform = None
    try:
        settings = dataclasses.replace(live_settings(url, None), var_dir=var)
        platform = build_platform(settings)
        store = platform.audio_store
        started = time.perf_counter()
        store_messages(url, store.directory, args.messages, args.uploads, args.orphans)
        print(f"bench: {masked(url)}, {args.messages} messages, {args.uploads} uploads, {args.orphans} orphans"
              f" stored in {time.perf_counter() - started:.1f} s", flush=True)

        started = time.perf_counter()
        resume_unfinished_turns(platform)  # in create_app, before the server listens
        startup_blocked_s = time.perf_counter() - started
        deadline = time.monotonic() + 600
        while _uploads(store.directory) > args.uploads and time.monotonic() < deadline:
            time.sleep(0.05)  # the start-up's sweep, wherever it runs, deletes the orphans
        orphans_deleted = args.uploads + args.orphans - _uploads(store.directory)

        statements: list[str] = []
        event.listen(platform.engine, "before_cursor_execute",
                     lambda _c, _cur, statement, *_a: statements.append(statement) if "FROM message" in statement
                     else None)
        started = time.perf_counter()
        result = sweep_orphans(store, messages_naming(platform.session_factory), settings.audio_orphan_grace_s)
        sweep_s = time.perf_counter() - started
        assert result is not None and result.deleted == 0, result
    finally:
        if platform is not None:
            platform.close()
        shutil.rmtree(var, ignore_errors=True)
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)

    figures = {
        "messages": args.messages, "uploads": args.uploads, "orphans_deleted": orphans_deleted,
        "startup_blocked_s": round(startup_blocked_s, 2), "sweep_s": round(sweep_s, 2),
        "sweep_statements": len(statements),
    }
    print(json.dumps(figures, indent=2))
    print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
