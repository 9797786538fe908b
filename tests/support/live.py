"""A live platform server for integration tests: real HTTP, real Socket.IO, real openai client.

One server per test session, on the suite's database, talking to the scripted LLM server.
Tests isolate themselves by creating their own users.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import shutil
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import engineio
import pytest
import requests
import socketio
from werkzeug.serving import make_server

from backend.app import create_app
from backend.context import Platform, build_platform
from mojodex_core.config import LLMConfig, Settings
from mojodex_core.db import transaction
from mojodex_core.security_config import RateLimitSettings
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from mojodex_core.users import create_user, grant, issue_token

ADMIN_SECRET = "test-admin-secret-0123456789"
REPO_ROOT = Path(__file__).resolve().parents[2]

TEST_TASK = {
    "task_type": "instruct",
    "platforms": ["webapp", "mobile"],
    "name_for_system": "test_email",
    "definition_for_system": "The user needs help writing an email",
    "final_instruction": "Write the email.",
    "output_format_instruction_title": "SUBJECT",
    "output_format_instruction_draft": "BODY",
    "output_type": "email",
    "icon": "✉️",
    "infos_to_extract": [{"info_name": "recipient", "description": "Who receives the email"}],
    "predefined_actions": [],
    "result_chat_enabled": True,
    "task_displayed_data": [
        {
            "language_code": "en",
            "name_for_user": "Email",
            "definition_for_user": "Write an email",
            "json_input": [
                {
                    "input_name": "email_content",
                    "description_for_user": "What is the email about?",
                    "description_for_system": "What the email is about",
                    "placeholder": "Tell me",
                    "type": "text_area",
                },
                {
                    "input_name": "tone",
                    "description_for_user": "Tone",
                    "description_for_system": "Tone of the email",
                    "type": "drop_down_list",
                    "possible_values": [
                        {"value": "formal", "displayed_text": "Formal"},
                        {"value": "friendly", "displayed_text": "Friendly"},
                    ],
                },
            ],
        },
        {
            "language_code": "fr",
            "name_for_user": "E-mail",
            "definition_for_user": "Écrire un e-mail",
            "json_input": [
                {
                    "input_name": "email_content",
                    "description_for_user": "De quoi parle l'e-mail ?",
                    "description_for_system": "What the email is about",
                    "placeholder": "Dites-moi",
                    "type": "text_area",
                },
                {
                    "input_name": "tone",
                    "description_for_user": "Ton",
                    "description_for_system": "Tone of the email",
                    "type": "drop_down_list",
                    "possible_values": [
                        {"value": "formal", "displayed_text": "Formel"},
                        {"value": "friendly", "displayed_text": "Amical"},
                    ],
                },
            ],
        },
    ],
}

_counter = itertools.count(1)


def _test_var_dir() -> Path:
    """The suite's var dir (spooled llm_call rows, uploads, generated secrets): one per run, not
    the checkout's var/; child processes (crash workers) inherit it through the environment."""
    inherited = os.environ.get("MOJODEX_TEST_VAR_DIR")
    if inherited:
        return Path(inherited)
    path = tempfile.mkdtemp(prefix="mojodex-test-var-")
    os.environ["MOJODEX_TEST_VAR_DIR"] = path
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return Path(path)


TEST_VAR_DIR = _test_var_dir()
GENEROUS_RATE_LIMITS = RateLimitSettings(
    auth_failures_per_address="100000/minute", auth_failures_per_token_prefix="100000/minute",
    admin="100000/minute", message_sends="100000/minute",
)


