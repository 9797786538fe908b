"""Helpers for the foundation tests: the CLI on the suite's database, valid specs, the admin client."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from backend.cli import main as cli_main
from tests.support.live import TEST_TASK

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
SHARED_SPECS = REPO_ROOT.parent / "shared" / "data" / "mojodex_task_specs"
needs_shared_specs = pytest.mark.skipif(
    not SHARED_SPECS.is_dir(),
    reason=f"{SHARED_SPECS} is absent (the shared Mojodex specs come with ../shared)",
)

# Variables the platform reads: cleared from child environments so a developer's shell cannot leak in.
_PLATFORM_PREFIXES = ("MOJODEX_", "DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY")


def unique(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def valid_spec(name: str | None = None, **changes: Any) -> dict[str, Any]:
    """A valid instruct spec (the live server's test task) under a fresh name_for_system."""
    spec = copy.deepcopy(TEST_TASK)
    spec["name_for_system"] = name or unique()
    spec.update(changes)
    return spec


def follow_up(task_name: str) -> dict[str, Any]:
    """A predefined action starting ``task_name``."""
    return {"task_name": task_name, "displayed_data": [{"language_code": "en", "data": {"name": "Follow up"}}]}


def clean_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_PLATFORM_PREFIXES)}
    env.update(values)
    return env


def run_mojodex(args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    """The installed `mojodex` console script, in a child process."""
    return subprocess.run(
        [str(VENV_BIN / "mojodex"), *args],
        env=env,
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Cli:
    """`mojodex` in-process (click's CliRunner) with DATABASE_URL set to the suite's database."""

    def __init__(self, database_url: str, var_dir: Path) -> None:
        self.env = {"DATABASE_URL": database_url, "MOJODEX_VAR_DIR": str(var_dir)}

    def __call__(self, *args: str, **env: str) -> Result:
        runner = CliRunner()
        return runner.invoke(
            cli_main, [str(a) for a in args], env={**self.env, **env}, catch_exceptions=False
        )


@pytest.fixture
def cli(database_url: str, tmp_path: Path) -> Cli:
    return Cli(database_url, tmp_path / "var")
