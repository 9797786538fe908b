"""The platform as production runs it, for the benches: `mojodex serve` in a child process.

`mojodex serve` is the command `make run` ends with (gunicorn, one gevent worker of 1,000
connections, access log on, log level INFO); the compose file's backend runs the same worker.
The bench gives it its database, the scripted LLM's URL, a free port, a var/ directory of
its own and a message rate limit high enough for a load test; every other setting is the
production default. With no LLM URL (the order bench's deterministic turns) it runs the
deployed configuration with its secrets given, so that no local model is started.
`distributed=True` starts the scale-out topology instead (one backend and one Celery worker,
MOJODEX_RUNNER=celery, through backend.cluster.Cluster).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from backend.cluster import Cluster, Role, free_port
from bench._measure import process_cpu_s

REPO_ROOT = Path(__file__).resolve().parents[1]
# Settings that would change what runs (a configured Redis, another runner) are not inherited.
_NOT_INHERITED = ("REDIS_URL", "MOJODEX_RUNNER", "MOJODEX_LLM_API_KEY", "OPENAI_API_KEY", "MOJODEX_LOG_LEVEL",
                  "MOJODEX_TOKEN_COALESCE_MS")


def descendants(pid: int) -> list[int]:
    """pid and every process below it (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


class ProductionServer:
    """`mojodex serve` (embedded runner) or a 1 backend + 1 worker cluster, on this database."""

    def __init__(self, database_url: str, llm_base_url: str | None, var_dir: Path, *,
                 distributed: bool = False, redis_url: str | None = None, worker_threads: int = 4,
                 start_timeout_s: float = 90.0) -> None:
        self.var_dir = var_dir
        self.distributed = distributed
        env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED + ("MOJODEX_LLM_BASE_URL",)}
        env.update({
            "MOJODEX_VAR_DIR": str(var_dir),
            "DATABASE_URL": database_url,
            # The production limit is 30 messages a minute per user; a load test sends more.
            "MOJODEX_RATE_LIMIT_MESSAGES": "1000000/minute",
            "PYTHONUNBUFFERED": "1",
        })
        if llm_base_url is not None:
            env.update({
                "MOJODEX_EMBEDDED": "1",  # as `make run`: secrets kept in var/, CORS for the local web app
                "MOJODEX_LLM_BASE_URL": llm_base_url,
                "MOJODEX_LLM_API_KEY": "bench",
            })
        else:
            # No LLM: the embedded default would start the local model, so this is the deployed
            # configuration instead (secrets given), serving with no LLM at all.
            env.update({"MOJODEX_EMBEDDED": "0", "MOJODEX_ADMIN_SECRET": "bench-admin-secret-0123456789",
                        "MOJODEX_SECRET_KEY": "bench-secret-key-0123456789"})
        self.cluster: Cluster | None = None
        if distributed:
            if not redis_url:
                raise SystemExit("--distributed needs --redis-url (or TEST_REDIS_URL)")
            env["REDIS_URL"] = redis_url
            for name in _NOT_INHERITED + ("MOJODEX_LLM_BASE_URL",):
                os.environ.pop(name, None)  # Cluster merges os.environ under the env it is given
            self.cluster = Cluster(env=env, log_dir=var_dir / "cluster", backends=1, workers=1,
                                   worker_concurrency=worker_threads)
            backend = self.cluster.start_backend(1)
            self.cluster.start_worker(1)
            self.cluster.start_beat()
            self.cluster.wait_serving(backend, start_timeout_s)
            self.port = backend.port
            self.processes = [r.process for r in self.cluster.roles]
            self.log_path = backend.log_path
        else:
            self.port = free_port()
            env["MOJODEX_PORT"] = str(self.port)
            self.log_path = var_dir / "server.log"
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
            argv = [sys.executable, "-m", "backend.cli", "serve"]  # = `.venv/bin/mojodex serve`
            process = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
                                       start_new_session=True)
            self.processes = [process]
            try:
                Cluster.wait_serving(Role("mojodex serve", process, self.log_path, self.port), start_timeout_s)
            except BaseException:
                self.stop()  # no server left running behind a failed start
                raise

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pids(self) -> dict[str, list[int]]:
        """The platform's processes by role (gunicorn's master and worker count as one)."""
        if self.cluster is None:
            return {"platform": descendants(self.processes[0].pid)}
        return {role.name: descendants(role.process.pid) for role in self.cluster.roles}

    def cpu_s(self) -> dict[str, float]:
        return {name: sum(process_cpu_s(p) or 0.0 for p in pids) for name, pids in self.pids().items()}

    def worker_pid(self) -> int:
        """The process that serves requests (gunicorn's worker), for py-spy."""
        pids = self.pids()["platform" if self.cluster is None else "backend1"]
        return pids[-1]

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def problems(self, limit: int = 40) -> str:
        """The log lines that are not INFO (warnings, errors, tracebacks), last `limit` of them."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        keep = [line for line in lines if " INFO " not in line and '" 200 ' not in line and line.strip()]
        return "\n".join(keep[-limit:])

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            return
        process = self.processes[0]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        self._log.close()
