"""The suite's own isolation: what one test leaves in the shared database must not reach another.

A message a unit test leaves `pending` used to be answered by the next server the suite started
(`resume_unfinished_turns` at start-up), which took the scripted LLM reply queued for that
server's own test: an order-dependent failure of whichever test came next (seen in the workflow
tests of a full `make test`). Test servers now leave other tests' messages alone
(`tests/support/live.py`: `resume_unfinished_turns` off). Reproduced here in a child pytest, in
the order that showed it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_unit_module_leaves_no_pending_message_for_the_next_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    # Its own SQLite database: a child on the suite's Postgres database would reset it under the parent.
    env.pop("TEST_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'run'}",
         "tests/unit/test_intake_seq.py", "tests/integration/test_failures.py::test_rate_limited_then_answered"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
