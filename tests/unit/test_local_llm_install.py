"""The local model's install pins: a build is reused only for the exact pins and flags, and an
installed version other than the pin is refused rather than trusted."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backend import local_llm, local_llm_install


def test_the_wheel_cache_key_changes_with_the_build_flags_and_version(monkeypatch):  # noqa: ANN001
    key = local_llm_install.cache_key()
    monkeypatch.setattr(local_llm_install, "CMAKE_ARGS", local_llm_install.CMAKE_ARGS + " -DGGML_AVX2=ON")
    assert local_llm_install.cache_key() != key
    monkeypatch.undo()
    monkeypatch.setattr(local_llm_install, "LLAMA_CPP_VERSION", "0.0.1")
    assert local_llm_install.cache_key() != key


def test_the_build_is_portable_and_minimal():
    flags = local_llm_install.CMAKE_ARGS.split()
    assert "-DGGML_NATIVE=OFF" in flags  # a natively tuned build crashed on its first completion
    assert "-DLLAVA_BUILD=OFF" in flags


@pytest.mark.parametrize("value,expected", [("", False), ("0", False), ("off", False), ("1", True), ("yes", True)])
def test_pip_no_cache_dir_turns_our_wheel_cache_off(monkeypatch, value, expected):  # noqa: ANN001
    monkeypatch.setenv("PIP_NO_CACHE_DIR", value)
    assert local_llm_install.no_cache() is expected


def test_an_installed_version_other_than_the_pin_is_refused(monkeypatch):  # noqa: ANN001
    real_version = importlib.metadata.version

    def version(name: str) -> str:
        return "0.3.2" if name == "llama_cpp_python" else real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(local_llm.importlib.util, "find_spec", lambda name: object())
    problem = local_llm.install_problem()
    assert problem is not None and "0.3.2" in problem and local_llm.LLAMA_CPP_VERSION in problem


def test_a_missing_install_says_how_to_install(monkeypatch):  # noqa: ANN001
    def version(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert "make local-llm" in local_llm.install_problem()


@pytest.mark.parametrize(
    "code,text", [(3, "exit status 3"), (-11, "exit status -11 (SIGSEGV)"), (None, "still running")]
)
def test_exit_statuses_are_named(code, text):  # noqa: ANN001
    assert local_llm.exit_description(code) == text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_model_server_dies_with_its_platform_process_even_mid_generation(tmp_path):
    # uvicorn finishes the request in flight on SIGTERM: a model server that got SIGTERM when its
    # worker was killed (Ctrl-C during a title job) generated on, orphaned, for over a minute.
    parent = subprocess.Popen([sys.executable, "-c", f"""
import subprocess, sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from backend.local_llm import _die_with_parent
busy = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
child = subprocess.Popen([sys.executable, "-c", busy], preexec_fn=_die_with_parent, stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, text=True)
    child_pid = 0
    try:
        child_pid = int(parent.stdout.readline())
        parent.kill()  # as gunicorn's master kills a worker past its graceful timeout
        parent.wait(10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _alive(child_pid):
            time.sleep(0.05)
        assert not _alive(child_pid), "the model server outlived its platform process"
    finally:
        parent.kill()
        if _alive(child_pid):
            os.kill(child_pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie is dead, not yet reaped
    except FileNotFoundError:
        return False


def test_stopping_the_model_server_does_not_wait_for_its_generation(tmp_path):
    # was: SIGTERM, then up to 10 s for uvicorn to finish the generation in flight (a title job
    # cancelled by the platform's exit): Ctrl-C of `make run` took that much longer
    busy = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
            "time.sleep(60)")
    server = local_llm.LocalModelServer(tmp_path / "model.gguf", log_file=tmp_path / "llm.log", watch=False)
    server.process = subprocess.Popen([sys.executable, "-c", busy], stdout=subprocess.PIPE, text=True)
    try:
        server.process.stdout.readline()
        started = time.monotonic()
        server.stop()
        assert server.process.poll() is not None
        assert time.monotonic() - started < local_llm.STOP_GRACE_S + 3
    finally:
        if server.process.poll() is None:
            server.process.kill()
