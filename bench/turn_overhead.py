"""Platform overhead per turn, against an LLM that answers instantly.

    .venv/bin/python bench/turn_overhead.py [--sessions 50] [--database-url URL] [--profile wall|cpu]

What runs (all on loopback):
  * the scripted OpenAI-compatible server (tests/support/scripted_llm.py), in its own
    process, answering every request at once (no delay between streamed chunks);
  * a live platform server (tests/support/live.py `start_live_server`), in its own
    process: REST + Socket.IO, the in-process turn runner, the real openai client;
  * the clients, in this process: one python-socketio client (websocket transport) per
    session, joined with `start_session`, plus a requests session for REST.

Three phases:
  1. one session, --single-turns sequential question turns (after 3 warm-up turns);
  2. --sessions sessions in parallel threads, each sending --messages question turns in
     sequence; a question reply is `<user_language>en</user_language>
     <ask_user_primary_info>...</ask_user_primary_info>` streamed in 20 chunks;
  3. the same sessions in parallel, each asking once for a --draft-tokens draft:
     `<execution><title>T</title><draft>` + N word chunks + `</draft></execution>`.

Latencies are measured at the client from just before `PUT /user_message` is sent to
the arrival of the first `mojo_token` / the `mojo_message` of that turn. Throughput is
the draft "tokens" (the scripted word chunks, N per draft) delivered through
`draft_token` events, summed over clients, divided by the wall time from the first PUT
to the last `draft_message`; delivered characters per second are printed too. Each
client's concatenated `draft_token` deltas are checked against the final draft.

The database is a fresh temporary SQLite file by default. A Postgres URL may be given
instead: ITS `public` SCHEMA IS DROPPED AND RECREATED, then migrated to head.

The last line printed is machine readable (figures of the --sessions run):
    first_token_p50_ms=... first_token_p99_ms=... message_p50_ms=... tokens_per_s=...
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import io
import logging
import multiprocessing as mp
import os
import pstats
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from sqlalchemy import create_engine
from sqlalchemy import text as sql_text

from mojodex_core.config import normalise_database_url
from tests.support.live import Client, SocketRecorder, live_settings, start_live_server
from tests.support.scripted_llm import Reply, ScriptedLLMServer

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
DRAFT_PREFIX = "draft please: "


def draft_words(n: int) -> list[str]:
    return [f"word{i}" if i == 0 else f" word{i}" for i in range(n)]


def quiet_logs() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process, all threads (Linux /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def machine_cpu() -> tuple[float, float] | None:
    """(busy, total) jiffies of the whole machine, every process of every user included."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        return float(sum(values) - idle), float(sum(values))
    except (OSError, ValueError, IndexError):
        return None


def postgres_cpu_s() -> float | None:
    """CPU seconds of every local `postgres` process (all databases, other users' included)."""
    total, found = 0.0, False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() != "postgres":
                    continue
        except OSError:
            continue
        cpu = process_cpu_s(int(entry))
        if cpu is not None:
            total, found = total + cpu, True
    return total if found else None


class CpuMeter:
    """CPU used by each bench process over a phase, in cores (1.0 = one core busy all along)."""

    def __init__(self, pids: dict[str, int], postgres: bool = False) -> None:
        self.pids = pids
        self.postgres = postgres_cpu_s() if postgres else None
        self.wall = time.perf_counter()
        self.cpu = {name: process_cpu_s(pid) for name, pid in pids.items()}
        self.machine = machine_cpu()

    def summary(self) -> str:
        wall = time.perf_counter() - self.wall
        parts = []
        for name, pid in self.pids.items():
            now, before = process_cpu_s(pid), self.cpu[name]
            if now is not None and before is not None:
                parts.append(f"{name} {(now - before) / wall:.2f}")
        if self.postgres is not None:
            # Backends that exited during the phase are missed; new ones count from zero.
            now = postgres_cpu_s()
            if now is not None:
                parts.append(f"postgres server {max(now - self.postgres, 0.0) / wall:.2f}")
        machine = machine_cpu()
        if machine and self.machine:
            busy = (machine[0] - self.machine[0]) / max(machine[1] - self.machine[1], 1.0)
            parts.append(
                f"whole machine {busy * (os.cpu_count() or 1):.2f} of {os.cpu_count()} "
                f"(other users' processes included)"
            )
        return "CPU in cores: " + ", ".join(parts) if parts else ""


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


