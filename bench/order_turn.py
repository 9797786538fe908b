"""Order-task turn latency over the live API, deterministic path (no LLM configured).

    .venv/bin/python bench/order_turn.py [--turns 200] [--sessions 20] [--session-turns 20] [--database-url URL]
                                         [--live [--in-process] [--profile wall|cpu]]

The platform runs as production runs it: `mojodex serve` (gunicorn's gevent worker, access
log and INFO logs on; bench/_production.py), with no LLM, in a process of its own, on a fresh
SQLite file (or the given database: a Postgres URL has its `public` SCHEMA DROPPED AND
RECREATED), with the shipped order tasks loaded. `--live` runs the test suite's server
instead (tests/support/live.py: werkzeug, in a child process, or in this one with
--in-process), which `--profile` needs: it hooks into that server's runner and app.

A turn is timed at the client from just before `PUT /user_message` to the arrival of that
message's `mojo_message` event on the session's Socket.IO client. Each session replays the
seed's first example conversation (an order up to its ticket), then starts a new order; before
the sessions are timed, they warm up.

Phase 1: one session, --turns sequential turns. Phase 2: --sessions sessions in parallel
threads, --session-turns turns each. The split of the client-side time: the PUT round trip
(the request path: auth, ownership, the idempotent insert) and the rest (runner hand-off,
the turn, the Socket.IO emit). The split of the server-side time comes from the audit
(`timings_ms`: parse, supervisor, update, response from the engine, persistence from the
platform) and `latency_ms` (the whole turn in the runner).

The last line is machine readable:
    order_turn_p50_ms_1=... order_turn_p99_ms_1=... order_turn_p50_ms_20=... order_turn_p99_ms_20=...
(the suffix is the --sessions value).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._clients import new_user  # noqa: E402
from bench._hosts import Local, Remote, masked, prepare_database, quiet_logs  # noqa: E402
from bench._measure import CpuMeter, percentile  # noqa: E402
from bench._production import ProductionServer  # noqa: E402
from tests.order_platform.conftest import store_order_specs  # noqa: E402
from tests.support.live import Client  # noqa: E402

SCRIPT = (
    "Hi, I'd like an everything bagel with lox and a large iced latte",
    "yes please",
    "delivery please",
    "12 Main Street, Springfield",
    "that's it",
    "Dana",
    "dana@example.com",
    "cash on delivery",
    "yes",
)
SPLIT_KEYS = ("parse", "supervisor", "update", "response", "persistence")


class OrderSession:
    """One customer replaying SCRIPT over and over, one order execution per replay."""

    def __init__(self, platform: Any) -> None:
        token, user_id = platform.call("new_user", ["order_bagel_shop"])
        self.client = Client(platform.base_url, token, user_id)
        self.task_pk = self.client.user_task_pk("order_bagel_shop")
        self.socket = self.client.socket()
        self.cond = threading.Condition()
        self.arrivals: dict[int, float] = {}  # user_message_pk -> arrival of its reply
        self.socket.client.on("mojo_message", self._on_reply)
        self.socket.client.on("error", self._on_reply)
        self.executions: list[int] = []
        self.position = len(SCRIPT)

    def _on_reply(self, data: Any = None) -> None:
        now = time.perf_counter()
        if isinstance(data, dict) and data.get("user_message_pk") is not None:
            with self.cond:
                self.arrivals[data["user_message_pk"]] = now
                self.cond.notify_all()

    def _new_order(self) -> None:
        created = self.client.ok("PUT", "/user_task_execution", json={"user_task_pk": self.task_pk})
        self.pk, self.session_id = created["user_task_execution_pk"], created["session_id"]
        self.socket.start_session(self.session_id)
        self.client.ok("POST", "/user_task_execution_run", json={"user_task_execution_pk": self.pk})
        self.executions.append(self.pk)
        self.position = 0

    def turn(self) -> tuple[float, float]:
        """One timed turn: (PUT round trip, PUT to reply) in ms; a new order is started first when
        the last one ended."""
        if self.position >= len(SCRIPT):
            self._new_order()
        text = SCRIPT[self.position]
        self.position += 1
        started = time.perf_counter()
        response = self.client.call("PUT", "/user_message", json={
            "session_id": self.session_id, "user_task_execution_pk": self.pk, "text": text,
            "message_id": uuid.uuid4().hex,
        })
        put_done = time.perf_counter()
        if response.status_code != 200:
            raise RuntimeError(f"PUT /user_message: {response.status_code} {response.text}")
        message_pk = response.json()["message_pk"]
        with self.cond:
            if not self.cond.wait_for(lambda: message_pk in self.arrivals, timeout=30):
                raise RuntimeError(f"no reply to {text!r} within 30 s")
            return (put_done - started) * 1000, (self.arrivals[message_pk] - started) * 1000

    def audit(self) -> list[dict[str, Any]]:
        entries = []
        for pk in self.executions:
            entries += self.client.ok("GET", "/order/audit", params={"user_task_execution_pk": pk})["turns"]
        return entries

    def close(self) -> None:
        self.socket.close()


class ProductionOrderHost:
    """`mojodex serve` with the shipped order tasks stored and no LLM; users made in the database."""

    def __init__(self, database_url: str) -> None:
        import tempfile

        from mojodex_core.db import make_engine, make_session_factory

        self._engine = make_engine(database_url)
        self._factory = make_session_factory(self._engine)
        store_order_specs(self._factory)
        self._var_dir = Path(tempfile.mkdtemp(prefix="mojodex-bench-var-"))
        try:
            self.server = ProductionServer(database_url, None, self._var_dir)
        except BaseException:
            self._engine.dispose()
            shutil.rmtree(self._var_dir, ignore_errors=True)
            raise
        self.base_url = self.server.base_url
        self.worker_pid = self.server.worker_pid()

    def call(self, method: str, *args: Any, timeout_s: float = 30.0) -> Any:  # noqa: ARG002 - as Remote's
        return getattr(self, method)(*args)

    def new_user(self, tasks: list[str]) -> tuple[str, str]:
        return new_user(self._factory, "Order bench", tasks)

    def stop(self) -> None:
        try:
            problems = self.server.problems()
            if problems:
                print(f"  server log, not INFO:\n{problems}", file=sys.stderr)
            self.server.stop()
        finally:
            self._engine.dispose()
            shutil.rmtree(self._var_dir, ignore_errors=True)


class Phase:
    def __init__(self, latencies: list[tuple[float, float]], audit: list[dict], wall_s: float, cpu: str) -> None:
        self.put = [put for put, _ in latencies]
        self.turn = [turn for _, turn in latencies]
        self.audit = audit
        self.wall_s = wall_s
        self.cpu = cpu


def run_phase(platform: Any, sessions: int, turns_each: int, warmup: int, meter_pids: dict[str, int]) -> Phase:
    clients = [OrderSession(platform) for _ in range(sessions)]
    for client in clients:
        for _ in range(warmup):
            client.turn()
    for client in clients:
        client.executions = client.executions[-1:]  # keep the audit of timed turns only (roughly)
    latencies: list[list[tuple[float, float]]] = [[] for _ in clients]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            for _ in range(turns_each):
                latencies[i].append(clients[i].turn())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(sessions)]
    meter = CpuMeter(meter_pids)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall_s = time.perf_counter() - meter.wall
    cpu = meter.summary()
    if errors:
        raise errors[0]
    audit = [entry for client in clients for entry in client.audit()]
    for client in clients:
        client.close()
    return Phase([ms for per in latencies for ms in per], audit, wall_s, cpu)


def split(audit: list[dict]) -> str:
    parts = []
    for key in SPLIT_KEYS:
        values = [e["timings_ms"].get(key) for e in audit if e.get("timings_ms", {}).get(key) is not None]
        parts.append(f"{key} p50={percentile(values, 50):.2f}")
    server = [e["latency_ms"] for e in audit if e.get("latency_ms") is not None]
    parts.append(f"runner turn p50={percentile(server, 50):.2f} p99={percentile(server, 99):.2f}")
    return ", ".join(parts) + " (ms)"


def report(label: str, phase: Phase) -> tuple[float, float]:
    p50, p99 = percentile(phase.turn, 50), percentile(phase.turn, 99)
    rest = [turn - put for put, turn in zip(phase.put, phase.turn, strict=True)]
    mean = sum(phase.turn) / max(len(phase.turn), 1)
    print(f"{label}, {len(phase.turn)} turns in {phase.wall_s:.1f} s ({len(phase.turn) / phase.wall_s:.0f} turns/s): "
          f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, mean {mean:.2f} ms")
    print(f"  client split: PUT round trip p50={percentile(phase.put, 50):.2f} p99={percentile(phase.put, 99):.2f}, "
          f"PUT response -> mojo_message p50={percentile(rest, 50):.2f} p99={percentile(rest, 99):.2f} (ms)")
    print(f"  server split: {split(phase.audit)}")
    if phase.cpu:
        print(f"  {phase.cpu}")
    return p50, p99


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="timed turns of the single session")
    parser.add_argument("--sessions", type=int, default=20, help="concurrent sessions of phase 2")
    parser.add_argument("--session-turns", type=int, default=20, help="timed turns per concurrent session")
    parser.add_argument("--warmup", type=int, default=16, help="untimed turns per session first")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--live", action="store_true",
                        help="the test suite's werkzeug server instead of `mojodex serve` (needed by --profile)")
    parser.add_argument("--in-process", action="store_true",
                        help="with --live: run the server in this process (shared GIL)")
    parser.add_argument("--profile", choices=("wall", "cpu"), default=None,
                        help="with --live: profile the server in each phase ('wall': stack samples, 'cpu': cProfile)")
    args = parser.parse_args(argv)
    if (args.in_process or args.profile) and not args.live:
        parser.error("--in-process and --profile need --live")

    quiet_logs()
    url, tmpdir = prepare_database(args.database_url)
    try:
        pids = {"bench (clients)": os.getpid()}
        if not args.live:
            platform: Any = ProductionOrderHost(url)
            pids["platform"] = platform.worker_pid
            where = "`mojodex serve` in its own process"
        else:
            platform = (Local if args.in_process else Remote)("order_platform", url)
            if platform.process is not None:
                pids["platform"] = platform.process.pid
            where = "werkzeug " + ("in this process" if args.in_process else "in its own process")
        print(f"bench: database {'postgres' if url.startswith('postgresql') else 'sqlite'} ({masked(url)}), "
              f"server {where}, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        profiles = {}
        try:
            if args.profile:
                platform.call("profile_start", args.profile)
            one = run_phase(platform, 1, args.turns, args.warmup, pids)
            if args.profile:
                profiles["1 session"] = platform.call("profile_stop", timeout_s=120)
                platform.call("profile_start", args.profile)
            many = run_phase(platform, args.sessions, args.session_turns, max(2, args.warmup // 4), pids)
            if args.profile:
                profiles[f"{args.sessions} sessions"] = platform.call("profile_stop", timeout_s=120)
        finally:
            platform.stop()
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    n = args.sessions
    p50_1, p99_1 = report("1 session", one)
    p50_n, p99_n = report(f"{n} sessions", many)
    for label, profile in profiles.items():
        print(f"== server profile, {label} (warm-up turns included)\n{profile}")
    print(f"order_turn_p50_ms_1={p50_1:.2f} order_turn_p99_ms_1={p99_1:.2f} "
          f"order_turn_p50_ms_{n}={p50_n:.2f} order_turn_p99_ms_{n}={p99_n:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
