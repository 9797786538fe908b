"""A serving process freezes what start-up allocated, so full collections stay short."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CHILD = """
import gc
from backend.server import build_app
before = gc.get_freeze_count()
build_app()
print(before, gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_a_built_app_leaves_its_start_up_heap_to_the_permanent_generation(tmp_path: Path) -> None:
    # was: every object of the built platform (~220,000) stayed tracked, and each full collection
    # under load walked them all (long pauses in bench/turn_overhead.py's open loop)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOJODEX_", "OPENAI_", "REDIS_"))}
    env.update({
        "MOJODEX_EMBEDDED": "1",
        "MOJODEX_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}",
        "MOJODEX_LLM_BASE_URL": "http://127.0.0.1:9/v1",  # configured: no local model is started
        "MOJODEX_LLM_API_KEY": "test",
    })
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    before, frozen, still_tracked = (int(x) for x in done.stdout.split()[-3:])
    assert before == 0
    assert frozen > 50_000  # modules, Flask, SQLAlchemy, the platform
    assert still_tracked < frozen / 5  # what a full collection still walks
