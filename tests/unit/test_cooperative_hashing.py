"""Under the gevent server, a password hash leaves the other greenlets running.

Each case runs in a new interpreter whose standard library gevent has patched, as gunicorn's
gevent worker does before it loads the app (patching this test process would change every test
after it).
"""

from __future__ import annotations

from tests.support.gevent_child import run_patched


def _run_patched(body: str) -> str:
    run = run_patched(body)
    # was: gevent's pool also printed what the function raised (every wrong password's mismatch)
    assert run.stderr == "", run.stderr[-3000:]
    return run.stdout.strip()


TICKER = """
    import gevent
    ticks = []
    def tick():
        while True:
            ticks.append(1)
            gevent.sleep(0.001)
    gevent.spawn(tick)
    gevent.sleep(0.005)
"""


def test_a_hash_and_a_check_let_other_greenlets_run_meanwhile():
    # was: the argon2 call held the one OS thread, and every other greenlet (every stream of the
    # process) waited for it: no tick during the call
    out = _run_patched(TICKER + """
    from types import SimpleNamespace
    from unittest.mock import MagicMock
    from mojodex_core.concurrency import cooperative
    from mojodex_core.passwords import check_password, hash_password
    assert cooperative()
    before = len(ticks)
    stored = hash_password("correct horse battery")
    during_hash = len(ticks) - before
    db = MagicMock()
    db.scalar.return_value = SimpleNamespace(password_hash=stored)
    before = len(ticks)
    user = check_password(db, "a@b.c", "correct horse battery")
    during_check = len(ticks) - before
    wrong = check_password(db, "a@b.c", "wrong horse battery")
    print(during_hash, during_check, user is not None, wrong is None)
    """)
    during_hash, during_check, right, wrong = out.split()
    assert int(during_hash) > 0 and int(during_check) > 0, out
    assert (right, wrong) == ("True", "True"), "the answers are the same as in place"


def test_an_error_in_the_native_thread_reaches_the_caller():
    out = _run_patched("""
    from mojodex_core.concurrency import run_blocking
    def fail():
        raise ValueError("from the pool")
    try:
        run_blocking(fail)
    except ValueError as exc:
        print("raised", exc)
    """)
    assert out == "raised from the pool"


def test_without_gevent_the_call_runs_in_place():
    import threading

    from mojodex_core.concurrency import cooperative, run_blocking

    assert not cooperative()
    assert run_blocking(threading.get_ident) == threading.get_ident()