class Client:
    """A user of the platform over HTTP."""

    def __init__(self, base_url: str, token: str, user_id: str) -> None:
        self.base_url = base_url
        self.token = token
        self.user_id = user_id
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.http.request(method, self.base_url + path, timeout=30, **kwargs)

    def ok(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self.call(method, path, **kwargs)
        assert response.status_code == 200, f"{method} {path}: {response.status_code} {response.text}"
        return response.json()

    def user_task_pk(self, name: str = "test_email") -> int:
        tasks = self.ok("GET", "/user_task")["user_tasks"]
        return next(t["user_task_pk"] for t in tasks if t["name_for_system"] == name)

    def new_execution(self, name: str = "test_email") -> dict[str, Any]:
        return self.ok("PUT", "/user_task_execution", json={"user_task_pk": self.user_task_pk(name)})

    def socket(self, session_id: str | None = None, last_seq: int = 0) -> SocketRecorder:
        recorder = SocketRecorder(self.base_url, self.token)
        if session_id:
            recorder.start_session(session_id, last_seq)
        return recorder


class InOrderEngineIOClient(engineio.Client):
    """python-engineio's client starts a thread per received message to run its handler, so
    handlers (and a recorder's list) can see events out of arrival order under load. This one
    runs them on the read thread, in order, as a browser's socket.io-client does."""

    def _trigger_event(self, event, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if event == "message":
            kwargs["run_async"] = False
        return super()._trigger_event(event, *args, **kwargs)


class InOrderClient(socketio.Client):
    def _engineio_client_class(self):  # noqa: ANN202
        return InOrderEngineIOClient


@dataclass
class SocketRecorder:
    """A python-socketio client (websocket transport) that records every event it receives, in
    the order they arrive."""

    base_url: str
    token: str
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self.client = InOrderClient(reconnection=False)
        self.client.on("*", self._record)
        self.client.connect(self.base_url, auth={"token": self.token}, transports=["websocket"], wait_timeout=10)

    def _record(self, event: str, data: Any = None) -> None:
        with self._cond:
            self.events.append((event, data))
            self._cond.notify_all()

    def start_session(self, session_id: str, last_seq: int = 0) -> dict[str, Any]:
        return self.client.call("start_session", {"session_id": session_id, "last_seq": last_seq}, timeout=10)

    def wait_for(self, predicate, timeout: float = 15.0) -> list[tuple[str, dict[str, Any]]]:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.events):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out; events so far: {[e for e, _ in self.events]}")
                self._cond.wait(remaining)
            return list(self.events)

    def wait_event(self, name: str, count: int = 1, timeout: float = 15.0) -> list[dict[str, Any]]:
        events = self.wait_for(lambda evs: sum(1 for e, _ in evs if e == name) >= count, timeout)
        return [d for e, d in events if e == name]

    def named(self, name: str) -> list[dict[str, Any]]:
        with self._cond:
            return [d for e, d in self.events if e == name]

    def close(self) -> None:
        if self.client.connected:
            ws = getattr(self.client.eio, "ws", None)
            if ws is not None:
                # websocket-client waits up to 3 s for the server's close frame, which the
                # client's own read loop often consumes first: don't make every test pay that.
                ws.close = functools.partial(ws.close, timeout=0.2)
            self.client.disconnect()


@dataclass
class LiveServer:
    base_url: str
    platform: Platform
    app: Any = None

    def db(self):  # noqa: ANN201
        return transaction(self.platform.session_factory)

    def new_user(self, language: str = "en", tasks: list[str] | None = None) -> Client:
        with self.db() as db:
            user = create_user(
                db, name=f"User {next(_counter)}", email=f"u{uuid.uuid4().hex[:12]}@example.com", language_code=language
            )
            token = issue_token(db, user)
            grant(db, user, tasks if tasks is not None else ["test_email"])
            user_id = user.user_id
        return Client(self.base_url, token, user_id)

    def admin(self) -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = ADMIN_SECRET
        return session

    def wait_idle(self, timeout: float = 15.0) -> None:
        """Fails when a turn is still running after ``timeout``, having cancelled it first: left
        running, it would answer in the next test, with that test's scripted replies."""
        runner = self.platform.runner
        if runner.wait_idle(timeout):
            return
        busy = runner.busy_sessions()
        for session_id in busy:
            runner.cancel(session_id)
        stopped = runner.wait_idle(5.0)
        raise AssertionError(f"runner still busy after {timeout:g} s: sessions {busy}, their running turn cancelled"
                             + ("" if stopped else ", and still busy 5 s later"))


def live_settings(database_url: str, llm_base_url: str | None) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        llm=LLMConfig(
            base_url=llm_base_url, api_key="test" if llm_base_url else None, model="gpt-4o-mini",
            fallback_model=None, timeout_s=5.0, max_retries=2,
        ),
        admin_secret=ADMIN_SECRET,
        secret_key="test-secret-key-0123456789",
        host="127.0.0.1",
        port=0,
        embedded=False,
        tasks_config_dir=REPO_ROOT / "tasks_config",
        log_level="INFO",
        token_coalesce_ms=30,
        turn_timeout_s=20.0,
        var_dir=TEST_VAR_DIR,
        # The title/summary job makes its own LLM call after a first input: off here so scripted
        # tests get exactly the calls they script; tests/integration/test_title_summary.py turns it on.
        # Resuming unanswered messages at start-up too: a server starting amid the suite would answer
        # the messages earlier tests left on the shared database, with the replies scripted for the
        # test that started it (tests/integration/test_resume.py turns it on).
        extra={"title_summary_jobs": False, "resume_unfinished_turns": False},
        # Generous: the suite's many users share one address; tests/security/ sets tight ones.
        rate_limits=GENEROUS_RATE_LIMITS,
    )


def start_live_server(
    settings: Settings,
    *,
    llm_overrides: dict[str, Any] | None = None,
    configure: Callable[[Platform], None] | None = None,
    **platform_kwargs: Any,
) -> tuple[LiveServer, Any, threading.Thread]:
    """A server on its own port. ``llm_overrides`` tune the provider (e.g. tiny timeouts);
    ``configure`` may adjust the platform (e.g. replace the runner) before the app is built;
    other keyword arguments go to ``build_platform`` (e.g. ``local_model``)."""
    overrides = {"backoff_base_s": 0.01, "first_token_timeout_s": 3, **(llm_overrides or {})}
    platform = build_platform(settings, llm_overrides=overrides, **platform_kwargs)
    with transaction(platform.session_factory) as db:
        store_spec(db, validate_spec(TEST_TASK), "upsert")
    if configure is not None:
        configure(platform)
    app, _socketio = create_app(platform)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return LiveServer(f"http://127.0.0.1:{server.server_port}", platform, app), server, thread


@contextmanager
def serving(settings: Settings, **kwargs: Any) -> Iterator[LiveServer]:
    """A live server for the duration of the block (see start_live_server for kwargs)."""
    live, server, _thread = start_live_server(settings, **kwargs)
    try:
        yield live
    finally:
        server.shutdown()
        live.platform.close()


@pytest.fixture(scope="session")
def live_server(database_url: str, scripted_llm) -> Iterator[LiveServer]:  # noqa: ANN001
    with serving(live_settings(database_url, scripted_llm.base_url)) as live:
        yield live


@pytest.fixture
def live(live_server: LiveServer, llm) -> Iterator[LiveServer]:  # noqa: ANN001
    """The live server with a reset LLM script; waits for turns to finish after each test."""
    yield live_server
    live_server.wait_idle(10)  # a turn still running would answer in the next test