class StackSampler:
    """A poor man's py-spy: samples every thread's Python stack every interval.

    Blocked threads are sampled too (their Python frame is the one that blocked), so
    inclusive counts are wall-time shares, not CPU shares.
    """

    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self.ticks = 0
        self.groups: Counter[str] = Counter()
        self.inclusive: Counter[tuple[str, str]] = Counter()
        self.leaf: Counter[tuple[str, str]] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @staticmethod
    def _where(filename: str) -> str:
        if filename.startswith(str(REPO_ROOT)):
            return filename[len(str(REPO_ROOT)) + 1 :]
        parts = Path(filename).parts
        return "/".join(parts[-2:])

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval_s):
            names = {t.ident: t.name for t in threading.enumerate()}
            self.ticks += 1
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                group = re.sub(r"\d+", "N", names.get(ident, "?"))
                funcs: list[str] = []
                f = frame
                while f is not None and len(funcs) < 100:
                    code = f.f_code
                    funcs.append(f"{self._where(code.co_filename)}:{code.co_qualname}")
                    f = f.f_back
                self.groups[group] += 1
                self.leaf[(group, f"{funcs[0]}:{frame.f_lineno}")] += 1
                for fn in set(funcs):
                    self.inclusive[(group, fn)] += 1

    def report(self) -> str:
        self._stop.set()
        self._thread.join(timeout=2)
        lines = [f"stack samples: {self.ticks} ticks every {self.interval_s * 1000:.0f} ms"]
        turn_key = ("turn_N", "mojodex_core/execution/turn.py:InstructTurn.__call__")
        busy = self.inclusive.get(turn_key, 0)
        if busy:
            lines.append(
                f"turn threads inside InstructTurn.__call__: {busy} samples "
                f"(= {busy / max(self.ticks, 1):.1f} turns in flight on average); share of that time:"
            )
            rows = sorted(((fn, n) for (g, fn), n in self.inclusive.items() if g == "turn_N"), key=lambda r: -r[1])
            for fn, n in rows[:25]:
                lines.append(f"  {100 * n / busy:5.1f}%  {fn}")
            lines.append("turn threads, platform code only (>= 0.5%):")
            for fn, n in rows:
                if fn.startswith(("mojodex_core/", "backend/", "background/")) and n >= busy / 200:
                    lines.append(f"  {100 * n / busy:5.1f}%  {fn}")
            lines.append("turn threads, innermost frames (wall time, blocked included):")
            rows = [(fn, n) for (g, fn), n in self.leaf.items() if g == "turn_N"]
            for fn, n in sorted(rows, key=lambda r: -r[1])[:20]:
                lines.append(f"  {100 * n / busy:5.1f}%  {fn}")
        lines.append("other thread groups (samples; top innermost frames):")
        for group, total in self.groups.most_common(12):
            if group == "turn_N":
                continue
            top = sorted(((fn, n) for (g, fn), n in self.leaf.items() if g == group), key=lambda r: -r[1])[:4]
            lines.append(f"  {group}: {total}")
            for fn, n in top:
                lines.append(f"      {100 * n / total:5.1f}%  {fn}")
        return "\n".join(lines)


