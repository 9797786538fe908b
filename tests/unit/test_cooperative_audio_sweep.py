"""Under the gevent server, the start-up's audio sweep leaves the other greenlets (every request) running.

Run in a new interpreter whose standard library gevent has patched, as gunicorn's gevent worker does
before it loads the app (tests/support/gevent_child.py).
"""

from __future__ import annotations

from tests.support.gevent_child import run_patched


def test_the_sweeps_sqlite_scan_and_folder_listing_let_other_greenlets_run(tmp_path):
    # was: the sweep ran on the server's one OS thread; SQLite's scan of the message table does not
    # wait on anything gevent sees, so no other greenlet ran until it ended
    run = run_patched("""
    import dataclasses, os, sys, time, uuid
    from pathlib import Path
    import gevent
    from sqlalchemy import insert
    from backend.context import Platform
    from mojodex_core.audio.store import AudioStore
    from mojodex_core.concurrency import cooperative
    from mojodex_core.db import make_engine, make_session_factory, transaction
    from mojodex_core.db.migrate import upgrade
    from mojodex_core.db.models import Message
    from tests.support.live import live_settings
    from tests.unit._rows import session_row

    folder = Path(sys.argv[1])
    url = f"sqlite:///{folder / 'a.db'}"
    upgrade(url)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    with transaction(factory) as db:
        session_id = session_row(db)
    store = AudioStore(folder / "audio")
    old = time.time() - 2 * 3600
    rows = []
    for i in range(40_000):
        data = {"tokens": 1}
        if i % 20 == 0:
            data = {"audio": {"file": AudioStore.new_name(session_id, str(i), "wav")}}
            store.save(data["audio"]["file"], b"x")
            os.utime(store.directory / data["audio"]["file"], (old, old))
        rows.append({"session_id": session_id, "sender": "user", "message_id": uuid.uuid4().hex,
                     "event_name": "user_message", "text": "t", "status": "answered", "data": data})
    with engine.begin() as conn:
        conn.execute(insert(Message), rows)
    platform = Platform(settings=dataclasses.replace(live_settings(url, None), var_dir=folder), engine=engine,
                        session_factory=factory, events=None, runner=None, llm=None, audio_store=store)
    ticks = []

    def tick():
        while True:
            ticks.append(1)
            gevent.sleep(0.001)

    gevent.spawn(tick)
    gevent.sleep(0.005)
    assert cooperative()
    before = len(ticks)
    started = time.monotonic()
    deleted = platform.sweep_audio_orphans()
    print(len(ticks) - before, deleted, f"{time.monotonic() - started:.3f}")
    """, str(tmp_path))
    during, deleted, took_s = run.stdout.split()
    assert deleted == "0", run.stdout
    assert int(during) > 0, f"no other greenlet ran during the {took_s} s sweep"
