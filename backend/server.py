"""Process entry points: build the platform from the environment and serve it."""

from __future__ import annotations

import gc
import logging
import sys
from pathlib import Path

from mojodex_core.concurrency import cooperative
from mojodex_core.config import PROJECT_ROOT, ConfigError, Settings, load_settings


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,  # the CLI set a quieter default before the server took over
    )
    # The openai client logs every HTTP request at INFO through httpx2: too chatty for a turn log.
    for noisy in ("httpx", "httpx2", "engineio.server", "socketio.server"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def settle_heap() -> None:
    """Move what start-up allocated (modules, the app, the platform) out of the collector's sight.

    A full collection walks every tracked object. Built, a serving process holds ~220,000 of
    them that live as long as it does, and each full collection walked them all: a pause that
    every turn in flight waited out (figures: docs/performance.md, "Third round"). Frozen, they
    are no longer walked; one collection first, so that start-up's garbage is not kept forever.
    What the work resumed at start-up holds at that moment is frozen with the rest: a cycle among
    those few objects is never collected, a one-off cost.
    """
    gc.collect()
    gc.freeze()


def build_app(settings: Settings | None = None):  # noqa: ANN201
    """The WSGI app for this process (platform built once, turns resumed)."""
    from backend.app import create_app
    from backend.context import build_platform
    from backend.local_llm import maybe_start_local_llm

    if settings is None:
        try:
            settings = load_settings()
        except ConfigError as exc:
            print(f"configuration error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    configure_logging(settings.log_level)
    local = maybe_start_local_llm(settings)
    settings = local.settings
    try:
        platform = build_platform(settings, local_model=local.server, no_llm_reason=local.problem)
    except ConfigError as exc:  # settings read when the platform is built (audio, push)
        print(f"configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    app, _socketio = create_app(platform)
    settle_heap()
    logging.getLogger("mojodex.server").info(
        "mojodex ready: database=%s llm=%s concurrency=%s", settings.database_url.split("@")[-1],
        settings.llm.base_url or ("api key" if settings.llm.api_key else "none"),
        "gevent" if cooperative() else "threads",
    )
    return app


def run_gunicorn(settings: Settings, worker_connections: int = 1000) -> None:
    from gunicorn.app.base import BaseApplication

    from backend.gevent_worker import WORKER_CLASS

    class _Gunicorn(BaseApplication):
        def load_config(self) -> None:
            self.cfg.set("bind", f"{settings.host}:{settings.port}")
            # One worker: turns, rooms and the token buffer live in this process.
            self.cfg.set("workers", 1)
            # gevent: requests, sockets and turns are greenlets of one thread, which take turns at
            # their waits. Threads (gthread) spent a quarter of the process's CPU handing the GIL
            # over at every socket and SQLite call (docs/performance.md, fifth round). The worker
            # patches the standard library before it loads the app (`load`, below). Its subclass
            # only quits without a traceback on Ctrl-C (backend/gevent_worker.py).
            self.cfg.set("worker_class", WORKER_CLASS)
            self.cfg.set("worker_connections", worker_connections)
            self.cfg.set("timeout", 120)
            self.cfg.set("accesslog", "-")
            self.cfg.set("loglevel", settings.log_level.lower())
            # The banner comes last, once the app (and the local model) is ready to answer.
            self.cfg.set("post_worker_init", lambda _worker: show_banner(settings))
            # In the worker, once it stops serving (Ctrl-C, SIGTERM), before the interpreter waits
            # for its threads: a background job must not hold the exit.
            self.cfg.set("worker_exit", _quit_jobs)

        def load(self):  # noqa: ANN202
            return build_app(settings)

    _Gunicorn().run()


def _quit_jobs(_arbiter, worker) -> None:  # noqa: ANN001 - gunicorn's worker_exit hook
    app = getattr(worker, "wsgi", None)
    platform = getattr(app, "extensions", {}).get("mojodex") if app is not None else None
    if platform is not None:
        platform.quit_jobs()


def show_banner(settings: Settings, stream=None) -> None:  # noqa: ANN001 - a text stream, stdout by default
    """The banner in one write, its newline included: a log line another thread writes to the same terminal at
    start-up (the audio sweep's) comes before or after it, never between the demo password and its newline."""
    stream = stream or sys.stdout
    stream.write(ready_banner(settings) + "\n")
    stream.flush()


def ready_banner(settings: Settings, webapp_dist: Path | None = None) -> str:
    """What a person starting the platform needs, printed once it answers: the URL, and in the
    embedded default the demo user's token and password, last."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    lines = ["", f"Mojodex is ready: http://{host}:{settings.port}/"]
    if not ((webapp_dist or PROJECT_ROOT / "webapp" / "dist") / "index.html").exists():
        lines.append("The web app is not built (it needs Node.js 20+ and npm): install them and run `make webapp`; "
                     "the API is served meanwhile.")
    token_file = settings.var_dir / "demo_token"
    if settings.embedded and token_file.exists():
        lines.append(f"Demo user's API token (sign in with it): {token_file.read_text().strip()}")
    password_file = settings.var_dir / "demo_password"
    if settings.embedded and password_file.exists():
        lines.append(f"Web app sign-in: demo@mojodex.local / {password_file.read_text().strip()}")
    return "\n".join(lines)