class CpuProfiler:
    """cProfile with a per-thread CPU clock around each turn and each REST request.

    Times are CPU seconds of the thread (time.thread_time), so waiting for the GIL, a lock
    or the database is not counted; cProfile's own overhead inflates small functions.
    Socket.IO work done on the turn threads (emits) is included; websocket threads are not.
    """

    def __init__(self) -> None:
        self.active = True
        self._lock = threading.Lock()
        self._profiles: list[cProfile.Profile] = []
        self.calls: Counter[str] = Counter()

    def wrap(self, fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return fn(*args, **kwargs)
            profile = cProfile.Profile(time.thread_time)
            profile.enable()
            try:
                return fn(*args, **kwargs)
            finally:
                profile.disable()
                with self._lock:
                    if self.active:
                        self._profiles.append(profile)
                        self.calls[label] += 1

        return wrapper

    def report(self) -> str:
        with self._lock:
            self.active = False
            profiles = list(self._profiles)
        if not profiles:
            return "cpu profile: nothing recorded"
        stats = pstats.Stats(*profiles, stream=io.StringIO())
        stats.strip_dirs()
        total = stats.total_tt
        per_turn = 1000 * total / max(self.calls.get("turn", 1), 1)
        lines = [f"cpu profile: {dict(self.calls)}, {total:.2f} CPU-s recorded ({per_turn:.1f} ms per turn)"]
        for key, title, limit in (("cumulative", "by cumulative CPU", 45), ("tottime", "by own CPU", 25)):
            out = io.StringIO()
            stats.stream = out
            stats.sort_stats(key).print_stats(limit)
            body = out.getvalue()
            body = body[body.find("ncalls") :] if "ncalls" in body else body
            lines.append(f"-- {title}\n{body.rstrip()}")
        return "\n".join(lines)


class PlatformHost:
    """The platform server under test (tests.support.live), production timeouts."""

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
            self.sampler = StackSampler(0.01)
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


class LLMHost:
    """The scripted LLM: question replies, or a draft when the user text asks for one."""

    def __init__(self, draft_tokens: int) -> None:
        self.draft_chunks = ["<execution><title>T</title><draft>", *draft_words(draft_tokens), "</draft></execution>"]
        self.received: dict[str, float] = {}  # user text -> when its request reached the LLM
        self.server: ScriptedLLMServer | None = None

    def _respond(self, body: dict[str, Any]) -> Reply:
        last = (body.get("messages") or [{}])[-1].get("content") or ""
        self.received[last] = time.perf_counter()
        return Reply(chunks=self.draft_chunks if last.startswith(DRAFT_PREFIX) else QUESTION_CHUNKS)

    def start(self) -> str:
        quiet_logs()
        self.server = ScriptedLLMServer().start()
        self.server.responder = self._respond
        return self.server.base_url

    def received_times(self) -> dict[str, float]:
        return dict(self.received)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


HOSTS: dict[str, Callable[..., Any]] = {"platform": PlatformHost, "llm": LLMHost}


def _host_main(conn, name: str, args: tuple) -> None:
    host = HOSTS[name](*args)
    try:
        conn.send(("ok", host.start()))
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


# --------------------------------------------------------------------------- clients


@dataclass
class TimedRecorder(SocketRecorder):
    """SocketRecorder that also stamps each event with its arrival time (perf_counter)."""

    times: list[float] = field(default_factory=list)

    def _record(self, event: str, data: Any = None) -> None:
        now = time.perf_counter()
        with self._cond:
            self.events.append((event, data))
            self.times.append(now)
            self._cond.notify_all()


@dataclass
class BenchSession:
    index: int
    client: Client
    socket: TimedRecorder
    session_id: str
    pk: int
    sent: int = 0


@dataclass
class TurnResult:
    kind: str  # "question" | "draft"
    text: str
    t_put: float
    t_put_done: float = 0.0
    t_first: float | None = None
    t_final: float | None = None
    token_events: int = 0
    delta_chars: int = 0
    error: str | None = None
    content_ok: bool | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.t_final is not None

    def ms(self, until: float | None) -> float | None:
        return None if until is None else (until - self.t_put) * 1000


def new_session(index: int, factory, base_url: str) -> BenchSession:
    """A user of its own (as LiveServer.new_user does), an execution, a joined socket."""
    from mojodex_core.db import transaction
    from mojodex_core.users import create_user, grant, issue_token

    with transaction(factory) as db:
        user = create_user(db, name=f"Bench {index}", email=f"bench{uuid.uuid4().hex[:12]}@example.com")
        token = issue_token(db, user)
        grant(db, user, ["test_email"])
        user_id = user.user_id
    client = Client(base_url, token, user_id)
    execution = client.new_execution()
    socket = TimedRecorder(base_url, token)
    joined = socket.start_session(execution["session_id"])
    if not isinstance(joined, dict) or joined.get("session_id") != execution["session_id"]:
        raise RuntimeError(f"start_session failed: {joined!r}")
    return BenchSession(index, client, socket, execution["session_id"], execution["user_task_execution_pk"])


def run_turn(session: BenchSession, kind: str, expected: str, timeout_s: float) -> TurnResult:
    session.sent += 1
    prefix = DRAFT_PREFIX if kind == "draft" else "answer: "
    text = f"{prefix}session {session.index} turn {session.sent} {uuid.uuid4().hex[:8]}"
    final_name, token_name = ("draft_message", "draft_token") if kind == "draft" else ("mojo_message", "mojo_token")
    socket = session.socket
    with socket._cond:
        start = len(socket.events)
    result = TurnResult(kind, text, time.perf_counter())
    try:
        response = session.client.call(
            "PUT",
            "/user_message",
            json={
                "session_id": session.session_id,
                "user_task_execution_pk": session.pk,
                "text": text,
                "message_id": uuid.uuid4().hex,
            },
        )
    except Exception as exc:  # noqa: BLE001
        result.error = f"PUT failed: {exc!r}"
        return result
    result.t_put_done = time.perf_counter()
    if response.status_code != 200:
        result.error = f"PUT /user_message: {response.status_code} {response.text[:200]}"
        return result
    message_pk = response.json()["message_pk"]
    cursor = {"i": start}

    def answered(events: list[tuple[str, Any]]) -> bool:
        while cursor["i"] < len(events):
            name, data = events[cursor["i"]]
            if name in (final_name, "error") and isinstance(data, dict) and data.get("user_message_pk") == message_pk:
                return True
            cursor["i"] += 1
        return False

    try:
        socket.wait_for(answered, timeout=timeout_s)
    except AssertionError:
        result.error = f"no {final_name} within {timeout_s:.0f} s"
        return result
    with socket._cond:
        end = cursor["i"] + 1
        events = socket.events[start:end]
        times = socket.times[start:end]
    final_event, final = events[-1]
    if final_event == "error":
        result.error = f"error event: {final.get('error')}"
        return result
    result.t_final = times[-1]
    deltas: list[str] = []
    for (name, data), t in zip(events, times, strict=False):
        if name == token_name:
            if result.t_first is None:
                result.t_first = t
            result.token_events += 1
            result.delta_chars += len(data.get("delta") or "")
            if kind == "question" or data.get("part") == "draft":
                deltas.append(data.get("delta") or "")
    streamed = "".join(deltas)
    if kind == "draft":
        result.content_ok = streamed == final.get("produced_text") == expected
    else:
        result.content_ok = streamed == final.get("text") == expected
    return result


# --------------------------------------------------------------------------- reporting


def summarize(
    label: str, results: list[TurnResult], llm_received: dict[str, float], wall_s: float, cpu: str = ""
) -> dict[str, float]:
    ok = [r for r in results if r.ok]
    first = [r.ms(r.t_first) for r in ok if r.t_first is not None]
    final = [r.ms(r.t_final) for r in ok]
    put = [(r.t_put_done - r.t_put) * 1000 for r in ok]
    pre_llm = [(llm_received[r.text] - r.t_put) * 1000 for r in ok if r.text in llm_received]
    llm_to_first = [(r.t_first - llm_received[r.text]) * 1000 for r in ok if r.text in llm_received and r.t_first]
    token_events = [r.token_events for r in ok]
    bad_content = sum(1 for r in ok if not r.content_ok)
    print(
        f"\n== {label}: {len(results)} turns in {wall_s:.2f} s ({len(results) / wall_s:.1f} turns/s), "
        f"{len(results) - len(ok)} failed, {bad_content} with streamed text != final text"
    )
    if cpu:
        print(f"   {cpu}")

    def row(name: str, values: list[float]) -> None:
        if values:
            print(
                f"   {name:<42} p50 {percentile(values, 50):8.1f} ms   p99 {percentile(values, 99):8.1f} ms"
                f"   max {max(values):8.1f} ms"
            )

    row("PUT sent -> first token event", first)
    row("PUT sent -> final message event", final)
    row("  PUT sent -> PUT response", put)
    row("  PUT sent -> LLM request received", pre_llm)
    row("  LLM request received -> first token event", llm_to_first)
    streaming = [(r.t_final - llm_received[r.text]) * 1000 for r in ok if r.text in llm_received and r.kind == "draft"]
    row("  LLM request received -> draft_message", streaming)
    if token_events:
        print(
            "   token events per turn (30 ms coalescing, as in live_settings): "
            f"p50 {percentile(token_events, 50):.0f}, max {max(token_events)}"
        )
    for r in results:
        if not r.ok:
            print(f"   failure: {r.error}")
            break
    return {
        "first_p50": percentile(first, 50),
        "first_p99": percentile(first, 99),
        "final_p50": percentile(final, 50),
        "final_p99": percentile(final, 99),
        "failed": len(results) - len(ok),
        "bad_content": bad_content,
        "stream_p50_ms": percentile(streaming, 50) if streaming else float("nan"),
    }


def in_parallel(
    sessions: list[BenchSession], work: Callable[[BenchSession], list[TurnResult]]
) -> tuple[list[TurnResult], float]:
    barrier = threading.Barrier(len(sessions) + 1)
    outputs: list[list[TurnResult]] = [[] for _ in sessions]
    errors: list[str] = []

    def body(i: int, session: BenchSession) -> None:
        barrier.wait()
        try:
            outputs[i] = work(session)
        except Exception:  # noqa: BLE001
            errors.append(traceback.format_exc())

    threads = [
        threading.Thread(target=body, args=(i, s), name=f"client-{i}", daemon=True) for i, s in enumerate(sessions)
    ]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    for e in errors[:1]:
        print(f"   client thread crashed:\n{e}")
    return [r for out in outputs for r in out], wall


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions (default 50)")
    parser.add_argument(
        "--database-url",
        default=None,
        help="default: a temp SQLite file; a Postgres URL has its public schema DROPPED and recreated",
    )
    parser.add_argument("--single-turns", type=int, default=30, help="sequential turns of the 1-session run")
    parser.add_argument("--messages", type=int, default=5, help="question turns per session in the concurrent run")
    parser.add_argument("--draft-tokens", type=int, default=500, help="word chunks per streamed draft")
    parser.add_argument("--turn-timeout", type=float, default=60.0, help="max seconds to wait for one answer")
    parser.add_argument("--deadline", type=float, default=170.0, help="hard stop of the whole bench, seconds")
    parser.add_argument(
        "--profile",
        choices=("wall", "cpu"),
        default=None,
        help="profile the server during the concurrent runs: 'wall' samples every thread's stack "
        "(blocked time included), 'cpu' runs cProfile on a CPU clock around turns and requests "
        "(slows the server several times: read proportions, not times; may pass --deadline)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the platform and the scripted LLM in this process (shared GIL with the clients)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_logs()
    bench_started = time.perf_counter()
    hosts: list[Any] = []
    tmpdirs: list[str] = []

    def hard_stop() -> None:
        print(f"\nbench: deadline of {args.deadline:.0f} s reached, aborting", file=sys.stderr, flush=True)
        for host in hosts:
            if host.process is not None and host.process.is_alive():
                host.process.kill()
        for path in tmpdirs:
            shutil.rmtree(path, ignore_errors=True)
        os._exit(3)

    watchdog = threading.Timer(args.deadline, hard_stop)
    watchdog.daemon = True
    watchdog.start()

    database_url, tmpdir = prepare_database(args.database_url)
    if tmpdir:
        tmpdirs.append(tmpdir)
    db_kind = "postgres" if database_url.startswith("postgresql") else "sqlite"
    print(
        f"bench: database {db_kind} ({masked(database_url)}), {os.cpu_count()} cores, "
        f"{'single process' if args.in_process else 'platform, LLM and clients in 3 processes'}"
    )
    sessions: list[BenchSession] = []
    exit_code = 0
    try:
        make_host = Local if args.in_process else Remote
        llm = make_host("llm", args.draft_tokens)
        hosts.append(llm)
        platform = make_host("platform", database_url, llm.base_url)
        hosts.append(platform)
        print(
            f"bench: platform {platform.base_url}, scripted LLM {llm.base_url} "
            f"(ready after {time.perf_counter() - bench_started:.1f} s)"
        )

        from mojodex_core.db import make_engine, make_session_factory

        engine = make_engine(database_url)
        factory = make_session_factory(engine)
        count = max(args.sessions, 1)
        with ThreadPoolExecutor(max_workers=8) as pool:
            sessions = list(pool.map(lambda i: new_session(i, factory, platform.base_url), range(count)))
        engine.dispose()
        print(f"bench: {count} sessions created and joined (t={time.perf_counter() - bench_started:.1f} s)")

        draft_text = "".join(draft_words(args.draft_tokens))

        if args.in_process:
            pids = {"bench (single process)": os.getpid()}
        else:
            pids = {"platform": platform.process.pid, "scripted LLM": llm.process.pid, "clients": os.getpid()}

        # 1. one session, sequential turns
        one = sessions[0]
        for _ in range(3):
            run_turn(one, "question", QUESTION_TEXT, args.turn_timeout)
        meter = CpuMeter(pids, db_kind == "postgres")
        started = time.perf_counter()
        single = [run_turn(one, "question", QUESTION_TEXT, args.turn_timeout) for _ in range(args.single_turns)]
        single_wall = time.perf_counter() - started
        single_cpu = meter.summary()

        # 2. all sessions in parallel, question turns
        if args.profile:
            platform.call("profile_start", args.profile)
        meter = CpuMeter(pids, db_kind == "postgres")
        questions, questions_wall = in_parallel(
            sessions,
            lambda s: [run_turn(s, "question", QUESTION_TEXT, args.turn_timeout) for _ in range(args.messages)],
        )
        questions_cpu = meter.summary()
        profile_questions = platform.call("profile_stop") if args.profile else ""

        # 3. all sessions in parallel, one streamed draft each
        if args.profile:
            platform.call("profile_start", args.profile)
        meter = CpuMeter(pids, db_kind == "postgres")
        drafts, drafts_wall = in_parallel(sessions, lambda s: [run_turn(s, "draft", draft_text, args.turn_timeout)])
        drafts_cpu = meter.summary()
        profile_drafts = platform.call("profile_stop") if args.profile else ""

        received = llm.call("received_times")
        print(
            f"\nbench: scripted LLM answering instantly; latencies measured at the clients "
            f"(total bench time so far {time.perf_counter() - bench_started:.1f} s)"
        )
        s1 = summarize(
            f"1 session, {args.single_turns} sequential question turns", single, received, single_wall, single_cpu
        )
        sn = summarize(
            f"{count} sessions in parallel x {args.messages} sequential question turns",
            questions,
            received,
            questions_wall,
            questions_cpu,
        )
        sd = summarize(
            f"{count} sessions in parallel x 1 streamed draft of {args.draft_tokens} tokens",
            drafts,
            received,
            drafts_wall,
            drafts_cpu,
        )

        ok_drafts = [r for r in drafts if r.ok]
        tokens_per_s = chars_per_s = float("nan")
        if ok_drafts:
            wall = max(r.t_final for r in ok_drafts) - min(r.t_put for r in drafts)
            delivered_tokens = args.draft_tokens * sum(1 for r in ok_drafts if r.content_ok)
            chars = sum(r.delta_chars for r in ok_drafts)
            tokens_per_s = delivered_tokens / wall
            chars_per_s = chars / wall
            events = sum(r.token_events for r in ok_drafts)
            print(
                f"   draft throughput: {delivered_tokens} tokens (scripted chunks, {args.draft_tokens} per draft, "
                f"counted for correct drafts only) in {wall:.2f} s = {tokens_per_s:.0f} tokens/s; "
                f"{chars} delta chars = {chars_per_s:.0f} chars/s; {events} draft_token events"
            )
            print(
                f"   one stream, LLM request -> draft_message: p50 {sd['stream_p50_ms']:.0f} ms "
                f"= {args.draft_tokens / (sd['stream_p50_ms'] / 1000):.0f} tokens/s per session while "
                f"{count} stream at once"
            )
        correct = sum(1 for r in ok_drafts if r.content_ok)
        print(
            f"   correctness: {correct}/{len(drafts)} clients' concatenated draft_token deltas equal the final draft"
            f" ({'OK' if correct == len(drafts) else 'MISMATCH'})"
        )
        if profile_questions:
            print(f"\n== server profile, {count} sessions question turns\n{profile_questions}")
        if profile_drafts:
            print(f"\n== server profile, {count} sessions drafts\n{profile_drafts}")
        failures = s1["failed"] + sn["failed"] + sd["failed"] + s1["bad_content"] + sn["bad_content"]
        if failures or correct != len(drafts):
            exit_code = 1
        print(f"\nbench: done in {time.perf_counter() - bench_started:.1f} s ({db_kind})")
        print(
            f"first_token_p50_ms={sn['first_p50']:.1f} first_token_p99_ms={sn['first_p99']:.1f} "
            f"message_p50_ms={sn['final_p50']:.1f} tokens_per_s={tokens_per_s:.0f}",
            flush=True,
        )
    finally:
        # A client disconnect waits up to 3 s for the server's websocket close frame: all at once.
        with ThreadPoolExecutor(max_workers=max(len(sessions), 1)) as pool:
            list(pool.map(lambda s: s.socket.close(), sessions))
        for host in reversed(hosts):
            host.stop()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        watchdog.cancel()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
