"""The servers of the bench and how they are hosted: the migrated database, the platform
under test (PlatformHost), the scripted LLM (LLMHost), each in a child process of its own
(Remote, running `_host_main`) or in the bench process (Local, --in-process).

The children are started with the multiprocessing "spawn" context: `_host_main` and the
host classes are found there by their module path, `bench._hosts`.
"""

from __future__ import annotations

import inspect
import logging
import multiprocessing as mp
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy import text as sql_text

from backend.server import settle_heap
from bench._measure import CpuProfiler, StackSampler
from mojodex_core.config import normalise_database_url
from tests.support.live import live_settings, start_live_server
from tests.support.scripted_llm import Reply, ScriptedLLMServer, asks_structured

QUIET_LOGGERS = (
    "mojodex",
    "werkzeug",
    "httpx2",
    "httpx",
    "httpcore",
    "openai",
    "engineio",
    "socketio",
    "urllib3",
    "alembic",
    "sqlalchemy",
)

QUESTION_TEXT = "Who should receive this email, and which tone do you want me to use for it today?"
QUESTION_CHUNKS = (
    ["<user_language>en</user_language>", "<ask_user_primary_info>"]
    + [w if i == 0 else " " + w for i, w in enumerate(QUESTION_TEXT.split(" "))]
    + ["</ask_user_primary_info>"]
)  # 20 chunks
FIRST_VISIBLE_CHUNK = 2  # "Who": the first chunk outside a hidden tag, the first `mojo_token` a client sees
DIRECT_PREFIX = "direct: "
DRAFT_PREFIX = "draft please: "


def draft_words(n: int) -> list[str]:
    return [f"word{i}" if i == 0 else f" word{i}" for i in range(n)]


