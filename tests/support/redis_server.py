"""A private ``redis-server`` process a test can really kill and restart.

Bound to 127.0.0.1 on a free port, with no persistence (``--save "" --appendonly no``): a
restart comes back empty, as a production Redis without persistence does. The port stays the
same across restarts, so the clients of the processes under test reconnect to it.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis

from backend.cluster import free_port


class RedisServer:
    def __init__(self, log_dir: Path, port: int = 0) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH (apt-get install redis-server)")
        self._binary = binary
        self.port = port or free_port()
        self.log_path = log_dir / f"redis-{self.port}.log"
        self._dir = log_dir
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        self._dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [self._binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self._dir)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        client = redis.Redis(port=self.port, socket_timeout=1)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.log_path.read_text()[-2000:]}")
            try:
                if client.ping():
                    return self
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer in {timeout:.0f} s")

    def kill(self) -> None:
        """Kills it at once (SIGKILL): open connections drop, its data is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def restart(self, down_s: float = 0.0) -> None:
        self.kill()
        time.sleep(down_s)
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
