"""What the serving process's concurrency asks of code that holds the CPU in C.

`mojodex serve` runs gunicorn's gevent worker: it monkey-patches the standard library before it
loads the app, so every request, Socket.IO connection and turn is a greenlet of one OS thread,
and they take turns at their waits (sockets, locks, sleeps, psycopg's waits: psycopg >= 3.1.14
detects the patching). A C call that holds the CPU for long without waiting on anything (an
argon2 hash: tens of milliseconds) would pause every stream of the process meanwhile, so
`run_blocking` hands it to gevent's pool of native threads and lets the other greenlets run.
Anywhere else (werkzeug's threaded server in the tests, the CLI, the Celery worker's thread pool) it
calls the function in place: threads already run beside it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def cooperative() -> bool:
    """True in a process whose standard library gevent has patched (gunicorn's gevent worker)."""
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and bool(monkey.is_module_patched("socket"))


def give_way() -> None:
    """Under gevent, lets every other ready greenlet run before the caller goes on; elsewhere
    nothing (threads already run beside it).

    For a caller that has just handed work to another greenlet and would otherwise go on without
    a wait for a while: a turn reading an LLM stream whose chunks are already buffered only
    waits again at its end, so the token event it just emitted would sit in the websocket
    writer's queue until then."""
    if cooperative():
        import gevent

        gevent.sleep(0)


def run_blocking(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)`, on a native thread when greenlets share this one (see the module).

    What `fn` raises is raised here, and only here: gevent's pool would also print it through the
    hub's error handler, a traceback in the log for every wrong password."""
    if not cooperative():
        return fn(*args, **kwargs)
    import gevent

    def call() -> tuple[bool, Any]:
        try:
            return True, fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            return False, exc

    ok, value = gevent.get_hub().threadpool.apply(call)
    if not ok:
        raise value
    return value


class ProcessThread:
    """A daemon thread started on first use: once per process, again in a forked child, and again
    if its target ever returned.

    Whether it runs is a flag it keeps itself, not ``Thread.is_alive()``: under gevent that call
    tries the thread's lock without blocking, and gevent answers a failed try by yielding to the
    hub (so that spin locks progress). A caller that checked at every use, as the deadline
    scheduler did at every ``call_later``, let every ready greenlet run first, while it held its
    own lock: the turn's first token waited for another request's response to be written.

    ``ensure_started`` is called under the owner's lock, so that two callers never start two."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self._target = target
        self.name = name
        self._pid: int | None = None  # the process the thread runs in, None when it does not run

    def ensure_started(self) -> bool:
        """Starts the thread unless it runs in this process; True when it started it."""
        if self._pid == os.getpid():
            return False
        self._pid = os.getpid()
        try:
            threading.Thread(target=self._run, name=self.name, daemon=True).start()
        except BaseException:
            self._pid = None  # not started: the next use tries again
            raise
        return True

    def _run(self) -> None:
        try:
            self._target()
        finally:
            self._pid = None
