"""Flask application factory: REST routes (flask-restful) and Socket.IO on one server."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

from flask import Flask, redirect, request, send_from_directory
from flask_socketio import SocketIO
from sqlalchemy import or_, select
from sqlalchemy.exc import OperationalError
from werkzeug.middleware.proxy_fix import ProxyFix

from backend.context import Platform
from backend.cors import install_cors, socket_origin_check
from backend.errors import JsonErrorApi, register_app_errors
from backend.rate_limits import install_rate_limits
from backend.routes import register_routes
from backend.socket_events import register_socket_events
from backend.validation import init_validation
from mojodex_core.audio.turn import awaits_transcription
from mojodex_core.concurrency import cooperative
from mojodex_core.config import PROJECT_ROOT
from mojodex_core.db.models import MESSAGE_UNANSWERED, Message
from mojodex_core.execution.events import RETRYING_EVENT
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.order_runtime import ORDER_EVENT
from mojodex_core.workflow.runner import RUN_EVENT as WORKFLOW_RUN_EVENT

log = logging.getLogger("mojodex.platform")
UPLOAD_PATHS = frozenset({"/user_task_execution_run", "/restart_user_workflow_execution"})
WEBAPP_BUILD = PROJECT_ROOT / "webapp" / "dist"
NOT_BUILT = """<!doctype html><html lang="en"><meta charset="utf-8"><title>Mojodex</title>
<h1>Mojodex API is running</h1>
<p>The web app is not built. It needs Node.js 20+ and npm: install them (Debian: <code>apt-get install nodejs
npm</code>), then run <code>make webapp</code> (or <code>make run</code> again) and reload this page.</p>"""


def webapp_index():  # noqa: ANN201
    """The built web app (webapp/dist, made by `make webapp`), or how to get it."""
    if not (WEBAPP_BUILD / "index.html").exists():
        return NOT_BUILT, 200, {"Content-Type": "text/html; charset=utf-8"}
    response = send_from_directory(WEBAPP_BUILD, "index.html", max_age=0)
    response.headers["Cache-Control"] = "no-cache"
    return response


def create_app(platform: Platform) -> tuple[Flask, SocketIO]:
    # The web client is served by the backend too, so it talks to the API from the same origin.
    # Its assets have content-hashed names: cached for long.
    app = Flask("mojodex", static_folder=str(WEBAPP_BUILD / "assets"), static_url_path="/assets")
    app.config["SEND_FILE_MAX_AGE_DEFAULT"] = 31536000
    app.add_url_rule("/", "webapp_index", webapp_index)
    app.add_url_rule("/webapp/", "webapp_legacy", lambda: redirect("/"))
    app.config["SECRET_KEY"] = platform.settings.secret_key
    app.config["JSON_SORT_KEYS"] = False
    app.config["MAX_CONTENT_LENGTH"] = 2 * 1024 * 1024
    upload_max = platform.settings.upload_max_mb * 1024 * 1024

    @app.before_request
    def _upload_limit() -> None:
        # Routes that take a file (a recording, a transcript) allow larger bodies than the rest.
        if request.path in UPLOAD_PATHS:
            request.max_content_length = upload_max
        elif request.path == "/user_message" and platform.audio and request.mimetype == "multipart/form-data":
            # An audio message: its own limit answers a clear 413 first; this caps the whole request.
            request.max_content_length = max(2 * 1024 * 1024, platform.audio.max_bytes + 65536)

    app.extensions["mojodex"] = platform
    register_app_errors(app)
    install_cors(app, platform.settings.cors_origins)
    install_rate_limits(app, platform.settings)
    api = JsonErrorApi(app)
    register_routes(api)
    init_validation(app, platform.settings.max_json_depth)
    socket_options: dict = {}
    manager = None
    if platform.settings.distributed:
        # Several backend processes: rooms and emits go through Flask-SocketIO's Redis message
        # queue (workers emit on it too); the manager skips live events a socket got in its replay.
        from background.distributed.events import ReplayAwareRedisManager, socketio_channel

        manager = ReplayAwareRedisManager(platform.settings.redis_url, socketio_channel(platform.settings.redis_url))
        socket_options["client_manager"] = manager
        platform.events.set_floors(manager)
    socketio = SocketIO(
        app,
        # The server's model: greenlets under `mojodex serve` (gevent worker), threads under
        # werkzeug (the tests' live servers).
        async_mode="gevent" if cooperative() else "threading",
        cors_allowed_origins=socket_origin_check(platform.settings.cors_origins),
        cors_credentials=False,
        ping_interval=10,
        ping_timeout=20,
        logger=False,
        engineio_logger=False,
        **socket_options,
    )
    app.extensions["mojodex_socket_tokens"] = register_socket_events(socketio, platform, manager)
    if platform.settings.trusted_proxies:
        # Outside the Socket.IO middleware, so handshakes see the client's address too.
        n = platform.settings.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)
    # Final events reach clients through the session's room, named after the session id.
    def transport(session_id: str, name: str, payload: dict) -> None:
        socketio.emit(name, payload, to=session_id)

    # Final replies also go as push notifications to users with no open socket.
    platform.events.set_transport(platform.push.wrap(transport) if platform.push else transport)
    if not platform.settings.distributed:
        # Distributed: a backend (re)starting must not take over turns workers are running; the
        # beat sweep re-runs turns whose worker died (background/distributed/sweep.py).
        # extra["resume_unfinished_turns"] False: the test suite's servers, started one after the
        # other on one database, leave the messages other tests left unanswered alone.
        if platform.settings.extra.get("resume_unfinished_turns", True):
            resume_unfinished_turns(platform)
        platform.resume_title_summaries()
    platform.start_workflow_watch()
    return app, socketio


def resume_unfinished_turns(platform: Platform, retry_every_s: float = 5.0) -> None:
    """Messages accepted before a restart but never answered are answered now, in order; then, in
    the background, the uploaded audio files no message names (a process killed mid-upload) are
    deleted once old: the server does not wait for that sweep, whose look-up scans the message table.

    An unreachable database must not stop the server from starting (it has to answer
    /health with a 503): the resumption (and the sweep) is then retried in the background until it works.
    """
    # Only messages accepted before this process started: a late retry must not take over
    # messages this process accepted (and is answering) meanwhile.
    booted_at = datetime.now(UTC)
    try:
        _resume(platform, booted_at)
    except OperationalError as exc:
        log.error("database unreachable at start-up (%s); resuming unanswered messages later", type(exc).__name__)

        def retry() -> None:
            while True:
                time.sleep(retry_every_s)
                try:
                    _resume(platform, booted_at)
                except OperationalError:
                    continue
                platform.sweep_audio_orphans()
                return

        threading.Thread(target=retry, name="resume-turns", daemon=True).start()
        return
    # Under the gevent server a greenlet, which hands the sweep to a native thread at once (run_blocking).
    threading.Thread(target=platform.sweep_audio_orphans, name="audio-sweep", daemon=True).start()


def _resume(platform: Platform, booted_at: datetime) -> None:
    with platform.db() as db:
        rows = list(
            db.scalars(
                select(Message)
                .where(
                    # user messages, and the global events of order conversations (system messages)
                    # and the workflow_run messages that ask a workflow execution to advance
                    or_(Message.sender == "user", Message.event_name.in_((ORDER_EVENT, WORKFLOW_RUN_EVENT))),
                    Message.status.in_(MESSAGE_UNANSWERED),
                    Message.created_at < booted_at,
                )
                .order_by(Message.message_pk)
            )
        )
        for row in rows:
            row.status = "pending"
        jobs = [TurnJob(session_id=r.session_id, message_pk=r.message_pk, audio=awaits_transcription(r.sender, r.text))
                for r in rows]
        executions = {r.message_pk: r.user_task_execution_fk for r in rows}
    for job in jobs:
        # The turn may have streamed part of its answer before the crash: clients drop that
        # partial text when they see this event, and the resumed turn streams from the start.
        platform.events.publish(job.session_id, RETRYING_EVENT, {
            "session_id": job.session_id, "message_pk": job.message_pk,
            "user_task_execution_pk": executions[job.message_pk],
        })
        platform.runner.submit(job)
    if jobs:
        log.info("resumed %d unanswered message(s)", len(jobs))
    if platform.tickets is not None:
        resumed = platform.tickets.resume()
        if resumed:
            log.info("resumed the delivery of %d ticket(s)", resumed)
