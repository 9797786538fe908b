"""Run a script in a new interpreter that gevent has patched first, as gunicorn's gevent worker
patches itself before it loads the app (patching the test process would change every test after it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PATCH = "from gevent import monkey\nmonkey.patch_all()\n"


def run_patched(body: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The finished run of ``body`` (dedented) after ``monkey.patch_all()``, with ``args`` as its
    sys.argv[1:]; it must exit 0 (its stderr is in the assertion otherwise)."""
    run = subprocess.run([sys.executable, "-c", PATCH + textwrap.dedent(body), *args], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return run