def quiet_logs() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def masked(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


# --------------------------------------------------------------------------- database


def prepare_database(url: str | None) -> tuple[str, str | None]:
    """A migrated, empty database; returns (url, temp dir to delete or None)."""
    from mojodex_core.db.migrate import upgrade

    tmpdir = None
    if url is None:
        tmpdir = tempfile.mkdtemp(prefix="mojodex-bench-")
        url = f"sqlite:///{tmpdir}/bench.db"
    else:
        url = normalise_database_url(url)
        if url.startswith("postgresql"):
            engine = create_engine(url)
            with engine.begin() as conn:
                conn.execute(sql_text("DROP SCHEMA IF EXISTS public CASCADE"))
                conn.execute(sql_text("CREATE SCHEMA public"))
            engine.dispose()
        elif not url.startswith("sqlite"):
            raise SystemExit(f"unsupported database url: {masked(url)}")
    upgrade(url)
    return url, tmpdir


# --------------------------------------------------------------------------- server-side hosts


class PlatformHost:
    """The platform server under test (tests.support.live), production timeouts."""

    turn_function = "mojodex_core/execution/turn.py:InstructTurn.__call__"  # what --profile wall reports on

    def __init__(self, database_url: str, llm_base_url: str) -> None:
        self.database_url = database_url
        self.llm_base_url = llm_base_url
        self.sampler: StackSampler | None = None

    def start(self) -> str:
        quiet_logs()
        # werkzeug's dev server parses the websocket close frame of a disconnecting client as
        # an HTTP request and logs a 400; that is shutdown noise, not a benchmark failure.
        logging.getLogger("werkzeug").addFilter(lambda r: "code 400, message Bad" not in r.getMessage())
        settings = live_settings(self.database_url, self.llm_base_url)
        # The test settings have test-sized timeouts; a loaded 2-core box needs the production ones.
        settings = replace(
            settings, log_level="WARNING", turn_timeout_s=180.0, llm=replace(settings.llm, timeout_s=60.0)
        )
        kwargs: dict[str, Any] = {}
        if "llm_overrides" in inspect.signature(start_live_server).parameters:
            kwargs["llm_overrides"] = {"first_token_timeout_s": 30.0}  # the production default
        self.live, self.server, _thread = start_live_server(settings, **kwargs)
        return self.live.base_url

    def profile_start(self, kind: str) -> None:
        if kind == "wall":
            self.sampler = StackSampler(0.01, self.turn_function)
            self.sampler.start()
        else:
            self.sampler = profiler = CpuProfiler()
            runner = self.live.platform.runner
            self._unwrapped = (runner._handler, self.server.app)
            runner._handler = profiler.wrap(runner._handler, "turn")
            self.server.app = profiler.wrap(self.server.app, "request")

    def profile_stop(self) -> str:
        sampler, self.sampler = self.sampler, None
        if isinstance(sampler, CpuProfiler):
            self.live.platform.runner._handler, self.server.app = self._unwrapped
        return sampler.report() if sampler else ""

    def stop(self) -> None:
        self.server.shutdown()
        self.live.platform.close()


class OrderPlatformHost(PlatformHost):
    """The platform with the shipped order tasks and no LLM (deterministic order turns)."""

    turn_function = "mojodex_core/order_runtime/turn.py:OrderTurn.__call__"

    def __init__(self, database_url: str) -> None:
        super().__init__(database_url, "")

    def start(self) -> str:
        from tests.order_platform.conftest import load_order_specs, order_settings

        quiet_logs()
        logging.getLogger("werkzeug").addFilter(lambda r: "code 400, message Bad" not in r.getMessage())
        settings = replace(order_settings(self.database_url), log_level="WARNING", redis_url=None)
        self.live, self.server, _thread = start_live_server(settings, configure=load_order_specs)
        return self.live.base_url

    def new_user(self, tasks: list[str]) -> tuple[str, str]:
        """(token, user_id) of a new user granted these tasks."""
        client = self.live.new_user(tasks=tasks)
        return client.token, client.user_id


class LLMHost:
    """The scripted LLM: question replies, or a draft when the user text asks for one."""

    def __init__(self, draft_tokens: int) -> None:
        self.draft_chunks = ["<execution><title>T</title><draft>", *draft_words(draft_tokens), "</draft></execution>"]
        self.received: dict[str, float] = {}  # user text -> when its request reached the LLM
        self.last_platform_request: dict[str, Any] | None = None
        self.server: ScriptedLLMServer | None = None

    def _respond(self, body: dict[str, Any]) -> Reply:
        if asks_structured(body):  # the title/summary job's call
            return Reply(json={"title": "Bench title", "summary": "A bench session."})
        last = (body.get("messages") or [{}])[-1].get("content") or ""
        self.received[last] = time.perf_counter()
        if not last.startswith(DIRECT_PREFIX) and body.get("stream"):
            self.last_platform_request = body
        return Reply(chunks=self.draft_chunks if last.startswith(DRAFT_PREFIX) else QUESTION_CHUNKS)

    def start(self) -> str:
        quiet_logs()
        self.server = ScriptedLLMServer().start()
        self.server.responder = self._respond
        return self.server.base_url

    def platform_request(self) -> dict[str, Any] | None:
        """The last streamed request the platform sent (the direct client replays its messages)."""
        return self.last_platform_request

    def received_times(self) -> dict[str, float]:
        return dict(self.received)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


HOSTS: dict[str, Callable[..., Any]] = {"platform": PlatformHost, "order_platform": OrderPlatformHost, "llm": LLMHost}


def _host_main(conn, name: str, args: tuple) -> None:
    host = HOSTS[name](*args)
    try:
        started = host.start()
        settle_heap()  # so that this host's full collections do not pause the turns it serves
        conn.send(("ok", started))
        while True:
            try:
                method, call_args = conn.recv()
            except EOFError:  # the bench died: stop too
                break
            try:
                result = getattr(host, method)(*call_args)
                conn.send(("ok", result))
            except Exception:  # noqa: BLE001 - reported to the bench, which fails loudly
                conn.send(("error", traceback.format_exc()))
            if method == "stop":
                break
    except Exception:  # noqa: BLE001 - reported to the bench, which fails loudly
        conn.send(("error", traceback.format_exc()))


class Remote:
    """A host in its own process (so its Python work does not share this process's GIL)."""

    def __init__(self, name: str, *args: Any, start_timeout_s: float = 60.0) -> None:
        context = mp.get_context("spawn")
        self._conn, child = context.Pipe()
        self.process = context.Process(target=_host_main, args=(child, name, args), name=f"bench-{name}", daemon=True)
        self.process.start()
        self.base_url = self._reply(start_timeout_s)

    def _reply(self, timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        while not self._conn.poll(0.2):
            if not self.process.is_alive():
                raise RuntimeError(f"{self.process.name} exited with code {self.process.exitcode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.process.name}: no answer within {timeout_s:.0f} s")
        status, value = self._conn.recv()
        if status != "ok":
            raise RuntimeError(f"{self.process.name} failed:\n{value}")
        return value

    def call(self, method: str, *args: Any, timeout_s: float = 30.0) -> Any:
        self._conn.send((method, args))
        return self._reply(timeout_s)

    def stop(self) -> None:
        try:
            if self.process.is_alive():
                self.call("stop", timeout_s=15)
        except Exception as exc:  # noqa: BLE001
            print(f"  ({self.process.name} did not stop cleanly: {exc})", file=sys.stderr)
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


class Local:
    """The same host in this process (--in-process)."""

    def __init__(self, name: str, *args: Any) -> None:
        self.host = HOSTS[name](*args)
        self.base_url = self.host.start()
        self.process = None

    def call(self, method: str, *args: Any, timeout_s: float = 30.0) -> Any:
        return getattr(self.host, method)(*args)

    def stop(self) -> None:
        self.host.stop()
