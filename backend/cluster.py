"""`make run-cluster`: the distributed topology natively on one machine (no Docker engine needed).

Starts N backend processes (``mojodex serve``, one gunicorn worker each, as Flask-SocketIO
requires), M Celery workers and one Celery beat, all with MOJODEX_RUNNER=celery against the
REDIS_URL and DATABASE_URL of the environment (Redis and Postgres must already run). Prints one
line per backend, ``backend: http://127.0.0.1:PORT``, once it answers /health. Ctrl-C stops all.

The test suite drives the same class (tests/distributed/) to kill workers and backends.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import requests

from mojodex_core.config import PROJECT_ROOT, VAR_DIR, _secret


def free_port(preferred: int = 0) -> int:
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError("no free port")


@dataclass
class Role:
    name: str
    process: subprocess.Popen
    log_path: Path
    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.process.poll() is None


@dataclass
class Cluster:
    env: dict[str, str]
    log_dir: Path
    backends: int = 2
    workers: int = 2
    worker_concurrency: int = 4
    first_port: int = 0
    roles: list[Role] = field(default_factory=list)
    _logs: list[IO] = field(default_factory=list)

    def _spawn(self, name: str, argv: list[str], port: int | None = None, extra: dict | None = None) -> Role:
        env = {**os.environ, **self.env, "MOJODEX_RUNNER": "celery", **(extra or {})}
        if port is not None:
            env["MOJODEX_PORT"] = str(port)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._logs.append(log)
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=PROJECT_ROOT,
                                   start_new_session=True)
        role = Role(name, process, log_path, port)
        self.roles.append(role)
        return role

    def start_backend(self, index: int, port: int = 0) -> Role:
        port = free_port(port)
        argv = [sys.executable, "-m", "backend.cli", "serve"]
        return self._spawn(f"backend{index}", argv, port=port)

    def start_worker(self, index: int) -> Role:
        return self._spawn(f"worker{index}", [
            sys.executable, "-m", "celery", "-A", "background.distributed.worker", "worker",
            "--pool", "threads", "--concurrency", str(self.worker_concurrency), "--hostname", f"worker{index}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO",
        ])

    def start_beat(self) -> Role:
        schedule = self.log_dir / "celerybeat-schedule"
        return self._spawn("beat", [
            sys.executable, "-m", "celery", "-A", "background.distributed.worker", "beat",
            "--schedule", str(schedule), "--max-interval", "1", "--loglevel", "INFO",
        ])

    def start(self, timeout: float = 60.0) -> list[Role]:
        backends = []
        for i in range(self.backends):
            preferred = self.first_port + i if self.first_port else 0
            backends.append(self.start_backend(i + 1, preferred))
        for i in range(self.workers):
            self.start_worker(i + 1)
        self.start_beat()
        for backend in backends:
            self.wait_serving(backend, timeout)
        return backends

    @staticmethod
    def wait_serving(role: Role, timeout: float = 60.0) -> None:
        """Until the role answers /health (it exiting, or the timeout, raises with its log's end)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not role.alive():
                raise RuntimeError(f"{role.name} exited: {role.log_path.read_text()[-2000:]}")
            try:
                if requests.get(role.url + "/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{role.name} did not serve in {timeout:.0f} s: {role.log_path.read_text()[-2000:]}")

    def role(self, name: str) -> Role:
        return next(r for r in self.roles if r.name == name)

    def kill(self, role: Role, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(role.process.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGKILL:
            role.process.wait(10)

    def stop(self) -> None:
        for role in self.roles:
            if role.alive():
                try:
                    os.killpg(role.process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 15
        for role in self.roles:
            try:
                role.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                self.kill(role)
        for log in self._logs:
            log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--log-dir", type=Path, default=PROJECT_ROOT / "var" / "cluster")
    args = parser.parse_args()
    missing = [v for v in ("REDIS_URL", "DATABASE_URL") if not os.environ.get(v)]
    if missing:
        sys.exit(f"run-cluster needs {' and '.join(missing)} (Redis and Postgres must be running)")
    # Secrets as under `make run` (kept in var/), given to every process; no process is "embedded",
    # so no backend starts a local model of its own: the workers run the turns.
    var_dir = Path(os.environ.get("MOJODEX_VAR_DIR") or VAR_DIR)
    env = {name: os.environ.get(name) or _secret(os.environ, name, True, var_dir)
           for name in ("MOJODEX_ADMIN_SECRET", "MOJODEX_SECRET_KEY")}
    env["MOJODEX_EMBEDDED"] = "0"
    if not (os.environ.get("MOJODEX_LLM_BASE_URL") or os.environ.get("MOJODEX_LLM_API_KEY")
            or os.environ.get("OPENAI_API_KEY")):
        print("no LLM configured: turns will answer 'No LLM configured' (set MOJODEX_LLM_BASE_URL)", flush=True)
    cluster = Cluster(env=env, log_dir=args.log_dir, backends=args.backends, workers=args.workers,
                      first_port=int(os.environ.get("MOJODEX_PORT") or 5001))
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        for backend in cluster.start():
            print(f"backend: {backend.url}", flush=True)
        print(f"logs: {args.log_dir}", flush=True)
        while not stop["now"] and all(r.alive() for r in cluster.roles):
            time.sleep(0.5)
        for role in cluster.roles:
            if not role.alive():
                print(f"{role.name} exited (see {role.log_path}); stopping", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
